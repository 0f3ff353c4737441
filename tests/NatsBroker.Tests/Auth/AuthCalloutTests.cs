using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Auth callout in config mode (ADR-26, server/auth_callout.go) with NATS.Net clients and a callout service written
/// in the test (<see cref="CalloutService"/>). nats-server 2.9.10 predates auth callout (2.10), so these run against
/// ours; the expected behaviour and log texts are nats-server's (server/auth_callout_test.go).
/// </summary>
public sealed class AuthCalloutTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair Issuer = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Stranger = KeyPair.CreatePair(PrefixByte.Account);

    private static string Config => $$"""
        accounts {
          AUTH: { users: [{user: auth, password: pwd}] }
          APP: { users: [{user: carol, password: carol}] }
        }
        authorization {
          auth_callout {
            issuer: {{Issuer.GetPublicKey()}}
            account: AUTH
            auth_users: [auth]
          }
        }
        """;

    /// <summary>The service's policy, by the user name in CONNECT.</summary>
    private static byte[]? Decide(CalloutService svc, CalloutRequest r) => r.User switch
    {
        "alice" when r.Pass == "secret" => svc.Allow(r, "APP", name: "alice", user: new JsonObject
        {
            ["pub"] = new JsonObject { ["allow"] = new JsonArray("app.>", "$SYS.REQ.USER.INFO") },
            ["sub"] = new JsonObject { ["allow"] = new JsonArray("app.>", "_INBOX.>") },
        }),
        "dave" => svc.Allow(r, "AUTH"),
        "short" => svc.Allow(r, "APP", exp: DateTimeOffset.UtcNow.ToUnixTimeSeconds() + 4),
        "expired" => svc.Allow(r, "APP", exp: DateTimeOffset.UtcNow.ToUnixTimeSeconds() - 10),
        "nowhere" => svc.Allow(r, "NOWHERE"),
        "forged" => svc.Allow(r, "APP", signer: Stranger),
        "replayed" => svc.Allow(r, "APP", subject: KeyPair.CreatePair(PrefixByte.User).GetPublicKey()),
        "misaddressed" => svc.Response(r, new JsonObject { ["error"] = "x" }, audience: KeyPair.CreatePair(PrefixByte.Server).GetPublicKey()),
        "slow" => null,
        "bob" => svc.Deny(r, "bob is not welcome"),
        _ => svc.Deny(r, "unknown user"),
    };

    private async Task<(ServerProcess Server, CalloutService Service)> StartAsync()
    {
        var s = await SharedAsync(ServerKind.Ours, Config);
        var svc = await CalloutService.StartAsync(s.Url, "auth", "pwd", Issuer, Decide);
        return (s, svc);
    }

    private static NatsConnection Client(ServerProcess s, string user, string pass) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Username = user, Password = pass },
        MaxReconnectRetry = 0,
    });

    private static string UserConnect(string user, string pass) =>
        $$"""{"verbose":false,"pedantic":false,"headers":true,"user":"{{user}}","pass":"{{pass}}"}""";

    private static async Task ExpectRefusedAsync(ServerProcess s, string user, string pass = "x")
    {
        await using var raw = await Raw(s, UserConnect(user, pass));
        await raw.SendLineAsync("PING");
        await raw.ExpectErrAsync("Authorization Violation", TimeSpan.FromSeconds(10));
        await raw.ExpectClosedAsync();
    }

    [SkippableFact]
    public async Task An_allowed_user_lands_in_the_account_the_service_names_with_its_permissions()
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        await using var alice1 = Client(s, "alice", "secret");
        await using var alice2 = Client(s, "alice", "secret");
        await using var carolInApp = Client(s, "auth", "pwd"); // AUTH account: must not see APP's messages
        await alice1.ConnectAsync();
        await alice2.ConnectAsync();
        await carolInApp.ConnectAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));

        await using var inApp = await alice1.SubscribeCoreAsync<string>("app.greet", cancellationToken: cts.Token);
        await using var inAuth = await carolInApp.SubscribeCoreAsync<string>("app.greet", cancellationToken: cts.Token);
        await alice1.PingAsync(cts.Token);
        await carolInApp.PingAsync(cts.Token);
        await alice2.PublishAsync("app.greet", "hello", cancellationToken: cts.Token);
        var m = await inApp.Msgs.ReadAsync(cts.Token);
        Assert.Equal("hello", m.Data);
        await carolInApp.PingAsync(cts.Token);
        Assert.False(inAuth.Msgs.TryRead(out _));

        // The request the service got: signed by the server nkey, which is the server id, about alice's CONNECT.
        var request = svc.Snapshot().First(r => r.User == "alice");
        Assert.True(request.SignatureVerifies());
        Assert.Equal(alice1.ServerInfo!.Id, request.Claims.GetProperty("iss").GetString());
        Assert.Equal(request.ServerId, request.Claims.GetProperty("iss").GetString());
        Assert.Equal("nats-authorization-request", request.Claims.GetProperty("aud").GetString());
        Assert.Equal(Issuer.GetPublicKey(), request.Claims.GetProperty("sub").GetString());
        Assert.Equal("authorization_request", request.Nats.GetProperty("type").GetString());
        Assert.Equal("secret", request.Pass);
        Assert.Equal("alice", request.Nats.GetProperty("client_info").GetProperty("user").GetString());
        Assert.Equal("Client", request.Nats.GetProperty("client_info").GetProperty("kind").GetString());
        Assert.True(request.Claims.GetProperty("exp").GetInt64() > request.Claims.GetProperty("iat").GetInt64());

        // $SYS.REQ.USER.INFO: the callout user as the server sees it.
        var info = await Accounts.UserInfoTests.UserInfoAsync(alice1);
        Assert.Equal(
            """{"user":"alice","account":"APP","account_name":"APP","permissions":{"publish":{"allow":["app.\u003E","$SYS.REQ.USER.INFO"]},"subscribe":{"allow":["app.\u003E","_INBOX.\u003E"]}}}""",
            info.GetRawText());

        // Permissions from the user JWT: publish outside app.> is refused.
        await using var raw = await Connected(s, UserConnect("alice", "secret"));
        await raw.SendLineAsync("PUB other.x 1\r\nx");
        await raw.ExpectErrAsync("Permissions Violation for Publish to \"other.x\"");
        await raw.SendLineAsync("SUB other.> 1");
        await raw.ExpectErrAsync("Permissions Violation for Subscription to \"other.>\"");
    }

    [SkippableFact]
    public async Task A_refusal_is_an_authorization_violation_and_the_reason_is_logged()
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        await using var bob = Client(s, "bob", "x");
        var ex = await Assert.ThrowsAnyAsync<NatsException>(async () => await bob.ConnectAsync());
        Output.WriteLine(ex.ToString());
        Assert.Contains("Authorization Violation", ex.InnerException?.Message ?? ex.Message, StringComparison.Ordinal);
        await ExpectRefusedAsync(s, "bob");
        await WaitForLogAsync(s, "Auth callout service returned an error: bob is not welcome");
    }

    [SkippableFact]
    public async Task No_answer_within_the_auth_timeout_is_an_authorization_violation()
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        await ExpectRefusedAsync(s, "slow");
        await WaitForLogAsync(s, "Authorization callout response not received in time on account \"AUTH\"");
    }

    [SkippableFact]
    public async Task Auth_users_bypass_the_callout_and_configured_users_do_not()
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        int before = svc.Snapshot().Length;
        await using (var auth = Client(s, "auth", "pwd"))
        {
            await auth.ConnectAsync();
            await auth.PingAsync();
        }
        Assert.Equal(before, svc.Snapshot().Length);
        // A wrong password for an auth user is refused by the configuration, without asking the service.
        await ExpectRefusedAsync(s, "auth", "wrong");
        Assert.Equal(before, svc.Snapshot().Length);

        // carol is configured in APP with this password, but is not in auth_users: the service decides (no).
        await ExpectRefusedAsync(s, "carol", "carol");
        Assert.Contains(svc.Snapshot(), r => r.User == "carol");
    }

    [SkippableFact]
    public async Task Users_in_the_callout_account_may_not_publish_authorization_requests()
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        foreach (var (user, pass) in new[] { ("auth", "pwd"), ("dave", "x") })
        {
            await using var raw = await Connected(s, UserConnect(user, pass));
            await raw.SendLineAsync("PUB $SYS.REQ.USER.AUTH 1\r\nx");
            await raw.ExpectErrAsync("Permissions Violation for Publish to \"$SYS.REQ.USER.AUTH\"");
            await raw.SendLineAsync("PUB other 1\r\nx");
            var lines = await raw.PingAsync();
            Assert.DoesNotContain(lines, l => l.StartsWith("-ERR", StringComparison.Ordinal));
        }
    }

    [SkippableTheory]
    [InlineData("expired", "Error validating user JWT: claim is expired")]
    [InlineData("nowhere", "No valid account \"NOWHERE\" for auth callout response on account \"AUTH\"")]
    [InlineData("forged", "Wrong issuer for auth callout response on account \"AUTH\"")]
    [InlineData("replayed", "Expected authorized user of")]
    [InlineData("misaddressed", "Auth callout violation: auth callout response is not for server")]
    public async Task Answers_the_server_cannot_trust_are_refusals(string user, string logged)
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        await ExpectRefusedAsync(s, user);
        await WaitForLogAsync(s, logged);
    }

    [SkippableFact]
    public async Task The_user_jwt_expiry_closes_the_connection()
    {
        var (s, svc) = await StartAsync();
        await using var service = svc;
        await using (var nc = Client(s, "short", "x"))
        {
            var info = await Accounts.UserInfoTests.UserInfoAsync(nc);
            Assert.Equal("APP", info.GetProperty("account").GetString());
            Assert.InRange(info.GetProperty("expires").GetInt64(), 1_000_000_000L, 4_000_000_000L);
        }
        await using var raw = await Connected(s, UserConnect("short", "x"));
        await raw.ExpectErrAsync("User Authentication Expired", TimeSpan.FromSeconds(10));
    }

    [SkippableFact]
    public async Task With_allowed_accounts_users_configured_elsewhere_keep_their_own_verdict()
    {
        string config = Config
            .Replace("APP: { users: [{user: carol, password: carol}] }",
                "APP: { users: [{user: carol, password: carol}] }\n  OTHER: { users: [{user: olga, password: olga}] }", StringComparison.Ordinal)
            .Replace("auth_users: [auth]", "auth_users: [auth]\n    allowed_accounts: [APP]", StringComparison.Ordinal);
        var s = await SharedAsync(ServerKind.Ours, config);
        await using var svc = await CalloutService.StartAsync(s.Url, "auth", "pwd", Issuer, Decide);

        // olga is configured in OTHER, which is not delegated: the configuration decides, no request is made.
        await using (var olga = Client(s, "olga", "olga"))
        {
            var info = await Accounts.UserInfoTests.UserInfoAsync(olga);
            Assert.Equal("OTHER", info.GetProperty("account").GetString());
        }
        Assert.DoesNotContain(svc.Snapshot(), r => r.User == "olga");

        // A wrong password leaves the client in $G, which is delegated (auth.go): the service is asked, and refuses.
        await ExpectRefusedAsync(s, "olga", "wrong");
        Assert.Contains(svc.Snapshot(), r => r.User == "olga" && r.Pass == "wrong");

        // carol is configured in APP, which is delegated.
        await ExpectRefusedAsync(s, "carol", "carol");
        Assert.Contains(svc.Snapshot(), r => r.User == "carol");
    }

    [SkippableFact]
    public async Task With_an_xkey_requests_and_answers_are_sealed()
    {
        var xkey = KeyPair.CreatePair(PrefixByte.Curve);
        string config = Config.Replace("auth_users: [auth]", $"auth_users: [auth]\n    xkey: {xkey.GetPublicKey()}", StringComparison.Ordinal);
        var s = await SharedAsync(ServerKind.Ours, config);
        await using var svc = await CalloutService.StartAsync(s.Url, "auth", "pwd", Issuer, Decide, xkey);
        await using var alice = Client(s, "alice", "secret");
        await alice.ConnectAsync();
        var info = await Accounts.UserInfoTests.UserInfoAsync(alice);
        Assert.Equal("APP", info.GetProperty("account").GetString());

        var request = svc.Snapshot().Single(r => r.User == "alice");
        Assert.True(request.Sealed);
        Assert.True(request.SignatureVerifies());
        Assert.StartsWith("X", request.Nats.GetProperty("server_id").GetProperty("xkey").GetString(), StringComparison.Ordinal);

        await ExpectRefusedAsync(s, "bob");
        await WaitForLogAsync(s, "Auth callout service returned an error: bob is not welcome");
    }

    private static async Task WaitForLogAsync(ServerProcess s, string text) =>
        Assert.True(await s.WaitForOutputAsync(text, TimeSpan.FromSeconds(10)), $"log never said: {text}\n{s.Output}");
}
