using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Accounts;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Auth callout in operator mode (ADR-26; server/auth_callout.go with trusted operators): the AUTH account's JWT
/// delegates its users (<c>authorization.auth_users</c> = the service's own user, <c>allowed_accounts</c> = APP). A
/// client connects with a bearer "sentinel" user JWT of AUTH plus its real user name and password; the service
/// (written here with NATS.Net, logged in with a .creds file) answers with a user JWT signed by the account the user
/// goes to. nats-server 2.9.10 predates auth callout (2.10), so these run against ours; the rules and log texts are
/// nats-server's (server/auth_callout_test.go TestAuthCalloutOperatorModeBasics).
/// </summary>
public sealed class OperatorAuthCalloutTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Sys = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair AuthAccount = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair App = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Other = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair ServiceUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair SentinelUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair AppUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Stranger = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair SealedAccount = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair SealedServiceUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair SealedSentinelUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair XKey = KeyPair.CreatePair(PrefixByte.Curve);

    private static readonly string Sentinel = JwtFactory.User(AuthAccount, SentinelUser, new JsonObject { ["bearer_token"] = true });
    private static readonly string Config = BuildConfig();

    private static string BuildConfig()
    {
        string op = JwtFactory.Operator(Op, Sys.GetPublicKey());
        string sys = JwtFactory.Account(Op, Sys, name: "SYS");
        string auth = JwtFactory.Account(Op, AuthAccount, new JsonObject
        {
            ["authorization"] = new JsonObject
            {
                ["auth_users"] = new JsonArray(ServiceUser.GetPublicKey()),
                ["allowed_accounts"] = new JsonArray(App.GetPublicKey()),
            },
        }, name: "AUTH");
        string sealedAuth = JwtFactory.Account(Op, SealedAccount, new JsonObject
        {
            ["authorization"] = new JsonObject
            {
                ["auth_users"] = new JsonArray(SealedServiceUser.GetPublicKey()),
                ["allowed_accounts"] = new JsonArray("*"),
                ["xkey"] = XKey.GetPublicKey(),
            },
        }, name: "SEALED");
        string app = JwtFactory.Account(Op, App, name: "APP");
        string other = JwtFactory.Account(Op, Other, name: "OTHER");
        return $$"""
            operator: {{op}}
            system_account: {{Sys.GetPublicKey()}}
            resolver: MEMORY
            resolver_preload: {
              {{Sys.GetPublicKey()}}: {{sys}}
              {{AuthAccount.GetPublicKey()}}: {{auth}}
              {{App.GetPublicKey()}}: {{app}}
              {{Other.GetPublicKey()}}: {{other}}
              {{SealedAccount.GetPublicKey()}}: {{sealedAuth}}
            }
            """;
    }

    /// <summary>The service's policy, by the user name in CONNECT; the user JWT's signer is the account the user goes to.</summary>
    private static byte[]? Decide(CalloutService svc, CalloutRequest r) => r.User switch
    {
        "alice" when r.Pass == "secret" => svc.Allow(r, App.GetPublicKey(), signer: App, name: "alice", user: new JsonObject
        {
            ["pub"] = new JsonObject { ["allow"] = new JsonArray("app.>") },
            ["sub"] = new JsonObject { ["allow"] = new JsonArray("app.>", "_INBOX.>") },
        }),
        "dave" => svc.Allow(r, AuthAccount.GetPublicKey(), signer: AuthAccount),
        "carol" => svc.Allow(r, Other.GetPublicKey(), signer: Other),
        "forged" => svc.Allow(r, App.GetPublicKey(), signer: Stranger),
        "unsigned" => svc.Response(r, new JsonObject { ["jwt"] = JwtFactory.Encode(App, r.UserNkey, "user", new JsonObject { ["subs"] = -1 }) }, signer: App),
        _ => svc.Deny(r, "unknown user"),
    };

    private async Task<(ServerProcess Server, CalloutService Service, string Dir)> StartAsync()
    {
        var s = await SharedAsync(ServerKind.Ours, Config);
        string dir = Directory.CreateTempSubdirectory("callout-creds").FullName;
        string creds = Path.Combine(dir, "service.creds");
        await File.WriteAllTextAsync(creds, JwtFactory.Creds(JwtFactory.User(AuthAccount, ServiceUser), ServiceUser));
        var svc = await CalloutService.StartAsync(s.Url, new NatsAuthOpts { CredsFile = creds }, AuthAccount, Decide);
        return (s, svc, dir);
    }

    private static string SentinelConnect(string user, string pass) => new JsonObject
    {
        ["verbose"] = false, ["pedantic"] = false, ["headers"] = true, ["jwt"] = Sentinel, ["user"] = user, ["pass"] = pass,
    }.ToJsonString();

    private static NatsConnection Client(ServerProcess s, string user, string pass) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Jwt = Sentinel, Username = user, Password = pass },
        MaxReconnectRetry = 0,
    });

    private static async Task ExpectRefusedAsync(ServerProcess s, string user, string pass = "x")
    {
        await using var raw = await Raw(s, SentinelConnect(user, pass));
        await raw.SendLineAsync("PING");
        await raw.ExpectErrAsync("Authorization Violation", TimeSpan.FromSeconds(10));
        await raw.ExpectClosedAsync();
    }

    private void Dump(ServerProcess s) => Output.WriteLine(s.OutputTail());

    [SkippableFact]
    public async Task A_sentinel_user_is_placed_by_the_service_in_the_account_that_signed_its_user_jwt()
    {
        var (s, svc, dir) = await StartAsync();
        try
        {
            await using var service = svc;
            await using var alice1 = Client(s, "alice", "secret");
            await using var alice2 = Client(s, "alice", "secret");
            await alice1.ConnectAsync();
            await alice2.ConnectAsync();
            string appCreds = Path.Combine(dir, "app.creds");
            await File.WriteAllTextAsync(appCreds, JwtFactory.Creds(JwtFactory.User(App, AppUser), AppUser));
            await using var appUser = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { CredsFile = appCreds } });
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));

            // Alice is in APP (where a plain APP user sees her messages), with the permissions the service gave.
            await using var inApp = await appUser.SubscribeCoreAsync<string>("app.greet", cancellationToken: cts.Token);
            await appUser.PingAsync(cts.Token);
            await alice2.PublishAsync("app.greet", "hello", cancellationToken: cts.Token);
            Assert.Equal("hello", (await inApp.Msgs.ReadAsync(cts.Token)).Data);

            // The request: to the AUTH account (sub = its key), signed by the server, about alice's CONNECT with the sentinel.
            var request = svc.Snapshot().First(r => r.User == "alice");
            Assert.True(request.SignatureVerifies());
            Assert.Equal(AuthAccount.GetPublicKey(), request.Claims.GetProperty("sub").GetString());
            // Signed by the server nkey, which the request names as its server id (the answer's aud must be it).
            // Unlike nats-server, INFO's server_id is not that key in operator mode: the key is made on the first
            // callout, not at start-up.
            Assert.Equal(request.ServerId, request.Claims.GetProperty("iss").GetString());
            Assert.Equal(Sentinel, request.Nats.GetProperty("connect_opts").GetProperty("jwt").GetString());
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    [SkippableFact]
    public async Task Permissions_from_the_answer_apply_and_the_callout_account_cannot_forge_requests()
    {
        var (s, svc, dir) = await StartAsync();
        try
        {
            await using var service = svc;
            // alice may publish only to app.>.
            await using (var alice = await Raw(s, SentinelConnect("alice", "secret")))
            {
                await alice.SendLineAsync("PUB other.subject 2\r\nhi");
                await alice.ExpectErrAsync("Permissions Violation for Publish to \"other.subject\"", TimeSpan.FromSeconds(10));
            }
            // dave is placed in AUTH itself: he may not publish authorization requests.
            await using (var dave = await Raw(s, SentinelConnect("dave", "x")))
            {
                await dave.SendLineAsync("PUB $SYS.REQ.USER.AUTH 2\r\nhi");
                await dave.ExpectErrAsync("Permissions Violation for Publish to \"$SYS.REQ.USER.AUTH\"", TimeSpan.FromSeconds(10));
            }
        }
        finally
        {
            Dump(s);
            Directory.Delete(dir, true);
        }
    }

    [SkippableTheory]
    [InlineData("alice", "wrong", "refused by the service")]
    [InlineData("carol", "x", "an account not in allowed_accounts")]
    [InlineData("forged", "x", "a user JWT signed by a key no account vouches for")]
    [InlineData("unsigned", "x", "a response not signed by the callout account")]
    public async Task Refusals_are_authorization_violations(string user, string pass, string why)
    {
        Output.WriteLine(why);
        var (s, svc, dir) = await StartAsync();
        try
        {
            await using var service = svc;
            await ExpectRefusedAsync(s, user, pass);
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    [SkippableFact]
    public async Task With_the_accounts_xkey_requests_are_sealed_and_a_sealed_answer_needs_no_account_signature()
    {
        var s = await SharedAsync(ServerKind.Ours, Config);
        string dir = Directory.CreateTempSubdirectory("callout-creds").FullName;
        try
        {
            string creds = Path.Combine(dir, "sealed-service.creds");
            await File.WriteAllTextAsync(creds, JwtFactory.Creds(JwtFactory.User(SealedAccount, SealedServiceUser), SealedServiceUser));
            // The answer is signed by OTHER's key, not SEALED's: a sealed answer is authenticated by the xkey exchange
            // (auth_callout.go checks the signer only when not encrypted); "*" allows placing the user in OTHER.
            await using var svc = await CalloutService.StartAsync(s.Url, new NatsAuthOpts { CredsFile = creds }, Other,
                (svc, r) => r.User == "erin" ? svc.Allow(r, Other.GetPublicKey(), signer: Other) : svc.Deny(r, "no"), XKey);
            string sentinel = JwtFactory.User(SealedAccount, SealedSentinelUser, new JsonObject { ["bearer_token"] = true });
            await using var erin = new NatsConnection(new NatsOpts
            {
                Url = s.Url,
                AuthOpts = new NatsAuthOpts { Jwt = sentinel, Username = "erin", Password = "x" },
                MaxReconnectRetry = 0,
            });
            await erin.ConnectAsync();
            await erin.PingAsync();
            var request = svc.Snapshot().Single(r => r.User == "erin");
            Assert.True(request.Sealed);
            Assert.Equal(SealedAccount.GetPublicKey(), request.Claims.GetProperty("sub").GetString());
            Assert.StartsWith("X", request.Nats.GetProperty("server_id").GetProperty("xkey").GetString(), StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    [SkippableFact]
    public async Task Without_a_service_a_delegated_user_is_refused_and_an_auth_user_still_connects()
    {
        // A server of its own: the shared one may have another test's service subscribed.
        await using var s = await OwnAsync(ServerKind.Ours, Config);
        await ExpectRefusedAsync(s, "alice", "secret");
        string dir = Directory.CreateTempSubdirectory("callout-creds").FullName;
        try
        {
            string creds = Path.Combine(dir, "service.creds");
            await File.WriteAllTextAsync(creds, JwtFactory.Creds(JwtFactory.User(AuthAccount, ServiceUser), ServiceUser));
            await using var nc = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { CredsFile = creds }, MaxReconnectRetry = 0 });
            await nc.ConnectAsync();
            await nc.PingAsync();
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }
}
