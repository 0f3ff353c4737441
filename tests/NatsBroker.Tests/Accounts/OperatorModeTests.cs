using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// Operator mode with the MEMORY resolver, against both servers: JWTs made here with NATS.NKeys (no nsc), clients
/// connecting with .creds files (NATS.Net) and raw CONNECT {"jwt","sig"}; every refusal is nats-server's
/// Authorization Violation followed by a close.
/// </summary>
public sealed class OperatorModeTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Sys = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair A = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair ASigner = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair B = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Limited = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Unknown = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Alice = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Bob = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Revoked = KeyPair.CreatePair(PrefixByte.User);
    private static readonly long Now = DateTimeOffset.UtcNow.ToUnixTimeSeconds();

    private static readonly string Config = BuildConfig();

    private static string BuildConfig()
    {
        string op = JwtFactory.Operator(Op, Sys.GetPublicKey());
        string sys = JwtFactory.Account(Op, Sys, name: "SYS");
        string a = JwtFactory.Account(Op, A, new JsonObject
        {
            ["signing_keys"] = new JsonArray(ASigner.GetPublicKey()),
            ["revocations"] = new JsonObject { [Revoked.GetPublicKey()] = Now + 5 },
        }, name: "A");
        string b = JwtFactory.Account(Op, B, name: "B");
        string limited = JwtFactory.Account(Op, Limited, new JsonObject
        {
            ["limits"] = new JsonObject { ["subs"] = -1, ["data"] = -1, ["payload"] = -1, ["imports"] = -1, ["exports"] = -1, ["wildcards"] = true, ["conn"] = 1, ["leaf"] = -1 },
        }, name: "L");
        return $$"""
            operator: {{op}}
            system_account: {{Sys.GetPublicKey()}}
            resolver: MEMORY
            resolver_preload: {
              {{Sys.GetPublicKey()}}: {{sys}}
              {{A.GetPublicKey()}}: {{a}}
              {{B.GetPublicKey()}}: {{b}}
              {{Limited.GetPublicKey()}}: {{limited}}
            }
            """;
    }

    private static string ConnectJson(string? jwt, string? sig) =>
        new JsonObject { ["verbose"] = false, ["pedantic"] = false, ["jwt"] = jwt, ["sig"] = sig }.ToJsonString();

    /// <summary>Connects with a user JWT and the nonce signed by <paramref name="signer"/> (none: no sig).</summary>
    private static async Task<RawClient> ConnectJwt(ServerProcess s, string? jwt, KeyPair? signer)
    {
        var c = await RawClient.ConnectAsync(s);
        var info = await c.ReadInfoAsync();
        string nonce = info.GetProperty("nonce").GetString()!;
        await c.SendLineAsync("CONNECT " + ConnectJson(jwt, signer is null ? null : JwtFactory.SignNonce(signer, nonce)));
        return c;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Creds_file_clients_talk_inside_their_account_only(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        string dir = Directory.CreateTempSubdirectory("creds").FullName;
        try
        {
            string aliceCreds = Path.Combine(dir, "alice.creds");
            string bobCreds = Path.Combine(dir, "bob.creds");
            await File.WriteAllTextAsync(aliceCreds, JwtFactory.Creds(JwtFactory.User(A, Alice), Alice));
            await File.WriteAllTextAsync(bobCreds, JwtFactory.Creds(JwtFactory.User(B, Bob), Bob));
            await using var alice = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { CredsFile = aliceCreds } });
            await using var alice2 = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { CredsFile = aliceCreds } });
            await using var bob = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { CredsFile = bobCreds } });
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
            var sub = await alice.SubscribeCoreAsync<string>("greet", cancellationToken: cts.Token);
            await alice.PingAsync(cts.Token);
            await bob.PublishAsync("greet", "from-b", cancellationToken: cts.Token);
            await bob.PingAsync(cts.Token);
            await alice2.PublishAsync("greet", "from-a", cancellationToken: cts.Token);
            var first = await sub.Msgs.ReadAsync(cts.Token);
            Assert.Equal("from-a", first.Data);
            await sub.DisposeAsync();
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    public static IEnumerable<object[]> Refusals()
    {
        var stranger = KeyPair.CreatePair(PrefixByte.User);
        string good = JwtFactory.User(A, Alice);
        var parts = good.Split('.');
        string tampered = parts[0] + "." + JwtFactory.B64(System.Text.Encoding.UTF8.GetBytes(
            System.Text.Encoding.UTF8.GetString(Convert.FromBase64String(Pad(parts[1]))).Replace("\"user\"", "\"user\" "))) + "." + parts[2];
        yield return ["no jwt", null!, null!];
        yield return ["wrong signer of the nonce", good, stranger];
        yield return ["tampered payload", tampered, Alice];
        yield return ["account unknown to the resolver", JwtFactory.User(Unknown, Alice), Alice];
        yield return ["expired", JwtFactory.User(A, Alice, exp: Now - 10), Alice];
        yield return ["revoked user", JwtFactory.User(A, Revoked, iat: Now), Revoked];
        yield return ["source outside src CIDRs", JwtFactory.User(A, Alice, new JsonObject { ["src"] = new JsonArray("10.11.12.0/24") }), Alice];
        yield return ["websocket-only user", JwtFactory.User(A, Alice, new JsonObject { ["allowed_connection_types"] = new JsonArray("WEBSOCKET") }), Alice];
        yield return ["signing key without issuer_account", JwtFactory.User(ASigner, Alice), Alice];
        yield return ["issuer that is not the account's signing key", JwtFactory.User(B, Alice, issuerAccount: A.GetPublicKey()), Alice];
        yield return ["not a user jwt", JwtFactory.Account(Op, A), Alice];
    }

    private static string Pad(string s)
    {
        s = s.Replace('-', '+').Replace('_', '/');
        return s + new string('=', (4 - s.Length % 4) % 4);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Bad_credentials_are_refused_with_authorization_violation(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        foreach (var row in Refusals())
        {
            Output.WriteLine($"{kind}: {row[0]}");
            await using var c = await ConnectJwt(s, (string?)row[1], (KeyPair?)row[2]);
            await c.ExpectErrAsync("Authorization Violation");
            await c.ExpectClosedAsync();
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Bearer_tokens_signing_keys_and_jwt_permissions(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        // A bearer token needs no nonce signature.
        await using (var bearer = await ConnectJwt(s, JwtFactory.User(A, Bob, new JsonObject { ["bearer_token"] = true }), null))
            Assert.Empty(await bearer.PingAsync());
        // Signed by the account's signing key, naming the account.
        await using (var scoped = await ConnectJwt(s, JwtFactory.User(ASigner, Bob, issuerAccount: A.GetPublicKey()), Bob))
            Assert.Empty(await scoped.PingAsync());
        // Permissions from the JWT: publish deny, subscribe allow.
        var perms = new JsonObject
        {
            ["pub"] = new JsonObject { ["deny"] = new JsonArray("secret.>") },
            ["sub"] = new JsonObject { ["allow"] = new JsonArray("open.>") },
        };
        await using var limited = await ConnectJwt(s, JwtFactory.User(A, Alice, perms), Alice);
        await limited.SendLineAsync("PUB secret.x 1");
        await limited.SendLineAsync("x");
        await limited.ExpectErrAsync("Permissions Violation for Publish to \"secret.x\"");
        await limited.SendLineAsync("SUB closed.x 1");
        await limited.ExpectErrAsync("Permissions Violation for Subscription to \"closed.x\"");
        await limited.SendLineAsync("SUB open.x 2");
        await limited.SendLineAsync("PUB open.x 2");
        await limited.SendLineAsync("ok");
        Assert.Equal("ok", (await limited.ExpectMessageAsync()).PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_user_is_disconnected_when_its_jwt_expires(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        long exp = DateTimeOffset.UtcNow.ToUnixTimeSeconds() + 3;
        await using var c = await ConnectJwt(s, JwtFactory.User(A, Alice, exp: exp), Alice);
        Assert.Empty(await c.PingAsync());
        // nats-server pings a new client early: answer until the error arrives.
        string? line;
        while ((line = await c.ReadLineAsync(TimeSpan.FromSeconds(20))) == "PING") await c.SendLineAsync("PONG");
        Assert.Equal("-ERR 'User Authentication Expired'", line);
        await c.ExpectClosedAsync();
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Account_connection_limit_from_the_jwt(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        var u = KeyPair.CreatePair(PrefixByte.User);
        string jwt = JwtFactory.User(Limited, u);
        await using var first = await ConnectJwt(s, jwt, u);
        Assert.Empty(await first.PingAsync());
        await using var second = await ConnectJwt(s, jwt, u);
        var lines = await second.ExpectClosedAsync();
        Output.WriteLine(string.Join(" | ", lines));
        Assert.Contains("-ERR 'maximum account active connections exceeded'", lines);
    }
}
