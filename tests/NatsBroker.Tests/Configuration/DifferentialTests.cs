using System.Diagnostics;
using NatsBroker.Configuration;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Configuration;

/// <summary>
/// Runs the real nats-server (<c>nats-server -t -c file</c>) on the same config files as our loader and checks
/// that both accept or both reject each one. Skipped when nats-server is not installed (failed under CI=true).
/// Only cases where we intend to agree are listed: we are deliberately stricter for a few inputs nats-server
/// 2.9.10 accepts (see the notes in OptionMapper), and reject keys we do not implement.
/// </summary>
public class DifferentialTests(ITestOutputHelper output)
{
    public static TheoryData<string, string> Cases() => new()
    {
        // good
        { "kv_forms", "port: 4222\nhost = 127.0.0.1\nserver_name n1\n" },
        { "sizes", "max_payload: 1MB\nmax_pending: 64KB\nmax_control_line: 4KiB\n" },
        { "durations", "ping_interval: \"2m\"\nwrite_deadline: \"10s\"\nlame_duck_duration: \"1h30m\"\nlame_duck_grace_period: \"500ms\"\n" },
        { "nested", "authorization {\n  user: a\n  password: b\n  timeout: 1.5\n}\n" },
        { "users", "authorization { users: [ {user: a, password: b, permissions: { publish: { allow: [\"foo.>\"], deny: \"bar\" }, subscribe: \"x.*\", allow_responses: {max: 5, expires: \"1m\"} } }, {user: c} ] }\nno_auth_user: c\n" },
        { "variables", "P = 4223\nport: $P\nauthorization {\n  U = bob\n  user: $U\n  password: x\n}\n" },
        { "jetstream", "jetstream { store_dir: \"/tmp/x\", max_memory_store: 1G, max_file_store: \"10G\" }\n" },
        { "jetstream_bool", "jetstream: enabled\n" },
        { "logging", "debug: true\ntrace: false\nlogtime: no\nlogfile: /tmp/n.log\npid_file: /tmp/n.pid\nsyslog: off\n" },
        { "comments", "# c\n// c\nport: 1 # c\n" },
        { "wrapped", "{\n  port: 1\n  debug: true\n}\n" },
        { "http", "http: \"127.0.0.1:8222\"\n" },
        { "tags", "server_tags: [\"a:b\", \"c\"]\n" },
        { "block", "logfile: (\n/tmp/abc\n)\n" },
        { "case", "PORT: 4222\nMax_Payload: 1024\n" },
        // bad
        { "unknown", "port: 4222\nfoo: 1\n" },
        { "unused_var", "X = 1\nport: 4222\n" },
        { "bad_type", "port: \"abc\"\n" },
        { "too_big", "max_payload: 2GB\n" },
        { "bad_duration", "ping_interval: \"2x\"\n" },
        { "short_ldm", "lame_duck_duration: \"1s\"\n" },
        { "int_duration_warning", "ping_interval: 30\n" },
        { "unterminated", "port: 4222\nkey: \"unterminated\n" },
        { "unclosed_map", "a {\n b: 1\n" },
        { "undefined_var", "port: $NATSBROKER_SURELY_UNDEFINED\n" },
        { "scoped_var", "authorization {\n Y = \"a\"\n user: $Y\n pass: b\n}\nserver_name: $Y\n" },
        { "bad_perm", "authorization { users: [ {user: a, permissions: { pubx: \"foo\" } } ] }\n" },
        { "bad_subject", "authorization { users: [ {user: a, permissions: { publish: \"foo..bar\" } } ] }\n" },
        { "no_user", "authorization { users: [ {password: b} ] }\n" },
        { "user_token", "authorization { user: a, token: x }\n" },
        { "dup_user", "authorization { users: [ {user: a}, {user: a} ] }\n" },
        { "js_bad_size", "jetstream { max_mem: \"1X\" }\n" },
        { "js_unknown", "jetstream { foo: 1 }\n" },
        { "sub_tokens", "max_sub_tokens: 300\n" },
        { "missing_include", "include ./does-not-exist.conf\n" },
        { "ws_auth_user", "websocket { port: 8080, no_tls: true, authorization { user: u, password: p, timeout: 2 } }\n" },
        { "ws_auth_unknown", "websocket { port: 8080, no_tls: true, authorization { foo: 1 } }\n" },
    };

    [SkippableTheory]
    [MemberData(nameof(Cases))]
    public void Same_verdict_as_nats_server(string name, string text)
    {
        var natsServer = Prerequisites.RequireGoServer(output);
        using var d = new TempDir();
        string file = d.Write(name + ".conf", text);

        var psi = new ProcessStartInfo(natsServer, ["-t", "-c", file])
        {
            RedirectStandardError = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        using var p = Process.Start(psi)!;
        string err = p.StandardError.ReadToEnd();
        p.StandardOutput.ReadToEnd();
        Assert.True(p.WaitForExit(10_000));
        bool theirsOk = p.ExitCode == 0;

        string ours;
        bool oursOk;
        try
        {
            var r = CommandLine.Parse(["-t", "-c", file]);
            oursOk = r.Action == CommandLineAction.TestConfig;
            ours = "valid";
        }
        catch (ConfigException e)
        {
            oursOk = false;
            ours = e.Message;
        }
        output.WriteLine($"nats-server: {err.Trim()}");
        output.WriteLine($"ours:        {ours}");
        Assert.Equal(theirsOk, oursOk);
    }
}
