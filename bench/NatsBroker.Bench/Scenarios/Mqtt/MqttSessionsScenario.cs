using System.Globalization;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// Memory of idle MQTT sessions (issue 13: "10,000 idle sessions' memory"): N clients CONNECT with a clean session
/// and stay idle; (RSS 1 s after the last CONNACK − RSS before) / N is the broker's memory per session. RSS is VmRSS
/// summed over the broker and its children (ours serves MQTT from a gateway process the core starts). Afterwards
/// every session answers a PINGREQ, so none was dropped.
/// <para>
/// The table has one rate column, so this row reports <b>sessions per MB of RSS</b> in it (Messages = sessions,
/// "elapsed" = MB of RSS growth): higher is better and the ratio reads as the other rows'. The per-session figure
/// and the connect rate are in each run's note; the CPU columns are per session connect.
/// </para>
/// </summary>
internal sealed class MqttSessionsScenario(string name, string title, int sessions) : IScenario
{
    /// <summary>Connecting threads: CONNECT round trips overlap, as many devices logging in at once.</summary>
    private const int Connectors = 8;

    public string Name => name;

    public string Title => title;

    public string Generator => "mqtt";

    public int PayloadBytes => 0;

    public bool NeedsJetStream => true;

    public bool ReportsLatency => false;

    public long DefaultCount => sessions;

    public IReadOnlyList<string> ServerArgs => ["-c", BenchMqtt.NextConfig()];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        BenchMqtt.Prepare(ctx);
        // Full mode scales counts up; the row stays at its session count. Each session costs this process one file
        // descriptor and ours' gateway two (the client socket and its link to the core), all under `ulimit -n`.
        int wanted = (int)Math.Min(ctx.Count, sessions);
        long fdLimit = OpenFileLimit();
        int n = (int)Math.Min(wanted, Math.Max(100, (fdLimit - 1024) / 2));
        // A few sessions first (not measured): first-use costs (pools, JIT, the session stream) are not per session.
        for (int i = 0; i < 10; i++)
        {
            using var c = BenchMqtt.Connect(ctx, "warm" + i.ToString(CultureInfo.InvariantCulture));
            c.Send(MqttPackets.Disconnect);
        }

        Thread.Sleep(1000);
        long before = ProcStats.TreeRssBytes(ctx.ServerPid);
        var conns = new MqttConnection[n];
        ctx.MarkStart();
        var threads = new Thread[Connectors];
        for (int t = 0; t < Connectors; t++)
        {
            int first = t;
            threads[t] = ctx.StartWorker("mqtt-connector", () =>
            {
                for (int i = first; i < n; i += Connectors)
                {
                    conns[i] = BenchMqtt.Connect(ctx, "idle" + i.ToString(CultureInfo.InvariantCulture), readBuffer: 256);
                }
            });
        }

        foreach (var t in threads)
        {
            ctx.Join(t, $"{n} MQTT sessions to connect");
        }

        ctx.MarkEnd();
        double connectSeconds = ctx.Result.ElapsedSeconds;
        Thread.Sleep(1000);
        long after = ProcStats.TreeRssBytes(ctx.ServerPid);
        if (before < 0 || after < 0)
        {
            throw new InvalidOperationException($"cannot read the broker's RSS from /proc/{ctx.ServerPid}/status");
        }

        // Every session is still there: PINGREQ on all, then every PINGRESP.
        foreach (var c in conns)
        {
            c.Send(MqttPackets.PingReq);
        }

        foreach (var c in conns)
        {
            if (c.Next() != MqttPackets.PingResp)
            {
                throw new InvalidDataException($"an idle session got packet 0x{c.Header:X2} instead of PINGRESP");
            }
        }

        // A floor of 256 B per session keeps the rate finite when RSS did not grow (small smoke counts, an
        // allocator that had room); the note keeps the measured figure.
        long growth = Math.Max(after - before, 256L * n);
        var r = ctx.Result;
        r.Messages = n;
        r.ElapsedSeconds = growth / 1048576.0;
        string limited = n < wanted ? $"; {n} of {wanted} sessions: ulimit -n {fdLimit} (ours' gateway needs 2 descriptors per session)" : "";
        r.Note = string.Create(CultureInfo.InvariantCulture,
            $"{n} sessions: {(after - before) / 1024.0 / n:0.0} KB RSS per session (RSS {before / 1048576.0:0.0} -> {after / 1048576.0:0.0} MB), {n / connectSeconds:0} connects/s{limited}");
        return r;
    }

    /// <summary>The soft RLIMIT_NOFILE of this process (children inherit it), from /proc/self/limits.</summary>
    private static long OpenFileLimit()
    {
        foreach (string line in File.ReadLines("/proc/self/limits"))
        {
            if (!line.StartsWith("Max open files", StringComparison.Ordinal))
            {
                continue;
            }

            var parts = line["Max open files".Length..].Split(' ', StringSplitOptions.RemoveEmptyEntries);
            return parts.Length > 0 && long.TryParse(parts[0], NumberStyles.None, CultureInfo.InvariantCulture, out long v) ? v : 1024;
        }

        return 1024;
    }
}
