using System.Text;
using Microsoft.Extensions.Logging;
using MQTTnet.Adapter;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// MQTT 5 enhanced authentication (section 4.12, AUTH packet section 3.15) for this session: the exchange between
/// CONNECT and CONNACK, and re-authentication (AUTH 0x19) after it. The methods are <see cref="EnhancedAuth"/>'s.
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>AUTH rounds one exchange may take before it is refused (SCRAM takes one; a hook method a few).</summary>
    private const int MaxAuthRounds = 16;

    private readonly EnhancedAuth? _enhancedAuth;
    /// <summary>The method this connection authenticated with at CONNECT; null without enhanced authentication.</summary>
    private string? _authMethod;
    /// <summary>The method's last data, carried by the success CONNACK (section 3.2.2.3.18).</summary>
    private byte[]? _connAckAuthData;
    private EnhancedAuthIdentity? _authIdentity;
    /// <summary>A re-authentication in progress (client AUTH 0x19 received, not yet ended).</summary>
    private IEnhancedAuthExchange? _reauth;
    private int _reauthRounds;

    /// <summary>
    /// CONNECT named an authentication method (or carried Authentication Data without one: 0x82): runs its exchange (server AUTH 0x18 / client AUTH 0x18 rounds). True
    /// once authenticated: <paramref name="connect"/> then carries the credentials the link logs in with. False when
    /// refused (CONNACK with the reason sent) or the client left. Per [MQTT-3.14.0-1] no DISCONNECT is sent before a
    /// success CONNACK, so a packet other than AUTH during the exchange gets CONNACK 0x82 Protocol Error
    /// ([MQTT-3.1.2-30]: with a method, only AUTH or DISCONNECT may come before CONNACK), as does an AUTH naming another method
    /// ([MQTT-4.12.0-5]) or with another reason than 0x18.
    /// </summary>
    private async Task<bool> AuthenticateAsync(MqttConnectPacket connect, string clientId, CancellationToken drain)
    {
        string method = connect.AuthenticationMethod;
        if (string.IsNullOrEmpty(method))
        {
            // Section 3.1.2.11.10: Authentication Data without an Authentication Method is a protocol error.
            await RefuseAsync(MqttConnectReasonCode.ProtocolError, drain).ConfigureAwait(false);
            return false;
        }
        var exchange = _enhancedAuth?.Begin(method, new EnhancedAuthContext(clientId, Describe(), connect.Username, Reauthentication: false));
        if (exchange is null)
        {
            // [MQTT-4.12.0-1]: a method the server does not support is refused with 0x8C (or 0x87) and the connection closed.
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: authentication method \"{Method}\" not supported", RemoteIp, _remote.Port, clientId, method);
            await RefuseAsync(MqttConnectReasonCode.BadAuthenticationMethod, drain).ConfigureAwait(false);
            return false;
        }
        byte[]? data = connect.AuthenticationData;
        for (int round = 0; ; round++)
        {
            var step = await exchange.StepAsync(data, drain).ConfigureAwait(false);
            if (step.Outcome == EnhancedAuthOutcome.Success)
            {
                _authMethod = method;
                _connAckAuthData = step.Data;
                _authIdentity = step.Identity!;
                UseIdentity(connect, _authIdentity);
                return true;
            }
            if (step.Outcome == EnhancedAuthOutcome.Fail || round == MaxAuthRounds)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: {Method} authentication failed: {Error}", RemoteIp, _remote.Port, clientId, method,
                    exchange.Error ?? "too many rounds");
                await RefuseAsync(step.Outcome == EnhancedAuthOutcome.Fail ? (MqttConnectReasonCode)step.Reason : MqttConnectReasonCode.NotAuthorized, drain)
                    .ConfigureAwait(false);
                return false;
            }
            await _out.SendAsync(new MqttAuthPacket
            {
                ReasonCode = MqttAuthenticateReasonCode.ContinueAuthentication,
                AuthenticationMethod = method,
                AuthenticationData = step.Data,
            }, drain).ConfigureAwait(false);

            ReceivedMqttPacket? next;
            using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(drain))
            {
                // Each answer within the CONNECT timeout (authorization { timeout }), as the CONNECT itself.
                timeout.CancelAfter(_options.ConnectTimeout);
                try
                {
                    next = await _reader.ReadAsync(timeout.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException) when (!drain.IsCancellationRequested)
                {
                    _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: no AUTH in time", RemoteIp, _remote.Port, clientId);
                    await RefuseAsync(MqttConnectReasonCode.NotAuthorized, drain).ConfigureAwait(false);
                    return false;
                }
            }
            if (next is not { } packet) return false;
            var type = (MqttControlPacketType)(packet.FixedHeader >> 4);
            if (type == MqttControlPacketType.Disconnect) return false;
            if (type != MqttControlPacketType.Auth)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: {Type} during authentication", RemoteIp, _remote.Port, clientId, type);
                await RefuseAsync(MqttConnectReasonCode.ProtocolError, drain).ConfigureAwait(false);
                return false;
            }
            var auth = (MqttAuthPacket)_codec.Decode(packet);
            if (auth.ReasonCode != MqttAuthenticateReasonCode.ContinueAuthentication || auth.AuthenticationMethod != method)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: AUTH {Reason} with method \"{Method}\" during {Expected} authentication", RemoteIp, _remote.Port,
                    clientId, auth.ReasonCode, auth.AuthenticationMethod, method);
                await RefuseAsync(MqttConnectReasonCode.ProtocolError, drain).ConfigureAwait(false);
                return false;
            }
            data = auth.AuthenticationData;
        }
    }

    /// <summary>How the link logs in after the exchange: as the username/password CONNECT of that user, or as the named user.</summary>
    private static void UseIdentity(MqttConnectPacket connect, EnhancedAuthIdentity identity)
    {
        if (identity.User is { } user)
        {
            connect.Username = user;
            connect.Password = Encoding.UTF8.GetBytes(identity.Password ?? "");
        }
        else if (identity.ActAs is not null)
        {
            connect.Username = null;
            connect.Password = null;
        }
    }

    /// <summary>The no_auth_user the core applies to this link: the hook's named user, else the block's.</summary>
    private string? LinkNoAuthUser => _authIdentity?.ActAs ?? _options.NoAuthUser;

    /// <summary>
    /// An AUTH packet after CONNACK. Without enhanced authentication at CONNECT it is a protocol error (0x82, [MQTT-4.12.0-7]).
    /// Otherwise re-authentication (section 4.12.1): AUTH 0x19 starts it with the CONNECT's method ([MQTT-4.12.1-1];
    /// another method is a protocol error), AUTH 0x18 continues it; the server answers AUTH 0x18 until it ends with
    /// AUTH 0x00 Success, or with DISCONNECT 0x87 Not authorized on failure ([MQTT-4.12.1-2]; DISCONNECT has no 0x8C,
    /// Table 3-10, so a method's 0x8C becomes 0x87). It must prove the same identity: the link to the core keeps the
    /// user it logged in as. Other packets go on between the AUTH packets (section 4.12.1 lets both sides keep sending
    /// them); a step handled here holds the read loop while it runs (a hook step at most its timeout).
    /// False when the connection is to be closed (the DISCONNECT already sent).
    /// </summary>
    private async Task<bool> OnAuthAsync(ReceivedMqttPacket packet, CancellationToken ct)
    {
        if (_authMethod is null || _enhancedAuth is null)
        {
            await SendDisconnectAsync(MqttDisconnectReasonCode.ProtocolError, ct).ConfigureAwait(false);
            return false;
        }
        var auth = (MqttAuthPacket)_codec.Decode(packet);
        bool protocolError = auth.AuthenticationMethod != _authMethod
            || (auth.ReasonCode == MqttAuthenticateReasonCode.ReAuthenticate && _reauth is not null)
            || (auth.ReasonCode == MqttAuthenticateReasonCode.ContinueAuthentication && _reauth is null)
            || auth.ReasonCode == MqttAuthenticateReasonCode.Success;
        if (protocolError)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: AUTH {Reason} with method \"{Method}\" (authenticated with \"{Expected}\", re-authenticating: {Busy})",
                RemoteIp, _remote.Port, _clientId, auth.ReasonCode, auth.AuthenticationMethod, _authMethod, _reauth is not null);
            await SendDisconnectAsync(MqttDisconnectReasonCode.ProtocolError, ct).ConfigureAwait(false);
            return false;
        }
        if (auth.ReasonCode == MqttAuthenticateReasonCode.ReAuthenticate)
        {
            _reauth = _enhancedAuth.Begin(_authMethod, new EnhancedAuthContext(_clientId, Describe(), _authIdentity?.Name, Reauthentication: true));
            _reauthRounds = 0;
            if (_reauth is null)
            {
                await SendDisconnectAsync(MqttDisconnectReasonCode.NotAuthorized, ct).ConfigureAwait(false);
                return false;
            }
        }
        var exchange = _reauth!;
        var step = await exchange.StepAsync(auth.AuthenticationData, ct).ConfigureAwait(false);
        if (step.Outcome == EnhancedAuthOutcome.Continue && ++_reauthRounds <= MaxAuthRounds)
        {
            await _out.SendAsync(new MqttAuthPacket
            {
                ReasonCode = MqttAuthenticateReasonCode.ContinueAuthentication,
                AuthenticationMethod = _authMethod,
                AuthenticationData = step.Data,
            }, ct).ConfigureAwait(false);
            return true;
        }
        _reauth = null;
        if (step.Outcome == EnhancedAuthOutcome.Success && step.Identity!.Name == _authIdentity!.Name)
        {
            await _out.SendAsync(new MqttAuthPacket
            {
                ReasonCode = MqttAuthenticateReasonCode.Success,
                AuthenticationMethod = _authMethod,
                AuthenticationData = step.Data,
            }, ct).ConfigureAwait(false);
            return true;
        }
        string why = step.Outcome switch
        {
            EnhancedAuthOutcome.Success => $"proved \"{step.Identity!.Name}\", connected as \"{_authIdentity!.Name}\"",
            EnhancedAuthOutcome.Continue => "too many rounds",
            _ => exchange.Error ?? "refused",
        };
        _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: re-authentication failed: {Error}", RemoteIp, _remote.Port, _clientId, why);
        var reason = step.Outcome == EnhancedAuthOutcome.Fail && Enum.IsDefined((MqttDisconnectReasonCode)step.Reason)
            ? (MqttDisconnectReasonCode)step.Reason
            : MqttDisconnectReasonCode.NotAuthorized;
        await SendDisconnectAsync(reason, ct).ConfigureAwait(false);
        return false;
    }
}
