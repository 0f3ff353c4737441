using System.Buffers;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Logging;
using MQTTnet.Adapter;
using MQTTnet.Exceptions;
using MQTTnet.Formatter;
using MQTTnet.Packets;
using MQTTnet.Protocol;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.MqttGateway;

/// <summary>
/// One MQTT client (3.1.1 or 5), with nats-server's MQTT semantics (server/mqtt.go), on its own link to the core:
/// CONNECT becomes a NATS CONNECT (username/password → user/pass and token, the client ID as the connection name,
/// ADR-55 proxy fields), SUBSCRIBE becomes SUB (plus the parent-level SUB for <c>x/#</c>), PUBLISH becomes HPUB with
/// <c>Nmqtt-Pub</c>, and MSG/HMSG from the core become PUBLISH packets. Two loops: this one reads the client (with
/// the keep-alive deadline), the link's reads the core; both write to the client through <see cref="ClientOutput"/>.
/// The will is published when the connection ends without DISCONNECT (and not by a takeover).
/// </summary>
internal sealed partial class MqttSession : INatsDelivery
{
    private const int MaxPacketOverhead = 64 * 1024;

    private readonly Socket _socket;
    private readonly MqttOptions _options;
    private readonly CertificateSet? _certificates;
    private readonly GatewayEnvironment _link;
    private readonly ProxySigner _signer;
    private readonly SessionRegistry _registry;
    private readonly SessionSweeper? _sweeper;
    private readonly ILogger _log;
    private readonly IPEndPoint _remote;
    private readonly CancellationTokenSource _end = new();
    private Stream _client = null!;
    private ClientOutput _out = null!;
    private MqttPacketFormatterAdapter _codec = null!;
    private NatsLink? _nats;
    private string _clientId = "";
    private bool _v5;
    private MqttConnectPacket? _will;
    // This client's NATS CONNECT fields and proxy info, what the sweeper opens its account's link with
    // (RememberForSweep). The fields are kept as UTF-8 JSON, and only when there is a sweeper: a parsed tree is about
    // 1 KiB for the whole life of an idle session.
    private byte[]? _connectFieldsJson;
    private ProxiedClient? _proxiedClient;
    private volatile bool _takenOver;
    private Task? _coreLoop;
    /// <summary>The session was read for this connection (RestoreSessionAsync): from then on the connection's end ends it.</summary>
    private bool _sessionClaimed;

    public MqttSession(Socket socket, MqttOptions options, CertificateSet? certificates, GatewayEnvironment link, ProxySigner signer,
        SessionRegistry registry, ILogger log, SessionSweeper? sweeper = null, EnhancedAuth? enhancedAuth = null)
    {
        _sweeper = sweeper;
        _enhancedAuth = enhancedAuth;
        _socket = socket;
        _options = options;
        _certificates = certificates;
        _link = link;
        _signer = signer;
        _registry = registry;
        _log = log;
        _remote = (IPEndPoint)socket.RemoteEndPoint!;
    }

    private string RemoteIp => _remote.Address.IsIPv4MappedToIPv6 ? _remote.Address.MapToIPv4().ToString() : _remote.Address.ToString();

    /// <summary>Runs over the accepted socket (plain or TLS per the block).</summary>
    public async Task RunAsync(CancellationToken drain)
    {
        _socket.NoDelay = true;
        Stream stream = new NetworkStream(_socket, ownsSocket: true);
        try
        {
            if (_certificates is not null)
            {
                using var handshake = CancellationTokenSource.CreateLinkedTokenSource(drain);
                handshake.CancelAfter(_options.Tls!.Timeout);
                stream = await TlsAsync(stream, handshake.Token).ConfigureAwait(false);
            }
            await RunAsync(stream, drain).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException or AuthenticationException)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt closed: {Reason}", RemoteIp, _remote.Port, ex.Message);
        }
        finally
        {
            await stream.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>Runs one MQTT client over any stream (TCP, TLS, or WebSocket messages) until it ends.</summary>
    public async Task RunAsync(Stream client, CancellationToken drain)
    {
        _client = client;
        try
        {
            bool setupFailed = false, transportFailed = false;
            try
            {
                if (!await ConnectAsync(drain).ConfigureAwait(false)) return;
            }
            catch (Exception ex) when (_sessionClaimed && (IsConnectionFault(ex) || ex is OperationCanceledException))
            {
                // The session was already read (and maybe resumed) for this connection: it still ends as any other
                // connection's does, or a session not to be kept would stay stored and a kept one never get its expiry.
                _log.LogWarning("{Ip}:{Port} - mqtt client {Id}: connection failed after its session was restored: {Reason}", RemoteIp, _remote.Port, _clientId, ex.Message);
                setupFailed = true;
                transportFailed = ex is IOException or SocketException;
            }
            var fromCore = _coreLoop!;
            bool graceful = false;
            try
            {
                if (!setupFailed) graceful = await ClientLoopAsync(drain).ConfigureAwait(false);
            }
            catch (Exception ex) when (IsConnectionFault(ex))
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id} closed: {Reason}", RemoteIp, _remote.Port, _clientId, ex.Message);
                transportFailed = ex is IOException or SocketException;
            }
            // The Session Expiry Interval counts from the close of the network connection (MQTT 5 section
            // 3.1.2.11.2), not from when this process gets to write the record after stopping deliveries.
            long closedAt = DateTimeOffset.UtcNow.ToUnixTimeMilliseconds();
            // Not after a protocol error: the input is not at a packet boundary there.
            if (transportFailed) graceful = await DisconnectAlreadySentAsync().ConfigureAwait(false);
            // The link stays up for the session's last records and the will; a takeover hands both to the new connection.
            await LingerAsync().ConfigureAwait(false);
            bool killed;
            lock (_phaseLock)
            {
                _clientGone = true;
                killed = _killedByTakeover;
            }
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id} ended (DISCONNECT: {Graceful}, taken over: {Killed})", RemoteIp, _remote.Port, _clientId, graceful, killed);
            // A connection ended by a takeover leaves the session to its successor; one that ended by itself finishes
            // the session's last records first (a successor waits for them: SessionSettledAsync).
            if (!killed) await EndConnectionAsync(graceful, closedAt, drain).ConfigureAwait(false);
            await _end.CancelAsync().ConfigureAwait(false);
            _nats!.ShutdownSend();
            await Task.WhenAny(fromCore, Task.Delay(TimeSpan.FromSeconds(5), CancellationToken.None)).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException
            or MqttProtocolViolationException or InvalidDataException or TimeoutException or JetStreamException)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id} closed: {Reason}", RemoteIp, _remote.Port, _clientId, ex.Message);
        }
        finally
        {
            _sessionSettled.TrySetResult();
            if (!_end.IsCancellationRequested) await _end.CancelAsync().ConfigureAwait(false);
            if (_clientId.Length > 0)
            {
                ParkInflight();
                _registry.Unregister(_clientId, this);
            }
            if (_nats is not null) await _nats.DisposeAsync().ConfigureAwait(false);
            _out?.Dispose();
        }
    }

    /// <summary>How a connection ends other than by its client's DISCONNECT: the socket, the protocol, or the core.</summary>
    private static bool IsConnectionFault(Exception ex) => ex is IOException or SocketException or ObjectDisposedException
        or MqttProtocolViolationException or InvalidDataException or TimeoutException or JetStreamException;

    private async Task<Stream> TlsAsync(Stream plain, CancellationToken ct)
    {
        var ssl = new SslStream(plain, leaveInnerStreamOpen: false);
        var auth = await _certificates!.ServerAuthenticationAsync().ConfigureAwait(false);
        await ssl.AuthenticateAsServerAsync(auth, ct).ConfigureAwait(false);
        return ssl;
    }

    /// <summary>
    /// CONNECT → checks as nats-server's mqttParseConnect makes them → the link's CONNECT → CONNACK.
    /// False when the connection is to be closed (any CONNACK refusal already sent).
    /// </summary>
    private async Task<bool> ConnectAsync(CancellationToken drain)
    {
        var reader = new PacketReader(_client, _options.MaxPayload + MaxPacketOverhead);
        _reader = reader;
        ReceivedMqttPacket? first;
        using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(drain))
        {
            timeout.CancelAfter(_options.ConnectTimeout);
            try
            {
                first = await reader.ReadAsync(timeout.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (!drain.IsCancellationRequested)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt: no CONNECT in time", RemoteIp, _remote.Port);
                return false;
            }
        }
        if (first is not { } firstPacket || firstPacket.FixedHeader >> 4 != (int)MqttControlPacketType.Connect) return false;
        var body = firstPacket.Body.AsSpan();
        // Protocol name and level ([MQTT-3.1.2-1], [MQTT-3.1.2-2]); "MQIsdp" (3.1) is closed without CONNACK as nats-server does.
        if (body.Length < 7 || !body[2..6].SequenceEqual("MQTT"u8) || body[0] != 0 || body[1] != 4) return false;
        byte level = body[6];
        if (level is not (4 or 5))
        {
            await _client.WriteAsync(new byte[] { 0x20, 2, 0, 1 }, drain).ConfigureAwait(false); // unacceptable protocol version
            return false;
        }
        _v5 = level == 5;
        var version = _v5 ? MqttProtocolVersion.V500 : MqttProtocolVersion.V311;
        // MQTTnet's encode buffer grows to the largest packet sent (kept up to 64 KiB): an idle session holds 256 bytes.
        _codec = new MqttPacketFormatterAdapter(version, new MqttBufferWriter(256, 64 * 1024));
        _out = new ClientOutput(_client, _codec, _v5);
        // What MQTTnet's decoder lets through (a will QoS of 3, a password without a user name, reserved flags,
        // ill-formed UTF-8): checked on the raw bytes first (PacketChecks).
        switch (PacketChecks.CheckConnect(body, _v5, out var refusal))
        {
            case PacketChecks.ConnectVerdict.Close:
                _log.LogDebug("{Ip}:{Port} - mqtt: malformed CONNECT", RemoteIp, _remote.Port);
                return false;
            case PacketChecks.ConnectVerdict.Refuse:
                _log.LogDebug("{Ip}:{Port} - mqtt: CONNECT refused: {Reason}", RemoteIp, _remote.Port, refusal);
                await RefuseAsync(refusal, drain).ConfigureAwait(false);
                return false;
        }
        var connect = (MqttConnectPacket)_codec.Decode(firstPacket);
        reader.Codec = _codec;

        // [MQTT-3.1.3-7] / [MQTT-3.1.3-6]: an empty client ID needs a clean session, then the server assigns one.
        string clientId = connect.ClientId ?? "";
        bool assigned = false;
        if (clientId.Length == 0)
        {
            if (!connect.CleanSession && !_v5)
            {
                await RefuseAsync(MqttConnectReasonCode.ClientIdentifierNotValid, drain).ConfigureAwait(false);
                return false;
            }
            clientId = Guid.NewGuid().ToString("N");
            assigned = true;
        }
        else if (clientId.Contains('\0', StringComparison.Ordinal))
        {
            // [MQTT-1.5.3-2]: a UTF-8 string must not contain U+0000. Anything else is a valid client ID
            // ([MQTT-3.1.3-5] lets a server accept more than the minimum), as nats-server 2.9.10 and Mosquitto accept
            // it. nats-server since 2026-03 refuses IDs that are not valid NATS names because its session subjects
            // contain the ID; ours never puts the ID in a subject (sessions are stored under its SHA-256, durables have
            // random names), so "clean retained" (paho.mqtt.testing's cleanup client) is accepted.
            await RefuseAsync(MqttConnectReasonCode.ClientIdentifierNotValid, drain).ConfigureAwait(false);
            return false;
        }
        if (connect.WillFlag)
        {
            if (string.IsNullOrEmpty(connect.WillTopic) || TopicMapping.TopicToSubject(connect.WillTopic) is null) return false;
            _will = connect;
        }
        // MQTT 5 section 4.12: a CONNECT naming an authentication method is authenticated by it (MqttSession.EnhancedAuth.cs),
        // which then stands for the block's own user/token check.
        bool enhanced = _v5 && (!string.IsNullOrEmpty(connect.AuthenticationMethod) || connect.AuthenticationData is not null);
        if (enhanced && !await AuthenticateAsync(connect, clientId, drain).ConfigureAwait(false)) return false;
        if (!enhanced && !GatewayAuthorized(connect))
        {
            await RefuseAsync(MqttConnectReasonCode.NotAuthorized, drain).ConfigureAwait(false);
            return false;
        }
        _keepAlive = connect.KeepAlivePeriod;
        _clientId = clientId;
        _sourceId = SessionHash(clientId);
        _sourceTag = Encoding.ASCII.GetBytes(_sourceId);

        CoreLink core;
        try
        {
            core = await CoreLink.ConnectAsync(_link.CoreSocket, drain).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException)
        {
            _log.LogError("{Ip}:{Port} - the core is not reachable: {Error}", RemoteIp, _remote.Port, ex.Message);
            await RefuseAsync(MqttConnectReasonCode.ServerUnavailable, drain).ConfigureAwait(false);
            return false;
        }
        _nats = new NatsLink(core);
        var connectFields = ConnectFields(connect);
        if (_sweeper is not null) _connectFieldsJson = JsonSerializer.SerializeToUtf8Bytes(connectFields, MqttJsonContext.Default.JsonObject);
        _proxiedClient = ProxiedClientInfo();
        string? error = await _nats.ConnectAsync(SignedConnect(connectFields, _proxiedClient, _signer, core), drain).ConfigureAwait(false);
        core.ReleaseInfo();
        if (error is not null)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id} refused by the core: {Error}", RemoteIp, _remote.Port, clientId, error);
            await RefuseAsync(error.Contains("Authorization", StringComparison.OrdinalIgnoreCase)
                ? MqttConnectReasonCode.NotAuthorized : MqttConnectReasonCode.ServerUnavailable, drain).ConfigureAwait(false);
            return false;
        }

        // The link's reads start now: session restore and stream checks are requests over it.
        _coreLoop = Task.Run(() => CoreLoopAsync(), CancellationToken.None);
        if (_registry.Register(clientId, this) is { } previous)
        {
            _log.LogWarning("Replacing old client {Old} since both have the same client ID \"{Id}\"", previous.Describe(), clientId);
            previous.TakeOver();
            await previous.SessionSettledAsync(_options.SessionEndTimeout).ConfigureAwait(false);
        }
        // A connection to another gateway process with this client ID is taken over too (MqttSession.Takeover.cs).
        await AnnounceClientIdAsync(drain).ConfigureAwait(false);
        // The sweeper may be deleting this client ID's expired session right now: wait until it is done (SessionSweeper).
        await _registry.SweepOf(clientId).WaitAsync(drain).ConfigureAwait(false);
        bool sessionPresent = await RestoreSessionAsync(connect, drain).ConfigureAwait(false);
        _sessionClaimed = true;
        if (_v5)
        {
            // MQTT 5 section 3.2.2.3.14: the server may shorten the keep-alive; the client then uses this value.
            ushort? serverKeepAlive = null;
            if (_options.MaxKeepAlive > 0 && (_keepAlive == 0 || _keepAlive > _options.MaxKeepAlive))
            {
                serverKeepAlive = _options.MaxKeepAlive;
                _keepAlive = _options.MaxKeepAlive;
            }
            await _out.SendAsync(new MqttConnAckPacket
            {
                ReasonCode = MqttConnectReasonCode.Success,
                IsSessionPresent = sessionPresent,
                AssignedClientIdentifier = assigned ? clientId : null,
                TopicAliasMaximum = TopicAliasMaximum,
                RetainAvailable = true,
                WildcardSubscriptionAvailable = true,
                SharedSubscriptionAvailable = true,
                SubscriptionIdentifiersAvailable = true,
                MaximumQoS = MqttQualityOfServiceLevel.ExactlyOnce,
                ReceiveMaximum = ReceiveMaximum,
                ServerKeepAlive = serverKeepAlive ?? 0,
                AuthenticationMethod = _authMethod,
                AuthenticationData = _connAckAuthData,
            }, drain).ConfigureAwait(false);
        }
        else
        {
            await _out.SendRawAsync(new byte[] { 0x20, 2, (byte)(sessionPresent ? 1 : 0), 0 }, drain).ConfigureAwait(false);
        }
        if (_v5)
        {
            _clientReceiveMaximum = connect.ReceiveMaximum == 0 ? ushort.MaxValue : connect.ReceiveMaximum;
            _clientMaxPacketSize = connect.MaximumPacketSize == 0 ? uint.MaxValue : connect.MaximumPacketSize;
            _out.UseTopicAliases(connect.TopicAliasMaximum);
        }
        await AfterConnAckAsync(drain).ConfigureAwait(false);
        return true;
    }

    /// <summary>nats-server's <c>mqtt { authorization }</c> override: the one user (or token) MQTT clients must present.</summary>
    private bool GatewayAuthorized(MqttConnectPacket connect)
    {
        string password = connect.Password is null ? "" : Encoding.UTF8.GetString(connect.Password);
        if (_options.AuthToken is { } token) return password == token;
        if (_options.AuthUser is { } user) return connect.Username == user && password == (_options.AuthPassword ?? "");
        return true;
    }

    /// <summary>The NATS CONNECT fields for this MQTT client (server/mqtt.go: the password is also the token).</summary>
    private JsonObject ConnectFields(MqttConnectPacket connect)
    {
        var obj = CoreConnectFields.Create(_clientId);
        // With the block's own authorization the MQTT credentials were checked here; the core sees no credentials.
        if (_options.AuthUser is null && _options.AuthToken is null)
        {
            if (!string.IsNullOrEmpty(connect.Username)) obj["user"] = connect.Username;
            if (connect.Password is { Length: > 0 } pw)
            {
                string password = Encoding.UTF8.GetString(pw);
                obj["pass"] = password;
                obj["auth_token"] = password;
            }
        }
        return obj;
    }

    /// <summary>What the core is told about the end user (ADR-55 proxy, our <see cref="ProxiedClient"/>).</summary>
    private ProxiedClient ProxiedClientInfo()
    {
        var client = new ProxiedClient
        {
            Gateway = "mqtt",
            Ip = RemoteIp,
            Port = _remote.Port,
            NoAuthUser = LinkNoAuthUser,
        };
        if (_client is SslStream ssl)
        {
            client.TlsVersion = ssl.SslProtocol == SslProtocols.Tls13 ? "1.3" : "1.2";
            client.TlsCipherSuite = GoCipherSuites.Name(ssl.NegotiatedCipherSuite);
        }
        return client;
    }

    /// <summary>The CONNECT line with the proxy signature of this link's nonce.</summary>
    internal static byte[] SignedConnect(JsonObject fields, ProxiedClient client, ProxySigner signer, CoreLink core)
    {
        string json = fields.ToJsonString();
        return CoreLink.RewriteConnect(Encoding.UTF8.GetBytes("CONNECT " + json), signer, core.Nonce, client) ?? Encoding.UTF8.GetBytes("CONNECT " + json + "\r\n");
    }

    private async Task RefuseAsync(MqttConnectReasonCode reason, CancellationToken ct)
    {
        if (_v5)
        {
            await _out.SendAsync(new MqttConnAckPacket { ReasonCode = reason }, ct).ConfigureAwait(false);
            return;
        }
        // MQTT 3.1.1 return codes (section 3.2.2.3).
        byte rc = reason switch
        {
            MqttConnectReasonCode.UnsupportedProtocolVersion => 1,
            MqttConnectReasonCode.ClientIdentifierNotValid => 2,
            MqttConnectReasonCode.ServerUnavailable => 3,
            MqttConnectReasonCode.BadUserNameOrPassword => 4,
            _ => 5,
        };
        await _client.WriteAsync(new byte[] { 0x20, 2, 0, rc }, ct).ConfigureAwait(false);
    }

    public string Describe() => $"{RemoteIp}:{_remote.Port}";

    private readonly Lock _phaseLock = new();
    private bool _clientGone, _killedByTakeover;
    private readonly CancellationTokenSource _willCancel = new();
    private readonly TaskCompletionSource _sessionSettled = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>
    /// Another connection took this client ID. Still connected: closed without the will ([MQTT-3.1.4-2]). Already
    /// gone: its delayed will is cancelled ([MQTT-3.1.3-9]) and it finishes the session's records undisturbed.
    /// </summary>
    public void TakeOver()
    {
        bool kill;
        lock (_phaseLock)
        {
            _takenOver = true;
            kill = !_clientGone;
            _killedByTakeover = kill;
        }
        try
        {
            if (kill)
            {
                _end.Cancel();
                _socket.Dispose();
            }
            else
            {
                _willCancel.Cancel();
            }
        }
        catch (ObjectDisposedException)
        {
        }
    }

    /// <summary>Completes when this connection no longer touches the stored session (or after <paramref name="limit"/>).</summary>
    public async Task SessionSettledAsync(TimeSpan limit) =>
        await Task.WhenAny(_sessionSettled.Task, Task.Delay(limit, CancellationToken.None)).ConfigureAwait(false);

    /// <summary>Reads from the core until it closes the link, then closes the client.</summary>
    private async Task CoreLoopAsync()
    {
        try
        {
            await _nats!.RunAsync(this, _end.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException or MqttProtocolViolationException)
        {
            _log.LogDebug("{Ip}:{Port} - link of {Id} ended: {Reason}", RemoteIp, _remote.Port, _clientId, ex.Message);
        }
        finally
        {
            // The core is gone or closed this user (e.g. -ERR): the MQTT client is closed too.
            if (!_end.IsCancellationRequested)
            {
                if (_nats!.LastError is { } err) _log.LogDebug("{Ip}:{Port} - core closed {Id}: {Error}", RemoteIp, _remote.Port, _clientId, err);
                try { _socket.Shutdown(SocketShutdown.Both); }
                catch (Exception e) when (e is SocketException or ObjectDisposedException) { }
                _end.Cancel();
            }
        }
    }
}
