using System.Diagnostics;
using System.Text;
using System.Text.RegularExpressions;
using NatsBroker.Configuration;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Configuration;

/// <summary>
/// The cluster refusals of ClusterConfigTests against the real nats-server 2.14.5: the same file or flags must be
/// refused by both, and nats-server's output must hold our message (the position aside: our columns are 1-based).
/// nats-server checks some values only when it starts (compression in validateCluster, advertise when the route
/// listener starts) and its <c>-t</c> passes them; those cases start it and read what it prints before exiting.
/// Skipped without the oracle binary (failed under CI=true).
/// </summary>
public partial class ClusterConfigOracleTests(ITestOutputHelper output)
{
    [GeneratedRegex(@"^.*?:\d+:\d+: ")]
    private static partial Regex Position();

    /// <summary>Runs nats-server; returns its exit code (null if it was still running after <paramref name="wait"/> and
    /// was killed) and everything it wrote.</summary>
    private (int? Exit, string Output) RunOracle(string binary, IEnumerable<string> args, TimeSpan wait)
    {
        var psi = new ProcessStartInfo(binary)
        {
            RedirectStandardError = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var text = new StringBuilder();
        p.OutputDataReceived += (_, e) => { if (e.Data is not null) lock (text) text.AppendLine(e.Data); };
        p.ErrorDataReceived += (_, e) => { if (e.Data is not null) lock (text) text.AppendLine(e.Data); };
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        int? exit = null;
        if (p.WaitForExit(wait))
        {
            p.WaitForExit();
            exit = p.ExitCode;
        }
        else
        {
            p.Kill();
            p.WaitForExit();
        }
        string all;
        lock (text) all = text.ToString();
        output.WriteLine($"nats-server {string.Join(' ', args)} -> {(exit?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "still running")}\n{all}");
        return (exit, all);
    }

    public static TheoryData<string, string> BadFiles() => new()
    {
        { "spaces", "cluster { name: \"a b\", port: CP }\n" },
        { "users", "cluster { port: CP, authorization { users: [ {user: a, password: b} ] } }\n" },
        { "token", "cluster { port: CP, authorization { token: abc } }\n" },
        { "unknown", "cluster { port: CP, foo: 1 }\n" },
        { "auth_unknown", "cluster { port: CP, authorization { bar: 1 } }\n" },
        { "bad_route", "cluster { port: CP, routes: [\"nats://127.0.0.1:1\", \"::bad\"] }\n" },
        { "dup_route", "cluster { port: CP, routes: [\"nats://127.0.0.1:1\", \"nats://127.0.0.1:1\"] }\n" },
        { "responses", "cluster { port: CP, permissions: { import: \"foo\", allow_responses: true } }\n" },
        { "write_timeout", "cluster { port: CP, write_timeout: never }\n" },
        { "ping_interval_bad", "cluster { port: CP, ping_interval: \"2x\" }\n" },
        { "ping_interval_long", "cluster { port: CP, ping_interval: \"40s\" }\n" },
        { "int_write_deadline", "cluster { port: CP, write_deadline: 4 }\n" },
        { "compression_rtt", "cluster { port: CP, compression: { mode: accept, rtt_thresholds: [\"bad\"] } }\n" },
        // Checked by nats-server only at start:
        { "compression_bogus", "cluster { port: CP, compression: bogus }\n" },
        { "compression_uncompressed", "cluster { port: CP, compression: s2_uncompressed }\n" },
        { "compression_map", "cluster { port: CP, compression: { mode: \"x\" } }\n" },
        { "advertise", "cluster { port: CP, advertise: \"a:b:c\" }\n" },
        { "advertise_port", "cluster { port: CP, advertise: \"h:x\" }\n" },
    };

    [SkippableTheory]
    [MemberData(nameof(BadFiles))]
    public void Bad_cluster_blocks_are_refused_by_both_in_the_same_words(string name, string text)
    {
        string oracle = Prerequisites.RequireOracle214(output);
        using var d = new TempDir();
        string file = d.Write(name + ".conf", text.Replace("CP", TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture), StringComparison.Ordinal));

        var ex = Assert.Throws<ConfigException>(() => CommandLine.Parse(["-t", "-c", file]));
        string ours = Position().Replace(Assert.Single(ex.Message.Split('\n')), "");
        output.WriteLine("ours: " + ex.Message);

        var (exit, theirs) = RunOracle(oracle, ["-t", "-c", file], TimeSpan.FromSeconds(10));
        if (exit == 0)
        {
            // -t passed it: the check is at start.
            (exit, theirs) = RunOracle(oracle, ["-c", file, "-p", TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture)], TimeSpan.FromSeconds(5));
        }
        Assert.NotNull(exit);
        Assert.NotEqual(0, exit);
        Assert.Contains(ours, theirs, StringComparison.Ordinal);
    }

    public static TheoryData<string[]> BadFlags() => new()
    {
        new[] { "-cluster", "127.0.0.1:CP" },
        new[] { "-cluster", "localhost:CP" },
        new[] { "-cluster", "nats://127.0.0.1" },
        new[] { "-cluster", "nats://127.0.0.1:abc" },
        new[] { "-cluster", "nats://a b:CP" },
        new[] { "-cluster", "::" },
        new[] { "-cluster", "nats://127.0.0.1:" },
        new[] { "-cluster", "nats://u@127.0.0.1:CP" },
        new[] { "-routes", "nats://127.0.0.1:CP" },
        new[] { "-cluster", "nats://127.0.0.1:CP", "-cluster_name", "a b" },
        new[] { "-cluster", "nats://127.0.0.1:CP", "-cluster_advertise", "a:b:c" },
    };

    [SkippableTheory]
    [MemberData(nameof(BadFlags))]
    public void Bad_cluster_flags_are_refused_by_both_in_the_same_words(string[] template)
    {
        string oracle = Prerequisites.RequireOracle214(output);
        string cp = TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture);
        var args = template.Select(a => a.Replace("CP", cp, StringComparison.Ordinal)).ToArray();

        var ours = Assert.Throws<CommandLineException>(() => CommandLine.Parse(args));
        output.WriteLine("ours: " + ours.Message);
        Assert.Equal(1, ours.ExitCode);

        var (exit, theirs) = RunOracle(oracle, [.. args, "-p", TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture)], TimeSpan.FromSeconds(5));
        Assert.Equal(1, exit);
        Assert.Contains(ours.Message, theirs, StringComparison.Ordinal);
    }

    [SkippableFact]
    public void A_full_stage_one_block_is_valid_for_both()
    {
        string oracle = Prerequisites.RequireOracle214(output);
        using var d = new TempDir();
        string file = d.Write("good.conf", """
            cluster {
              name: "east"
              host: 127.0.0.1
              port: 6300
              advertise: "east.example.com:6300"
              no_advertise: true
              connect_retries: 5
              connect_backoff: true
              authorization { user: ruser, password: "s3cret", timeout: 1.5 }
              routes: ["nats-route://ruser:s3cret@127.0.0.1:6301", "nats://[::1]:6302"]
              pool_size: -1
              compression: accept
              ping_interval: "20s"
              ping_max: 4
              write_deadline: "3s"
              write_timeout: close
            }
            """);
        Assert.Equal(CommandLineAction.TestConfig, CommandLine.Parse(["-t", "-c", file]).Action);
        var (exit, theirs) = RunOracle(oracle, ["-t", "-c", file], TimeSpan.FromSeconds(10));
        Assert.Equal(0, exit);
        Assert.Contains("is valid", theirs, StringComparison.Ordinal);
    }

    [SkippableTheory]
    [InlineData("port")]
    [InlineData("host")]
    public void Reload_refusal_reads_as_nats_servers(string what)
    {
        string oracle = Prerequisites.RequireOracle214(output);
        using var d = new TempDir();
        string cp = TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture);
        string before = $"cluster {{ host: 127.0.0.1, port: {cp} }}\n";
        string after = what == "port"
            ? $"cluster {{ host: 127.0.0.1, port: {TestPorts.Next()} }}\n"
            : $"cluster {{ host: 127.0.0.2, port: {cp} }}\n";
        string file = d.Write("r.conf", before);
        var old = ConfigLoader.Load(file).Cluster;
        File.WriteAllText(file, after);
        var next = ConfigLoader.Load(file).Cluster;
        string ours = ClusterReload.Validate(old, next)!;
        output.WriteLine("ours: " + ours);
        Assert.NotNull(ours);

        File.WriteAllText(file, before);
        var psi = new ProcessStartInfo(oracle) { RedirectStandardError = true, RedirectStandardOutput = true, UseShellExecute = false };
        foreach (var a in new[] { "-c", file, "-p", TestPorts.Next().ToString(System.Globalization.CultureInfo.InvariantCulture) }) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var log = new StringBuilder();
        var ready = new ManualResetEventSlim();
        var reloaded = new ManualResetEventSlim();
        p.ErrorDataReceived += (_, e) =>
        {
            // Null marks the end of the stream: nothing to record.
            if (e.Data is not { } line) return;
            lock (log) log.AppendLine(line);
            if (line.Contains("Server is ready", StringComparison.Ordinal)) ready.Set();
            if (line.Contains("reload", StringComparison.OrdinalIgnoreCase)) reloaded.Set();
        };
        p.BeginErrorReadLine();
        p.BeginOutputReadLine();
        try
        {
            Assert.True(ready.Wait(TimeSpan.FromSeconds(10)), "nats-server did not start");
            File.WriteAllText(file, after);
            using (var kill = Process.Start("kill", ["-HUP", p.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)])) kill.WaitForExit();
            Assert.True(reloaded.Wait(TimeSpan.FromSeconds(10)), "nats-server logged nothing about the reload");
            Thread.Sleep(200);
        }
        finally
        {
            p.Kill();
            p.WaitForExit();
        }
        string theirs;
        lock (log) theirs = log.ToString();
        output.WriteLine(theirs);
        Assert.Contains("Failed to reload server configuration: " + ours, theirs, StringComparison.Ordinal);
    }
}
