using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Core;

/// <summary>
/// P publishers blast pre-built PUB buffers on one subject, S subscribers count the MSG frames (S = 0: publish
/// only). msg/s = messages published per second (= per-subscriber rate); deliveries = msgs x S.
/// </summary>
internal sealed class PubSubScenario : IScenario
{
    private readonly int _pubs;
    private readonly int _subs;
    private readonly bool _cold;

    /// <param name="cold">No warm-up traffic: the timed part is the first traffic the fresh server process sees.</param>
    public PubSubScenario(string name, string title, int pubs, int subs, int payload, long defaultCount, bool cold = false)
    {
        _cold = cold;
        Name = name;
        Title = title;
        _pubs = pubs;
        _subs = subs;
        PayloadBytes = payload;
        DefaultCount = defaultCount;
    }

    public string Name { get; }

    public string Title { get; }

    public string Generator => "raw";

    /// <summary>
    /// BENCH_BATCHED_READS=1 makes subscribers read in SO_RCVLOWAT batches. Off by default: on this machine it did
    /// not lower the generator's CPU per message measurably.
    /// </summary>
    private static bool BatchedReads => Environment.GetEnvironmentVariable("BENCH_BATCHED_READS") == "1";

    public int PayloadBytes { get; }

    public bool NeedsJetStream => false;

    public bool ReportsLatency => false;

    public long DefaultCount { get; }

    public ScenarioResult Run(ScenarioContext ctx)
    {
        string subject = "bench.ps." + ctx.RunId;
        long perPub = Math.Max(1, ctx.Count / _pubs);
        // Warm-up long enough (about a second of traffic) for a JIT-compiled server to reach its optimised code
        // (.NET tiers up after ~100 ms of calls plus background compilation); capped by bytes for big payloads.
        long warmPerPub = _cold ? 0 : Math.Clamp(perPub / 2, 100, Math.Min(2_000_000, Math.Max(1000, 256L * 1024 * 1024 / Math.Max(1, PayloadBytes) / _pubs)));
        long total = perPub * _pubs;
        long warmTotal = warmPerPub * _pubs;

        var subs = new CountingSubscriber[_subs];
        for (int i = 0; i < _subs; i++)
        {
            var c = ctx.Connect("sub" + i, readBuffer: 1024 * 1024);
            c.Send($"SUB {subject} {i + 1}\r\n");
            c.Flush();
            ctx.Subscribed("sub" + i, c);
            if (BatchedReads)
            {
                c.EnableBatchedReads();
            }

            subs[i] = new CountingSubscriber(c, PayloadBytes);
        }

        var frame = Frames.Pub(subject, null, PayloadBytes);
        var pubs = new BulkPublisher[_pubs];
        for (int i = 0; i < _pubs; i++)
        {
            pubs[i] = new BulkPublisher(ctx.Connect("pub" + i), frame);
        }

        // Keep at most ~24 MB of frames in flight per subscriber (socket buffers included): below the 64 MB
        // slow-consumer limit, above what the loopback socket buffers hold, so the gate rarely stalls. At least
        // two send batches per publisher, or the gate could never open.
        long window = Math.Max(2L * _pubs * pubs[0].FramesPerBatch, 24L * 1024 * 1024 / frame.Length);
        var gate = new FlowGate(subs, window, ctx);
        foreach (var s in subs)
        {
            ctx.StartWorker("sub-reader", () => s.Run(warmTotal, warmTotal + total));
        }

        // Warm-up (not timed): same path, same subjects.
        foreach (var p in pubs)
        {
            p.PublishAndFlush(warmPerPub, gate);
        }

        foreach (var s in subs)
        {
            ctx.Wait(s.WarmDone, "warm-up messages at subscribers");
        }

        using var go = new ManualResetEventSlim(false);
        var threads = new Thread[_pubs];
        for (int i = 0; i < _pubs; i++)
        {
            var p = pubs[i];
            threads[i] = ctx.StartWorker("publisher", () =>
            {
                go.Wait();
                p.PublishAndFlush(perPub, gate);
            });
        }

        ctx.MarkStart();
        go.Set();
        long end = 0;
        foreach (var t in threads)
        {
            ctx.Join(t, "publishers");
        }

        foreach (var p in pubs)
        {
            end = Math.Max(end, p.EndTimestamp);
        }

        foreach (var s in subs)
        {
            ctx.Wait(s.Done, $"subscriber to receive {warmTotal + total} messages (has {s.Received})");
            end = Math.Max(end, s.DoneTimestamp);
        }

        ctx.MarkEnd(end);
        foreach (var s in subs)
        {
            s.CheckNoExtra();
        }

        var r = ctx.Result;
        r.Messages = total;
        r.Deliveries = total * _subs;
        if (gate.Stalls > 0)
        {
            r.Note = $"flow gate stalled {gate.Stalls}x";
        }

        return r;
    }
}
