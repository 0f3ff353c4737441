using System.Buffers.Binary;
using System.Buffers.Text;
using System.Diagnostics;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>
/// 250 concurrent publishers (one connection each, synchronous: publish, wait for the PubAck) into a file-backed
/// work-queue stream with a 1-minute duplicate window (every message has a Nats-Msg-Id), one durable pull
/// consumer with explicit acks. Completion time = publish to consumer receipt (timestamp in the payload).
/// </summary>
internal sealed class JsWorkQueueScenario : JsScenarioBase
{
    private const int Publishers = 250;

    public JsWorkQueueScenario(string name, int payload, long defaultCount)
        : base(name, "JetStream work queue, 250 publishers, dup window 1m, file", payload, defaultCount, latency: true)
    {
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "WQ");
        string subject = "bjs.wq." + ctx.RunId;
        api.CreateStream(stream, subject, "file", ",\"retention\":\"workqueue\",\"duplicate_window\":60000000000");
        api.CreateDurablePull(stream, "worker");
        long perPub = Math.Max(1, ctx.Count / Publishers);
        const long warmPerPub = 1;
        long total = perPub * Publishers;

        var fetcher = new PullFetcher(ctx, stream, "worker", 500, PayloadBytes);
        var conns = new RawConnection[Publishers];
        for (int i = 0; i < Publishers; i++)
        {
            conns[i] = ctx.Connect("wq-pub" + i, headers: true, readBuffer: 4096);
            conns[i].Send($"SUB _INBOX.wq.{ctx.RunId}.{i} 1\r\n");
        }

        foreach (var c in conns)
        {
            c.Flush();
        }

        var hist = new Histogram();
        using var warmed = new CountdownEvent(Publishers);
        using var go = new ManualResetEventSlim(false);
        var threads = new Thread[Publishers];
        for (int i = 0; i < Publishers; i++)
        {
            int idx = i;
            threads[i] = ctx.StartWorker("wq-publisher", () =>
            {
                var frame = new Frame(subject, $"_INBOX.wq.{ctx.RunId}.{idx}", PayloadBytes, idx);
                for (long s = 0; s < warmPerPub; s++)
                {
                    frame.PublishSync(conns[idx], s);
                }

                warmed.Signal();
                go.Wait();
                for (long s = warmPerPub; s < warmPerPub + perPub; s++)
                {
                    frame.PublishSync(conns[idx], s);
                }
            }, 256 * 1024);
        }

        // warm-up: one message per publisher through the whole path
        fetcher.Fetch(Publishers * warmPerPub);
        ctx.Wait(warmed.WaitHandle, "warm-up publishes");
        long end = 0;
        var consumer = ctx.StartWorker("wq-consumer", () =>
        {
            fetcher.Fetch(total, p =>
            {
                long ts = BinaryPrimitives.ReadInt64LittleEndian(p);
                hist.RecordTicks(Stopwatch.GetTimestamp() - ts);
            });
            end = fetcher.EndTimestamp;
        });
        ctx.MarkStart();
        go.Set();
        foreach (var t in threads)
        {
            ctx.Join(t, "publishers");
        }

        ctx.Join(consumer, $"the consumer to receive {total} messages");
        ctx.MarkEnd(end);
        fetcher.FlushConnection();
        var r = ctx.Result;
        r.Messages = total;
        r.Deliveries = total;
        r.P50Us = hist.PercentileMicros(50);
        r.P95Us = hist.PercentileMicros(95);
        r.P99Us = hist.PercentileMicros(99);
        if (hist.Count != total)
        {
            throw new InvalidDataException($"consumer saw {hist.Count} of {total} messages");
        }

        return r;
    }

    /// <summary>HPUB frame with a Nats-Msg-Id header and a timestamp in the payload, rewritten in place per message.</summary>
    private sealed class Frame
    {
        private readonly byte[] _buf;
        private readonly int _idPos;
        private readonly int _payPos;

        public Frame(string subject, string inbox, int payload, int publisher)
        {
            // Fixed-width id keeps sizes constant: "p<publisher:000>-<seq:0000000000>"
            string hdr = $"NATS/1.0\r\nNats-Msg-Id: p{publisher:000}-0000000000\r\n\r\n";
            string head = $"HPUB {subject} {inbox} {hdr.Length} {hdr.Length + payload}\r\n";
            _buf = new byte[head.Length + hdr.Length + payload + 2];
            System.Text.Encoding.ASCII.GetBytes(head + hdr).CopyTo(_buf, 0);
            _idPos = head.Length + hdr.IndexOf('-', StringComparison.Ordinal) + 1;
            _payPos = head.Length + hdr.Length;
            Frames.Payload(payload).CopyTo(_buf, _payPos);
            _buf[^2] = (byte)'\r';
            _buf[^1] = (byte)'\n';
        }

        public void PublishSync(RawConnection c, long seq)
        {
            Utf8Formatter.TryFormat(seq, _buf.AsSpan(_idPos, 10), out _, new System.Buffers.StandardFormat('D', 10));
            BinaryPrimitives.WriteInt64LittleEndian(_buf.AsSpan(_payPos), Stopwatch.GetTimestamp());
            c.Send(_buf);
            var r = c.Reader;
            while (true)
            {
                var k = r.Next();
                if (k == FrameKind.Msg)
                {
                    var p = r.Payload;
                    if (p.IndexOf("\"error\""u8) >= 0 || p.IndexOf("\"duplicate\":true"u8) >= 0)
                    {
                        throw new InvalidOperationException("publish failed: " + System.Text.Encoding.UTF8.GetString(p));
                    }

                    return;
                }

                if (k == FrameKind.HMsg && r.Status == 503)
                {
                    throw new NotSupportedByServerException("no responders for the stream subject");
                }

                if (k == FrameKind.Err)
                {
                    throw new InvalidOperationException("server error: " + r.LineText);
                }
            }
        }
    }
}
