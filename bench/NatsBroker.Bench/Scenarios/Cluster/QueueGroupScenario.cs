using System.Diagnostics;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Cluster;

/// <summary>
/// One publisher ("pub0"), M members of one queue group ("q0" ... "qM-1"); every message must reach exactly one
/// member. msg/s = messages published per second. The check: the members' counts add up to what was published
/// (no loss), and still do after a grace period and a PING/PONG on every member (no duplicates from a second
/// node). The note gives each member's share: how the servers spread a group across nodes (nats-server picks a
/// random member of the group, local or behind a route, for a message from a client: client.go:processMsgResults).
/// </summary>
internal sealed class QueueGroupScenario(string name, string title, int members, int payload, long defaultCount, bool cold = false) : IScenario
{
    public string Name => name;

    public string Title => title;

    public string Generator => "raw";

    public int PayloadBytes => payload;

    public bool NeedsJetStream => false;

    public bool ReportsLatency => false;

    public long DefaultCount => defaultCount;

    public ScenarioResult Run(ScenarioContext ctx)
    {
        string subject = "bench.q." + ctx.RunId;
        long total = ctx.Count;
        long warm = cold ? 0 : Math.Clamp(total / 2, 100, 2_000_000);
        using var group = new QueueMembers(members);
        for (int i = 0; i < members; i++)
        {
            var c = ctx.Connect("q" + i, readBuffer: 1024 * 1024);
            c.Send($"SUB {subject} g{ctx.RunId} {i + 1}\r\n");
            c.Flush();
            ctx.Subscribed("q" + i, c);
            group.Conns[i] = c;
        }

        var frame = Frames.Pub(subject, null, payload);
        var pub = new BulkPublisher(ctx.Connect("pub0"), frame);
        // The same ~24 MB in flight as the pub/sub rows, against the sum (members share the messages).
        long window = Math.Max(2L * pub.FramesPerBatch, 24L * 1024 * 1024 / frame.Length);
        var gate = new FlowGate([group], window, ctx);
        var readers = new Thread[members];
        for (int i = 0; i < members; i++)
        {
            int idx = i;
            readers[i] = ctx.StartWorker("queue-member", () => group.Read(idx, payload));
        }

        pub.PublishAndFlush(warm, gate);
        group.WaitFor(ctx, warm);
        ctx.MarkStart();
        pub.PublishAndFlush(total, gate);
        long end = group.WaitFor(ctx, warm + total);
        ctx.MarkEnd(end);

        // A duplicate would come over a route after the last original: give the routes time, then stop every member
        // at a PONG (all its server had for it was read before).
        Thread.Sleep(200);
        group.Stop();
        foreach (var c in group.Conns)
        {
            c!.Send("PING\r\n"u8);
        }

        foreach (var t in readers)
        {
            ctx.Join(t, "queue members' PONG");
        }

        long got = group.Received;
        if (got != warm + total)
        {
            throw new InvalidDataException($"queue members received {got} messages for {warm + total} published ({got - warm - total} duplicates)");
        }

        var r = ctx.Result;
        r.Messages = total;
        r.Deliveries = total;
        r.Note = "per member " + string.Join('/', group.Counts());
        if (gate.Stalls > 0)
        {
            r.Note += $"; flow gate stalled {gate.Stalls}x";
        }

        return r;
    }

    /// <summary>The group's members: each counts its MSGs on its own thread; the gate watches the sum.</summary>
    private sealed class QueueMembers(int n) : IReceiveCounter, IDisposable
    {
        private readonly long[] _counts = new long[n];
        private readonly ManualResetEventSlim _reached = new(false);
        private long _sum;
        private long _target = long.MaxValue;
        private long _reachedTs;
        private volatile bool _stopping;

        public RawConnection?[] Conns { get; } = new RawConnection?[n];

        public long Received => Volatile.Read(ref _sum);

        /// <summary>Each member's count; read after the members stopped.</summary>
        public long[] Counts() => [.. _counts];

        public void Stop() => _stopping = true;

        public void Dispose() => _reached.Dispose();

        /// <summary>Counts member <paramref name="i"/>'s messages until the PONG that follows <see cref="Stop"/>.</summary>
        public void Read(int i, int payload)
        {
            var r = Conns[i]!.Reader;
            while (true)
            {
                switch (r.Next())
                {
                    case FrameKind.Msg:
                    case FrameKind.HMsg:
                        if (r.PayloadLength != payload)
                        {
                            throw new InvalidDataException($"member {i}: payload {r.PayloadLength} B, expected {payload} B");
                        }

                        _counts[i]++;
                        if (Interlocked.Increment(ref _sum) == Volatile.Read(ref _target))
                        {
                            Volatile.Write(ref _reachedTs, Stopwatch.GetTimestamp());
                            _reached.Set();
                        }

                        break;
                    case FrameKind.Pong when _stopping:
                        return;
                    case FrameKind.Err:
                        throw new InvalidOperationException($"member {i}: server error: " + r.LineText);
                    default:
                        break;
                }
            }
        }

        /// <summary>Waits (bounded by the run) until the members have <paramref name="n"/> messages; returns when they had.</summary>
        public long WaitFor(ScenarioContext ctx, long n)
        {
            _reached.Reset();
            Volatile.Write(ref _target, n);
            if (Received >= n)
            {
                return Stopwatch.GetTimestamp();
            }

            ctx.Wait(_reached, $"queue members to receive {n} messages (have {Received})");
            return Volatile.Read(ref _reachedTs);
        }
    }
}
