using System.Globalization;
using NatsBroker.Auth;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Issue 7: a flood of wrong passwords for a bcrypt user must not stall other clients. The same flood runs against
/// our broker and against nats-server (the oracle) in one test, alternating rounds so that machine load hits both
/// alike; our request/reply p99 under the flood must stay within nats-server's. Skipped without nats-server
/// (failing under CI=true).
/// <para>The p99 compared is time-weighted (<see cref="BcryptFlood.TimeWeightedPercentile"/>): with hashing on the
/// socket threads ours stalled for up to a second now and then, between thousands of fast round trips, and a plain
/// per-sample p99 of a closed-loop client hid that. The margin is generous on purpose: the broken behaviour was
/// several times nats-server's (time-weighted p99 0.7-1.6 s against ~0.2 s here), while run-to-run noise on a
/// loaded 2-core box is tens of percent.</para>
/// </summary>
public class BcryptFloodLatencyTests(ITestOutputHelper output)
{
    private const int Flooders = 4;
    private const int Requesters = 3;
    private const int Rounds = 2;
    private static readonly TimeSpan RoundLength = TimeSpan.FromSeconds(2);
    /// <summary>Ours may be up to 1.5x nats-server's p99 plus 10 ms (scheduler noise at this scale).</summary>
    private const double Margin = 1.5;
    private const double SlackMs = 10;

    [SkippableFact]
    public async Task Bad_password_flood_does_not_stall_request_reply_more_than_on_nats_server()
    {
        Prerequisites.RequireGoServer(output);
        string config = BcryptFlood.Config(Bcrypt.Hash("right-password", Bcrypt.DefaultCost));
        await using var ours = await ServerProcess.StartAsync(ServerKind.Ours, config, output);
        await using var go = await ServerProcess.StartAsync(ServerKind.Go, config, output);

        var oursRounds = new List<BcryptFlood.Result>();
        var goRounds = new List<BcryptFlood.Result>();
        for (int round = 0; round < Rounds; round++)
        {
            foreach (var (server, results) in new[] { (ours, oursRounds), (go, goRounds) })
            {
                var r = await Task.Run(() => BcryptFlood.Run(server.Port, Flooders, Requesters, RoundLength));
                results.Add(r);
                output.WriteLine(string.Create(CultureInfo.InvariantCulture,
                    $"{server.Kind,-4} round {round + 1}: {r.RoundTripsMs.Length,6} requests, p50 {r.Percentile(50),7:F2} ms, p99 {r.Percentile(99),7:F2} ms, time-weighted p99 {r.TimeWeightedPercentile(99),7:F1} ms, max {r.RoundTripsMs.Max(),7:F1} ms, rejected logins {r.FloodAttempts}"));
            }
        }

        var oursAll = oursRounds.SelectMany(r => r.RoundTripsMs).ToArray();
        var goAll = goRounds.SelectMany(r => r.RoundTripsMs).ToArray();
        double oursP99 = BcryptFlood.TimeWeightedPercentile(oursAll, 99);
        double goP99 = BcryptFlood.TimeWeightedPercentile(goAll, 99);
        output.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"pooled: ours p50 {BcryptFlood.Percentile(oursAll, 50):F2} ms p99 {BcryptFlood.Percentile(oursAll, 99):F2} ms time-weighted p99 {oursP99:F1} ms; " +
            $"nats-server p50 {BcryptFlood.Percentile(goAll, 50):F2} ms p99 {BcryptFlood.Percentile(goAll, 99):F2} ms time-weighted p99 {goP99:F1} ms"));

        // The flood was real on both sides: the servers checked and rejected the bad passwords.
        Assert.True(oursRounds.Sum(r => r.FloodAttempts) >= Flooders, $"ours rejected only {oursRounds.Sum(r => r.FloodAttempts)} logins");
        Assert.True(goRounds.Sum(r => r.FloodAttempts) >= Flooders, $"nats-server rejected only {goRounds.Sum(r => r.FloodAttempts)} logins");
        // Time-weighted percentiles need the window covered, not many samples; nats-server manages ~15 per second here.
        Assert.True(oursAll.Length >= 30 && goAll.Length >= 30, $"too few samples: ours {oursAll.Length}, nats-server {goAll.Length}");
        Assert.True(oursP99 <= goP99 * Margin + SlackMs,
            string.Create(CultureInfo.InvariantCulture, $"request/reply time-weighted p99 under a bad-password flood: ours {oursP99:F1} ms, nats-server {goP99:F1} ms (allowed {goP99 * Margin + SlackMs:F1} ms)"));
    }
}
