using System.Text;
using NatsBroker.Auth;
using NatsBroker.Configuration;
using NatsBroker.Protocol;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Same configuration fed to nats-server (the oracle) and to our authenticator/permissions; every decision and
/// every -ERR text must agree. Skipped when nats-server is not installed (failed under CI=true).
/// </summary>
public class NatsServerDifferentialTests
{
    private const string SecretHash = "$2a$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW";

    private static readonly Permissions UserAPerms = new()
    {
        Publish = new SubjectPermission { Allow = ["foo.>", "x"], Deny = ["foo.secret"] },
        Subscribe = new SubjectPermission
        {
            Allow = ["foo.*", "bar.>", "q.* v1", "w.* g.*", "both", "both v1"],
            Deny = ["foo.bad", "*.hid"],
        },
    };

    private static readonly Permissions UserDPerms = new() { Subscribe = new SubjectPermission { Deny = ["dq", "dq q1", "x.*"] } };

    private const string PermsConfig = """
        authorization {
          users = [
            {user: a, password: a, permissions: {
                publish: {allow: ["foo.>", "x"], deny: ["foo.secret"]},
                subscribe: {allow: ["foo.*", "bar.>", "q.* v1", "w.* g.*", "both", "both v1"], deny: ["foo.bad", "*.hid"]}
            }}
            {user: d, password: d, permissions: { subscribe: {deny: ["dq", "dq q1", "x.*"]} }}
            {user: s, password: s}
            {user: r, password: r, permissions: { publish: {deny: ["z"]}, subscribe: {allow: ["req"]}, allow_responses: {max: 2} }}
          ]
        }
        """;

    private static readonly string[] Subjects =
    [
        "foo.bar", "foo.*", "foo.>", "foo.bar.baz", "foo", "*.*", ">", "bar.*", "bar.>", "bar.x.y", "foo.bad", "foo.hid",
        "q.x", "w.x", "both", "dq", "x", "x.y", "x.>", "x.*", "foo.secret", "fo\"o", "\u00cf\u0080",
    ];

    /// <summary>The raw client reads bytes as Latin-1: compare UTF-8 texts the same way.</summary>
    private static string Wire(string text) => Encoding.Latin1.GetString(Encoding.UTF8.GetBytes(text));

    private static readonly string?[] Queues = [null, "g", "v1", "v2", "g.a", "g.a.b", "q1", "q2", "_sys_"];

    /// <summary>Against 2.14.5: 2.9 decides queue SUBs under a plain and a queue-scoped deny differently (dq q2).</summary>
    [SkippableFact]
    public void Publish_and_subscribe_decisions_and_texts_match()
    {
        using var server = new NatsServerOracle(PermsConfig, Prerequisites.RequireOracle214());
        foreach (var (user, perms) in new[] { ("a", UserAPerms), ("d", UserDPerms) })
        {
            using var client = server.Connect($$"""{"verbose":false,"echo":false,"user":"{{user}}","pass":"{{user}}"}""", out var hello);
            Assert.Equal("", hello);
            int sid = 0;
            foreach (var subject in Subjects)
            {
                byte[] subj = Encoding.Latin1.GetBytes(subject);
                if (NatsBroker.Subjects.Subject.IsLiteral(subj))
                {
                    var ours = ClientPermissions.Create(perms)!;
                    string expected = ours.CanPublish(subj) ? "" : Wire($"-ERR '{AuthErrors.PublishViolation(subj)}'\n");
                    Assert.Equal((user, "PUB " + subject, expected), (user, "PUB " + subject, client.Send($"PUB {subject} 0\r\n\r\n")));
                }
                foreach (var queue in Queues)
                {
                    byte[] q = queue is null ? [] : Encoding.Latin1.GetBytes(queue);
                    // A fresh permissions object per check: the delivery filter state must not leak between cases.
                    var ours = ClientPermissions.Create(perms);
                    bool allowed = ClientPermissions.IsSubscribeAllowed(ours, subj, q);
                    string expected = allowed ? "" : Wire($"-ERR '{AuthErrors.SubscriptionViolation(subj, q)}'\n");
                    string cmd = queue is null ? $"SUB {subject} {++sid}" : $"SUB {subject} {queue} {++sid}";
                    Assert.Equal((user, cmd, expected), (user, cmd, client.Send(cmd + "\r\n")));
                }
            }
            Assert.False(client.Closed); // permission violations never close the connection
        }
    }

    [SkippableFact]
    public void Allow_responses_match()
    {
        Prerequisites.RequireGoServer();
        using var server = new NatsServerOracle(PermsConfig);
        using var publisher = server.Connect("""{"verbose":false,"user":"s","pass":"s"}""", out _);
        using var responder = server.Connect("""{"verbose":false,"user":"r","pass":"r"}""", out _);
        var ours = ClientPermissions.Create(new Permissions
        {
            Publish = new SubjectPermission { Deny = ["z"] },
            Subscribe = new SubjectPermission { Allow = ["req"] },
            Response = new ResponsePermission { MaxMsgs = 2 },
        }, new ManualTimeProvider())!;

        string Pub(string subject)
        {
            var s = Encoding.UTF8.GetBytes(subject);
            return ours.CanPublish(s) ? "" : $"-ERR '{AuthErrors.PublishViolation(s)}'\n";
        }

        Assert.Equal(Pub("any"), responder.Send("PUB any 0\r\n\r\n"));
        Assert.Equal("", responder.Send("SUB req 1\r\n"));
        publisher.Send("PUB req rep.1 1\r\nq\r\n");
        Assert.Equal("MSG req 1 rep.1 1\nq\n", responder.Send(""));
        ours.Responses!.OnDelivered("rep.1"u8);
        for (int i = 0; i < 3; i++)
            Assert.Equal((i, Pub("rep.1")), (i, responder.Send("PUB rep.1 1\r\na\r\n")));
        Assert.Equal(Pub("rep.2"), responder.Send("PUB rep.2 0\r\n\r\n")); // never delivered
    }

    /// <summary>Against 2.14.5: 2.9 filtered only SUBs that a deny entry was a subset of (bar.&gt; got bar.hid).</summary>
    [SkippableFact]
    public void Delivery_filter_matches()
    {
        using var server = new NatsServerOracle(PermsConfig, Prerequisites.RequireOracle214());
        using var publisher = server.Connect("""{"verbose":false,"user":"s","pass":"s"}""", out _);
        string[] published = ["foo.bad", "foo.hid", "foo.ok", "bar.hid", "bar.x.hid", "bar.ok"];
        foreach (var sub in new[] { "foo.*", "bar.>" })
        {
            using var client = server.Connect("""{"verbose":false,"user":"a","pass":"a"}""", out _);
            var ours = ClientPermissions.Create(UserAPerms)!;
            Assert.True(ours.CanSubscribe(Encoding.UTF8.GetBytes(sub), default, out bool filter));
            Assert.Equal("", client.Send($"SUB {sub} 1\r\n"));
            var sb = new StringBuilder();
            foreach (var p in published)
                sb.Append(System.Globalization.CultureInfo.InvariantCulture, $"PUB {p} 1\r\nm\r\n");
            publisher.Send(sb.ToString());
            var got = client.Send("");
            var expected = string.Concat(published
                .Where(p => NatsBroker.Subjects.Subject.Matches(sub, p) && !(filter && ours.IsDeliveryDenied(Encoding.UTF8.GetBytes(p))))
                .Select(p => $"MSG {p} 1 1\nm\n"));
            Assert.Equal((sub, expected), (sub, got));
        }
    }

    [SkippableFact]
    public void Authentication_decisions_match()
    {
        Prerequisites.RequireGoServer();
        var cases = new (string Config, ServerOptions Options)[]
        {
            ("", new ServerOptions()),
            ("authorization { user: u, password: p }", new ServerOptions { Username = "u", Password = "p" }),
            ($"authorization {{ token: \"{SecretHash}\" }}", new ServerOptions { Authorization = SecretHash }),
            ($$"""
              authorization { users = [ {user: plain, password: pw}, {user: hashed, password: "{{SecretHash}}"}, {user: nopass, password: ""} ] }
              no_auth_user: plain
              """,
             new ServerOptions
             {
                 Users = [new UserConfig { User = "plain", Password = "pw" }, new UserConfig { User = "hashed", Password = SecretHash }, new UserConfig { User = "nopass", Password = "" }],
                 NoAuthUser = "plain",
             }),
            ($$"""
              authorization { users = [ {user: plain, password: pw}, {user: hashed, password: "{{SecretHash}}"} ] }
              no_auth_user: hashed
              """,
             new ServerOptions
             {
                 Users = [new UserConfig { User = "plain", Password = "pw" }, new UserConfig { User = "hashed", Password = SecretHash }],
                 NoAuthUser = "hashed",
             }),
        };
        var connects = new ConnectOptions[]
        {
            new(), new() { User = "u", Pass = "p" }, new() { User = "u", Pass = "x" }, new() { User = "v", Pass = "p" },
            new() { AuthToken = "secret" }, new() { AuthToken = "x" }, new() { Pass = "secret" },
            new() { User = "plain", Pass = "pw" }, new() { User = "plain", Pass = "bad" }, new() { User = "hashed", Pass = "secret" },
            new() { User = "hashed", Pass = SecretHash }, new() { User = "nopass" }, new() { Pass = "pw" }, new() { User = "", Pass = "" },
            new() { User = "ghost", Pass = "pw" },
        };
        foreach (var (config, options) in cases)
        {
            using var server = new NatsServerOracle(config);
            var ours = new OptionsAuthenticator(options);
            foreach (var connect in connects)
            {
                // verbose defaults to true (nats-server defaultOpts); these cases compare auth outcomes only.
                var json = System.Text.Json.JsonSerializer.Serialize(connect).Replace("\"verbose\":true", "\"verbose\":false", StringComparison.Ordinal);
                using var client = server.Connect(json, out var reply);
                bool ok = ours.Authenticate(connect, new ClientAuthContext()).Success;
                string expected = ok ? "" : $"-ERR '{AuthErrors.AuthorizationViolation}'\n<closed>";
                Assert.Equal((config, json, expected), (config, json, reply));
            }
            // First op without CONNECT.
            using (var raw = new RawClient(server.Port))
            {
                string reply = raw.Send("SUB foo 1\r\n");
                bool ok = ours.AuthenticateWithoutConnect(new ClientAuthContext()).Success;
                // verbose defaults to true without CONNECT, hence +OK
                string expected = ok ? "+OK\n" : $"-ERR '{AuthErrors.AuthorizationViolation}'\n<closed>";
                Assert.Equal((config, "no CONNECT", expected), (config, "no CONNECT", reply));
            }
        }
    }

    [SkippableFact]
    public void Authentication_timeout_text_and_close()
    {
        Prerequisites.RequireGoServer();
        using var server = new NatsServerOracle("authorization { user: u, password: p, timeout: 0.2 }");
        using var client = new RawClient(server.Port);
        // No PING (that would count as the first op); just wait for the server to give up.
        var line = client.ReadLineForTest();
        Assert.Equal($"-ERR '{AuthErrors.AuthenticationTimeout}'", line);
        Assert.Null(client.ReadLineForTest());
    }
}
