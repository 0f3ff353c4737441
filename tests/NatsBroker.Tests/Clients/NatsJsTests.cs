using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Clients;

/// <summary>Helpers shared by the nats.js test classes.</summary>
internal static class NatsJs
{
    public const string BcryptPassword = "s3cr3t-pass";

    /// <summary>bcrypt (cost 10) of <see cref="BcryptPassword"/>; verified with bcryptjs and accepted by nats-server 2.9.10.</summary>
    public const string BcryptHash = "$2a$10$yfkaAhzbz0xG9JHWW9/vyenrwr7KlnlnE9UWIu5toamTZ07fV.x22";

    /// <summary>Skips (or, under CI=true, fails) the test when node or the server kind is missing.</summary>
    public static void Require(ServerKind kind, ITestOutputHelper output)
    {
        Prerequisites.RequireNode(output);
        Prerequisites.RequireServer(kind, output);
    }

    public static Dictionary<string, string> Env(params (string Key, string Value)[] pairs) =>
        pairs.ToDictionary(p => p.Key, p => p.Value);
}

/// <summary>Core messaging through the official Node client (tests/js/core.mjs).</summary>
public sealed class NatsJsCoreTests(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    public static TheoryData<ServerKind, string> Cases()
    {
        var d = new TheoryData<ServerKind, string>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            foreach (var c in new[] { "pubsub", "wildcards", "queue", "request", "headers", "noresponders", "verbose", "echo" })
            {
                d.Add(k, c);
            }
        }

        return d;
    }

    [SkippableTheory]
    [MemberData(nameof(Cases))]
    public async Task Scenario(ServerKind kind, string @case)
    {
        NatsJs.Require(kind, output);
        var server = await pool.GetAsync(kind);
        await NodeClient.RunAndAssertOkAsync("core.mjs", [server.Url], TimeSpan.FromSeconds(30), NatsJs.Env(("CASE", @case)), output);
    }
}

/// <summary>Authentication, permissions, reconnect and reload through nats.js.</summary>
public sealed class NatsJsServerTests(ITestOutputHelper output)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task User_password_auth(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        await using var s = await ServerProcess.StartAsync(kind, "authorization { user: alice, password: wonderland }\n", output);
        await NodeClient.RunAndAssertOkAsync("auth.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(
            ("GOOD", """{"user":"alice","pass":"wonderland"}"""),
            ("BAD", """[{"user":"alice","pass":"nope"},{"user":"mallory","pass":"wonderland"},{}]""")), output);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Token_auth(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        await using var s = await ServerProcess.StartAsync(kind, "authorization { token: \"t0ken-42\" }\n", output);
        await NodeClient.RunAndAssertOkAsync("auth.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(
            ("GOOD", """{"token":"t0ken-42"}"""),
            ("BAD", """[{"token":"t0ken-43"},{}]""")), output);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Nkey_auth(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        using var user = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
        using var stranger = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
        await using var s = await ServerProcess.StartAsync(kind, $"authorization {{ users: [ {{ nkey: {user.GetPublicKey()} }} ] }}\n", output);
        // nkeyAuthenticator signs INFO's nonce with the seed; a seed the server does not know is refused.
        await NodeClient.RunAndAssertOkAsync("auth.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(
            ("GOOD", $$"""{"nkeySeed":"{{user.GetSeed()}}"}"""),
            ("BAD", $$"""[{"nkeySeed":"{{stranger.GetSeed()}}"},{}]""")), output);
    }

    /// <summary>Operator mode: a .creds file (credsAuthenticator) and a JWT with its seed (jwtAuthenticator).</summary>
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Creds_and_jwt_auth_in_operator_mode(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        using var op = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.Operator);
        using var sys = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.Account);
        using var account = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.Account);
        using var stranger = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.Account);
        using var user = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
        var conf = $$"""
            operator: {{Accounts.JwtFactory.Operator(op, sys.GetPublicKey())}}
            system_account: {{sys.GetPublicKey()}}
            resolver: MEMORY
            resolver_preload: {
              {{sys.GetPublicKey()}}: {{Accounts.JwtFactory.Account(op, sys, name: "SYS")}}
              {{account.GetPublicKey()}}: {{Accounts.JwtFactory.Account(op, account, name: "A")}}
            }
            """;
        string jwt = Accounts.JwtFactory.User(account, user);
        string creds = Accounts.JwtFactory.Creds(jwt, user);
        string unknownAccount = Accounts.JwtFactory.User(stranger, user);
        string Json(string s) => System.Text.Json.JsonSerializer.Serialize(s);
        await using var s = await ServerProcess.StartAsync(kind, conf, output);
        await NodeClient.RunAndAssertOkAsync("auth.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(
            ("GOOD", $$"""{"creds":{{Json(creds)}}}"""),
            ("BAD", $$"""[{"creds":{{Json(Accounts.JwtFactory.Creds(unknownAccount, user))}}},{}]""")), output);
        await NodeClient.RunAndAssertOkAsync("auth.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(
            ("GOOD", $$"""{"userJwt":{{Json(jwt)}},"seed":"{{user.GetSeed()}}"}"""),
            ("BAD", $$"""[{"userJwt":{{Json(jwt)}},"seed":"{{stranger.GetSeed()}}"}]""")), output);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Bcrypt_password_auth(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        var conf = $"authorization {{ users: [ {{ user: carol, password: \"{NatsJs.BcryptHash}\" }} ] }}\n";
        await using var s = await ServerProcess.StartAsync(kind, conf, output);
        // The hash itself is not a password: presenting it must fail.
        await NodeClient.RunAndAssertOkAsync("auth.mjs", [s.Url], TimeSpan.FromSeconds(30), NatsJs.Env(
            ("GOOD", $$"""{"user":"carol","pass":"{{NatsJs.BcryptPassword}}"}"""),
            ("BAD", $$"""[{"user":"carol","pass":"{{NatsJs.BcryptHash}}"},{"user":"carol","pass":"wrong"}]""")), output);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Permission_violations_surface_to_the_client(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        const string conf = """
            authorization { users: [
              { user: limited, password: limited, permissions: {
                  publish: { allow: ["allowed.>", "_INBOX.>"] },
                  subscribe: { allow: ["allowed.>", "_INBOX.>", "secret.>"], deny: ["secret.>"] } } }
            ]}
            """;
        await using var s = await ServerProcess.StartAsync(kind, conf, output);
        await NodeClient.RunAndAssertOkAsync("permissions.mjs", [s.Url], TimeSpan.FromSeconds(30), log: output);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Client_reconnects_after_server_restart_on_the_same_port(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        await using var s = await ServerProcess.StartAsync(kind, log: output);
        await using var node = await NodeClient.StartAsync("reconnect.mjs", [s.Url], log: output);
        await node.WaitForEventAsync("ready");
        var port = s.Port;
        await s.RestartAsync(hard: true);
        Assert.Equal(port, s.Port);
        await node.SendAsync("restarted");
        NodeClient.AssertOk(await node.ResultAsync(TimeSpan.FromSeconds(30)), node.Stderr);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Config_reload_adds_users_and_keeps_existing_connections(ServerKind kind)
    {
        NatsJs.Require(kind, output);
        const string before = "authorization { users: [ { user: alice, password: alice-pass } ] }\n";
        const string after = "authorization { users: [ { user: alice, password: alice-pass }, { user: bob, password: bob-pass } ] }\n";
        await using var s = await ServerProcess.StartAsync(kind, before, output);
        await using var node = await NodeClient.StartAsync("reload.mjs", [s.Url], log: output);
        await node.WaitForEventAsync("ready");
        s.WriteConfig(after);
        s.Reload();
        await node.SendAsync("reloaded");
        NodeClient.AssertOk(await node.ResultAsync(TimeSpan.FromSeconds(30)), node.Stderr);
        Assert.False(s.HasExited, s.OutputTail());
    }
}
