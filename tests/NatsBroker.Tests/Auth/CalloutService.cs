using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Accounts;

namespace NatsBroker.Tests.Auth;

/// <summary>An authorization request as the service sees it (ADR-26): the server-signed JWT and its claims.</summary>
internal sealed record CalloutRequest(string Token, JsonElement Claims, bool Sealed)
{
    public JsonElement Nats => Claims.GetProperty("nats");
    public string UserNkey => Nats.GetProperty("user_nkey").GetString()!;
    public string ServerId => Nats.GetProperty("server_id").GetProperty("id").GetString()!;
    public string? User => Nats.GetProperty("connect_opts").TryGetProperty("user", out var u) ? u.GetString() : null;
    public string? Pass => Nats.GetProperty("connect_opts").TryGetProperty("pass", out var p) ? p.GetString() : null;

    /// <summary>Whether the JWT's signature verifies with its issuer (the server nkey).</summary>
    public bool SignatureVerifies()
    {
        var parts = Token.Split('.');
        var sig = Convert.FromBase64String(Pad(parts[2]));
        using var kp = KeyPair.FromPublicKey(Claims.GetProperty("iss").GetString()!);
        return kp.Verify(Encoding.ASCII.GetBytes(parts[0] + "." + parts[1]), sig);
    }

    public static CalloutRequest Parse(string token, bool sealedRequest)
    {
        var payload = Convert.FromBase64String(Pad(token.Split('.')[1]));
        return new CalloutRequest(token, JsonDocument.Parse(payload).RootElement.Clone(), sealedRequest);
    }

    private static string Pad(string s)
    {
        s = s.Replace('-', '+').Replace('_', '/');
        return s.PadRight(s.Length + (4 - s.Length % 4) % 4, '=');
    }
}

/// <summary>
/// An auth callout service written as a user would write one, with NATS.Net and NATS.NKeys: it subscribes to
/// <c>$SYS.REQ.USER.AUTH</c> as an auth_users user, opens sealed requests with its xkey, and answers with an
/// authorization response JWT signed by the issuer account key (<see cref="Allow"/>, <see cref="Deny"/>), or not at all.
/// </summary>
internal sealed class CalloutService : IAsyncDisposable
{
    private readonly NatsConnection _nc;
    private readonly INatsSub<byte[]> _sub;
    private readonly Task _loop;
    private readonly Func<CalloutService, CalloutRequest, byte[]?> _decide;

    private CalloutService(NatsConnection nc, INatsSub<byte[]> sub, KeyPair issuer, KeyPair? xkey, Func<CalloutService, CalloutRequest, byte[]?> decide)
    {
        _nc = nc;
        _sub = sub;
        Issuer = issuer;
        XKey = xkey;
        _decide = decide;
        _loop = Task.Run(ServeAsync);
    }

    public KeyPair Issuer { get; }
    public KeyPair? XKey { get; }
    /// <summary>Every request received, in order.</summary>
    public List<CalloutRequest> Requests { get; } = [];
    private readonly Lock _lock = new();

    public CalloutRequest[] Snapshot()
    {
        lock (_lock) return [.. Requests];
    }

    public static Task<CalloutService> StartAsync(string url, string user, string password, KeyPair issuer,
        Func<CalloutService, CalloutRequest, byte[]?> decide, KeyPair? xkey = null) =>
        StartAsync(url, new NatsAuthOpts { Username = user, Password = password }, issuer, decide, xkey);

    /// <summary>The service logged in with any credentials (a .creds file of an auth_users user in operator mode).</summary>
    public static async Task<CalloutService> StartAsync(string url, NatsAuthOpts auth, KeyPair issuer,
        Func<CalloutService, CalloutRequest, byte[]?> decide, KeyPair? xkey = null)
    {
        var nc = new NatsConnection(new NatsOpts { Url = url, AuthOpts = auth, Name = "callout-service" });
        await nc.ConnectAsync();
        var sub = await nc.SubscribeCoreAsync<byte[]>("$SYS.REQ.USER.AUTH");
        await nc.PingAsync();
        return new CalloutService(nc, sub, issuer, xkey, decide);
    }

    private async Task ServeAsync()
    {
        await foreach (var m in _sub.Msgs.ReadAllAsync())
        {
            byte[] data = m.Data ?? [];
            string? serverXKey = m.Headers is { } h && h.TryGetValue("Nats-Server-Xkey", out var v) ? v.ToString() : null;
            bool sealedRequest = serverXKey is not null;
            if (sealedRequest)
            {
                // nkeys xkeys.go Seal: "xkv1" version, 24-byte nonce, NaCl box.
                if (!data.AsSpan().StartsWith("xkv1"u8)) throw new InvalidDataException("sealed request without the xkv1 version prefix");
                data = XKey!.Open(data, serverXKey!);
            }
            var request = CalloutRequest.Parse(Encoding.ASCII.GetString(data), sealedRequest);
            lock (_lock) Requests.Add(request);
            var answer = _decide(this, request);
            if (answer is null) continue;
            if (sealedRequest) answer = XKey!.Seal(answer, serverXKey!);
            await m.ReplyAsync(answer);
        }
    }

    /// <summary>A user JWT for the request's user_nkey placed in <paramref name="account"/> (its <c>aud</c>), wrapped in a response.</summary>
    public byte[] Allow(CalloutRequest r, string account, JsonObject? user = null, string? name = null, long? exp = null, KeyPair? signer = null, string? subject = null)
    {
        var nats = user ?? [];
        nats["subs"] = -1;
        nats["data"] = -1;
        nats["payload"] = -1;
        string userJwt = JwtFactory.Encode(signer ?? Issuer, subject ?? r.UserNkey, "user", nats, exp: exp, name: name ?? "", aud: account);
        return Response(r, new JsonObject { ["jwt"] = userJwt });
    }

    /// <summary>A refusal with <paramref name="error"/>.</summary>
    public byte[] Deny(CalloutRequest r, string error) => Response(r, new JsonObject { ["error"] = error });

    /// <summary>An authorization response (sub = user_nkey, aud = server id) signed by <paramref name="signer"/> (default the issuer).</summary>
    public byte[] Response(CalloutRequest r, JsonObject nats, KeyPair? signer = null, string? audience = null) =>
        Encoding.ASCII.GetBytes(JwtFactory.Encode(signer ?? Issuer, r.UserNkey, "authorization_response", nats, name: "", aud: audience ?? r.ServerId));

    public async ValueTask DisposeAsync()
    {
        await _sub.DisposeAsync();
        await _loop;
        await _nc.DisposeAsync();
    }
}
