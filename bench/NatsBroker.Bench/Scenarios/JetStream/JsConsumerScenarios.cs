using System.Diagnostics;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>
/// Ordered consumer as the client libraries make it: an ephemeral push consumer, ack none, flow control and
/// idle heartbeats, memory state. The stream (file) is filled first (not timed); a first consumer over its tail
/// warms up, then a second one reads the whole stream (timed from its creation).
/// </summary>
internal sealed class JsOrderedConsumerScenario : JsScenarioBase
{
    public JsOrderedConsumerScenario(string name, int payload, long defaultCount)
        : base(name, "JetStream ordered consumer, file", payload, defaultCount, latency: false)
    {
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "OC");
        string subject = "bjs.oc." + ctx.RunId;
        api.CreateStream(stream, subject, "file");
        long n = ctx.Count;
        new AsyncJsPublisher(ctx, subject, PayloadBytes, 1024).Publish(n);
        long w = Math.Min(n, Warm(n, 100, 50_000));
        Consume(ctx, api, stream, startSeq: n - w + 1, expect: w, timed: false);
        Consume(ctx, api, stream, startSeq: 1, expect: n, timed: true);
        ctx.Result.Messages = n;
        ctx.Result.Deliveries = n;
        return ctx.Result;
    }

    private void Consume(ScenarioContext ctx, JsApi api, string stream, long startSeq, long expect, bool timed)
    {
        var c = ctx.Connect("js-ordered", headers: true, readBuffer: 1024 * 1024);
        string deliver = $"_INBOX.oc.{ctx.RunId}.{startSeq}";
        c.Send($"SUB {deliver} 1\r\n");
        c.Flush();
        using var done = new ManualResetEventSlim(false);
        long end = 0;
        int payload = PayloadBytes;
        ctx.StartWorker("ordered-reader", () =>
        {
            var r = c.Reader;
            long got = 0;
            long lastSeq = startSeq - 1;
            while (got < expect)
            {
                var k = r.Next();
                if (k == FrameKind.Msg || (k == FrameKind.HMsg && r.Status == 0))
                {
                    if (r.PayloadLength != payload)
                    {
                        throw new InvalidDataException($"payload {r.PayloadLength} B, expected {payload} B");
                    }

                    long seq = StreamSeqFromAckReply(r.Reply);
                    if (seq > 0 && seq != lastSeq + 1)
                    {
                        throw new InvalidDataException($"ordered consumer gap: stream seq {seq} after {lastSeq}");
                    }

                    lastSeq = seq > 0 ? seq : lastSeq + 1;
                    got++;
                }
                else if (k == FrameKind.HMsg && r.Status == 100 && !r.Reply.IsEmpty)
                {
                    // flow control request: answer with an empty message to the reply subject
                    var rep = r.Reply;
                    var buf = new byte[rep.Length + 12];
                    "PUB "u8.CopyTo(buf);
                    rep.CopyTo(buf.AsSpan(4));
                    " 0\r\n\r\n"u8.CopyTo(buf.AsSpan(4 + rep.Length));
                    c.Send(buf.AsSpan(0, 4 + rep.Length + 6));
                }
                else if (k == FrameKind.Err)
                {
                    throw new InvalidOperationException("server error: " + r.LineText);
                }
            }

            end = Stopwatch.GetTimestamp();
            done.Set();
        });

        string policy = startSeq <= 1 ? "\"deliver_policy\":\"all\"" : $"\"deliver_policy\":\"by_start_sequence\",\"opt_start_seq\":{startSeq}";
        string cfg = $"{{\"stream_name\":\"{stream}\",\"config\":{{\"deliver_subject\":\"{deliver}\",{policy},\"ack_policy\":\"none\",\"max_deliver\":1,\"replay_policy\":\"instant\",\"flow_control\":true,\"idle_heartbeat\":5000000000,\"mem_storage\":true,\"num_replicas\":1,\"inactive_threshold\":5000000000}}}}";
        if (timed)
        {
            ctx.MarkStart();
        }

        api.Call($"$JS.API.CONSUMER.CREATE.{stream}", cfg);
        ctx.Wait(done, $"{expect} messages from the ordered consumer");
        if (timed)
        {
            ctx.MarkEnd(end);
        }
    }

    /// <summary>$JS.ACK.stream.consumer.delivered.sseq.cseq.ts.pending (older servers: no domain/hash tokens).</summary>
    internal static long StreamSeqFromAckReply(ReadOnlySpan<byte> reply)
    {
        if (!reply.StartsWith("$JS.ACK."u8))
        {
            return 0;
        }

        Span<int> dots = stackalloc int[16];
        int n = 0;
        for (int i = 0; i < reply.Length && n < dots.Length; i++)
        {
            if (reply[i] == (byte)'.')
            {
                dots[n++] = i;
            }
        }

        // tokens: 0 $JS 1 ACK 2 stream 3 consumer 4 delivered 5 sseq 6 cseq 7 ts 8 pending  (9 tokens, 8 dots)
        // v2: $JS.ACK.domain.hash.stream.consumer.delivered.sseq.cseq.ts.pending.token (12 tokens)
        int tokens = n + 1;
        int sseqTok = tokens >= 11 ? 7 : 5;
        if (sseqTok >= tokens)
        {
            return 0;
        }

        int s = dots[sseqTok - 1] + 1;
        int e = sseqTok < n ? dots[sseqTok] : reply.Length;
        return System.Buffers.Text.Utf8Parser.TryParse(reply[s..e], out long v, out _) ? v : 0;
    }
}

/// <summary>Durable pull consumer with explicit acks, fetching batches of 500.</summary>
internal sealed class JsFetchScenario : JsScenarioBase
{
    public JsFetchScenario(string name, int payload, long defaultCount)
        : base(name, "JetStream durable pull fetch (batch 500), file", payload, defaultCount, latency: false)
    {
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "PF");
        string subject = "bjs.pf." + ctx.RunId;
        api.CreateStream(stream, subject, "file");
        long n = ctx.Count;
        long w = Warm(n, 500, 50_000);
        new AsyncJsPublisher(ctx, subject, PayloadBytes, 1024).Publish(w + n);
        api.CreateDurablePull(stream, "bench");
        var f = new PullFetcher(ctx, stream, "bench", 500, PayloadBytes);
        f.Fetch(w);
        ctx.MarkStart();
        f.Fetch(n);
        ctx.MarkEnd(f.EndTimestamp);
        f.FlushConnection();
        ctx.Result.Messages = n;
        ctx.Result.Deliveries = n;
        return ctx.Result;
    }
}
