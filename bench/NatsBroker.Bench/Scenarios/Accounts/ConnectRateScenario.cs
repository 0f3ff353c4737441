using System.Diagnostics;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Accounts;

/// <summary>
/// Connect rate with authentication (issue 14: "connect rate with nkey and JWT authentication"): W threads each open a
/// connection, read INFO, send CONNECT with the credentials (signing INFO's nonce), PING, wait for PONG and close,
/// back to back. msg/s = completed logins per second; the latency columns are one login's duration.
/// </summary>
internal sealed class ConnectRateScenario(string name, string title, string config, Func<string?, string> fields, int workers = 4, long defaultCount = 2_000) : IScenario
{
    private readonly Lazy<string> _configFile = new(() => BenchAccounts.WriteConfig(name, config));

    public string Name => name;
    public string Title => title;
    public string Generator => "raw";
    public int PayloadBytes => 0;
    public bool NeedsJetStream => false;
    public bool ReportsLatency => true;
    public long DefaultCount => defaultCount;

    public IReadOnlyList<string> ServerArgs => ["-c", _configFile.Value];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        long perWorker = Math.Max(1, ctx.Count / workers);
        // A few logins first, so both servers have loaded their signature code before the window.
        for (int i = 0; i < 20; i++)
        {
            Login(ctx, null);
        }

        var hists = new Histogram[workers];
        var threads = new Thread[workers];
        using var go = new ManualResetEventSlim(false);
        for (int w = 0; w < workers; w++)
        {
            var h = hists[w] = new Histogram();
            threads[w] = ctx.StartWorker("login", () =>
            {
                go.Wait();
                for (long i = 0; i < perWorker && !ctx.Stopping; i++)
                {
                    Login(ctx, h);
                }
            });
        }

        ctx.MarkStart();
        go.Set();
        foreach (var t in threads)
        {
            ctx.Join(t, "logins");
        }

        ctx.MarkEnd();
        var all = new Histogram();
        foreach (var h in hists)
        {
            all.Add(h);
        }

        var r = ctx.Result;
        r.Messages = all.Count;
        r.Deliveries = all.Count;
        r.P50Us = all.PercentileMicros(50);
        r.P95Us = all.PercentileMicros(95);
        r.P99Us = all.PercentileMicros(99);
        if (all.Count != perWorker * workers)
        {
            throw new InvalidDataException($"{all.Count} logins of {perWorker * workers}");
        }

        return r;
    }

    /// <summary>One login (connect, CONNECT+PING, PONG) and close; an -ERR fails the run.</summary>
    private void Login(ScenarioContext ctx, Histogram? h)
    {
        long t0 = Stopwatch.GetTimestamp();
        using var c = RawConnection.Connect(ctx.Endpoint, "login", TimeSpan.FromSeconds(5), auth: fields);
        h?.RecordTicks(Stopwatch.GetTimestamp() - t0);
    }
}
