using System.Text;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using System.Text.Json.Nodes;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// A method the operator's service decides (<c>enhanced_authentication { methods, subject, timeout }</c>): each step
/// is a NATS request whose JSON body is
/// <c>{"client_id","method","step","data","remote","reauth","username"}</c> (<c>data</c> base64, absent when the
/// packet had none; <c>step</c> from 1; <c>username</c> only when the CONNECT had one) and whose reply is
/// <c>{"result":"continue","data":...}</c>, <c>{"result":"success","data":...,"user":...}</c> (<c>user</c>: the
/// configured core user, from the top-level <c>authorization</c> or <c>accounts</c> users, the client acts as; absent: the CONNECT's own credentials go to the core as without
/// enhanced authentication) or <c>{"result":"fail","reason_code":135}</c> (default 0x87 Not authorized).
/// No reply within the timeout, no responders, or a reply that is none of these: 0x87 Not authorized, logged as a
/// warning (the service is the operator's to fix; a refusal the service decides is only a debug line of the session).
/// </summary>
internal sealed class HookAuthExchange(EnhancedAuthHook hook, string method, EnhancedAuthContext context, IReadOnlyDictionary<string, string> users,
    ILogger log) : IEnhancedAuthExchange
{
    private int _step;

    public string Method => method;

    /// <summary>Why the last step failed (for the gateway's log).</summary>
    public string? Error { get; private set; }

    public async ValueTask<EnhancedAuthStep> StepAsync(byte[]? clientData, CancellationToken ct)
    {
        _step++;
        var request = new JsonObject
        {
            ["client_id"] = context.ClientId,
            ["method"] = method,
            ["step"] = _step,
            ["remote"] = context.Remote,
            ["reauth"] = context.Reauthentication,
        };
        if (clientData is not null) request["data"] = Convert.ToBase64String(clientData);
        if (context.Username is { } username) request["username"] = username;
        NatsReply reply;
        try
        {
            reply = await hook.RequestAsync(Encoding.UTF8.GetBytes(request.ToJsonString()), ct).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            return ServiceFault("the authentication service did not reply in time");
        }
        catch (Exception ex) when (ex is IOException or System.Net.Sockets.SocketException or ObjectDisposedException)
        {
            // ObjectDisposedException: the link ended (and was closed by its read loop) while this request used it.
            return ServiceFault("the authentication service is not reachable: " + ex.Message);
        }
        if (reply.NoResponders) return ServiceFault("no authentication service listens on the subject");
        try
        {
            return Decide(JsonNode.Parse(reply.Payload) as JsonObject);
        }
        catch (Exception ex) when (ex is JsonException or FormatException or InvalidOperationException)
        {
            return ServiceFault("the authentication service's reply is not valid: " + ex.Message);
        }
    }

    private EnhancedAuthStep Decide(JsonObject? reply)
    {
        if (reply is null) return ServiceFault("the authentication service's reply is not a JSON object");
        byte[]? data = reply["data"] is JsonValue d ? Convert.FromBase64String(d.GetValue<string>()) : null;
        switch (reply["result"]?.GetValue<string>())
        {
            case "continue":
                return EnhancedAuthStep.Continue(data ?? []);
            case "success":
                string? user = reply["user"]?.GetValue<string>();
                // Only a user of the config: the core applies an unknown no_auth_user name as none, and the client
                // would then be whoever a CONNECT without credentials becomes.
                if (user is not { Length: > 0 }) return EnhancedAuthStep.Success(data, EnhancedAuthIdentity.FromConnect);
                if (!users.TryGetValue(user, out var password)) return ServiceFault($"the authentication service named \"{user}\", not a configured user");
                // The core logs a no_auth_user in with its stored password, which for a bcrypt hash never matches
                // (nats-server's processClientOrLeafAuthentication does the same): refused here, with the reason logged.
                if (ScramCredentials.IsBcryptHash(password))
                    return ServiceFault($"the authentication service named \"{user}\", whose bcrypt password the core cannot log in as no_auth_user");
                return EnhancedAuthStep.Success(data, new EnhancedAuthIdentity(null, null, user));
            case "fail":
                int code = reply["reason_code"] is JsonValue c ? c.GetValue<int>() : EnhancedAuthStep.NotAuthorized;
                // A failure must be a failure code (0x80 and above) that CONNACK has (Table 3-6); DISCONNECT's own
                // table is smaller, and the session maps the rest to 0x87 there.
                if (code is < 0x80 or > 0xFF || !Enum.IsDefined((MqttConnectReasonCode)code)) code = EnhancedAuthStep.NotAuthorized;
                Error = "refused by the authentication service";
                return EnhancedAuthStep.Fail((byte)code);
            default:
                return ServiceFault("the authentication service's reply has no result continue, success or fail");
        }
    }

    private EnhancedAuthStep ServiceFault(string why)
    {
        Error = why;
        log.LogWarning("mqtt client {Id} ({Remote}): {Method} step {Step} refused: {Error}", context.ClientId, context.Remote, method, _step, why);
        return EnhancedAuthStep.Fail(EnhancedAuthStep.NotAuthorized);
    }
}
