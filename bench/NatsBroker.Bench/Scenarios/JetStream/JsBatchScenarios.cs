using System.Buffers.Text;
using System.Text;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>
/// Atomic batch publish (ADR-50, nats-server 2.12): one publisher sends a whole batch (Nats-Batch-Id /
/// Nats-Batch-Sequence headers, the last with Nats-Batch-Commit: 1 and a reply) in one write and waits for the
/// batch's PubAck before the next. The batch id is reused (a committed batch is gone from the server). A server
/// without atomic batches (nats-server before 2.12) answers the commit with a plain PubAck: "not supported".
/// </summary>
internal sealed class JsAtomicBatchScenario : JsScenarioBase
{
    private readonly string _storage;
    private readonly int _batch;

    public JsAtomicBatchScenario(string name, int payload, string storage, int batch, long defaultCount, string seed)
        : base(name, $"JetStream atomic batch of {batch}, {storage} (seed M3: {seed})", payload, defaultCount, latency: false)
    {
        _storage = storage;
        _batch = batch;
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "AB");
        string subject = "bjs.ab." + ctx.RunId;
        api.CreateStream(stream, subject, _storage, ",\"allow_atomic\":true");
        var c = ctx.Connect("js-atomic-batch", headers: true);
        string inbox = "_INBOX.batch." + ctx.RunId;
        c.Send($"SUB {inbox} 1\r\n");
        c.Flush();
        var buf = BuildBatch(subject, inbox, "b" + ctx.RunId, _batch, PayloadBytes);
        long batches = Math.Max(1, ctx.Count / _batch);
        long warm = Math.Max(1, batches / 5);
        Send(c, buf, warm);
        ctx.MarkStart();
        Send(c, buf, batches);
        ctx.MarkEnd();
        VerifyStreamCount(api, stream, (warm + batches) * _batch);
        ctx.Result.Messages = batches * _batch;
        return ctx.Result;
    }

    private void Send(RawConnection c, byte[] buf, long batches)
    {
        var r = c.Reader;
        for (long b = 0; b < batches; b++)
        {
            c.Send(buf);
            while (true)
            {
                var k = r.Next();
                if (k == FrameKind.Msg)
                {
                    if (r.Payload.IndexOf("\"error\""u8) >= 0) throw new InvalidOperationException("batch failed: " + Encoding.UTF8.GetString(r.Payload));
                    if (r.Payload.IndexOf("\"batch\""u8) < 0) throw new NotSupportedByServerException("no atomic batch publish (plain PubAck)");
                    break;
                }

                if (k == FrameKind.Err) throw new InvalidOperationException("server error: " + r.LineText);
            }
        }
    }

    private static byte[] BuildBatch(string subject, string inbox, string id, int count, int payload)
    {
        var p = Frames.Payload(payload);
        var ms = new MemoryStream(count * (payload + 120));
        for (int i = 1; i <= count; i++)
        {
            string hdr = $"NATS/1.0\r\nNats-Batch-Id: {id}\r\nNats-Batch-Sequence: {i}\r\n" + (i == count ? "Nats-Batch-Commit: 1\r\n" : "") + "\r\n";
            string reply = i == count ? inbox + " " : "";
            ms.Write(Encoding.ASCII.GetBytes($"HPUB {subject} {reply}{hdr.Length} {hdr.Length + payload}\r\n{hdr}"));
            ms.Write(p);
            ms.Write("\r\n"u8);
        }

        return ms.ToArray();
    }
}

/// <summary>
/// Fast-ingest batch publish (ADR-50, nats-server 2.14): one publisher, batches of N messages whose reply
/// subjects carry the batch state (<c>inbox.id.flow.fail.seq.op.$FI</c>); it keeps at most two flow windows
/// unacknowledged, follows the flow the server asks for ({"type":"ack","seq":S,"msgs":F}) and waits for the
/// final PubAck of each batch before the next. A server without fast ingest answers the first message with a
/// plain PubAck: "not supported".
/// </summary>
internal sealed class JsFastBatchScenario : JsScenarioBase
{
    private const int RequestedFlow = 500;
    private readonly string _storage;
    private readonly int _batch;
    private readonly bool _async;

    public JsFastBatchScenario(string name, int payload, string storage, bool persistAsync, int batch, long defaultCount, string seed)
        : base(name, $"JetStream fast-ingest batch of {batch}, {storage}{(persistAsync ? " persist async" : "")} (seed M3: {seed})", payload, defaultCount, latency: false)
    {
        _storage = storage;
        _batch = batch;
        _async = persistAsync;
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "FB");
        string subject = "bjs.fb." + ctx.RunId;
        api.CreateStream(stream, subject, _storage, ",\"allow_batched\":true" + (_async ? ",\"persist_mode\":\"async\"" : ""));
        var c = ctx.Connect("js-fast-batch", headers: true);
        string prefix = "_INBOX.fi" + ctx.RunId;
        string id = "f" + ctx.RunId;
        c.Send($"SUB {prefix}.{id}.> 1\r\n");
        c.Flush();
        var (buf, offsets) = BuildBatch(subject, $"{prefix}.{id}.{RequestedFlow}.fail", _batch, PayloadBytes);
        long batches = Math.Max(1, ctx.Count / _batch);
        long warm = Math.Max(1, batches / 5);
        Send(c, buf, offsets, warm);
        ctx.MarkStart();
        Send(c, buf, offsets, batches);
        ctx.MarkEnd();
        VerifyStreamCount(api, stream, (warm + batches) * _batch);
        ctx.Result.Messages = batches * _batch;
        return ctx.Result;
    }

    private void Send(RawConnection c, byte[] buf, int[] offsets, long batches)
    {
        var r = c.Reader;
        for (long b = 0; b < batches; b++)
        {
            // The first message: the server answers with the flow to start at.
            c.Send(buf.AsSpan(0, offsets[1]));
            long acked = 0;
            long flow = ReadFlow(r, ref acked, expectFinal: false);
            int sent = 1;
            bool final = false;
            while (sent < _batch)
            {
                // At most two flow windows unacknowledged (ADR-50's advice), then wait for the next flow ack.
                long window = acked + 2 * Math.Max(1, flow);
                int upTo = (int)Math.Min(_batch, window);
                if (upTo > sent)
                {
                    c.Send(buf.AsSpan(offsets[sent], offsets[upTo] - offsets[sent]));
                    sent = upTo;
                    continue;
                }

                flow = ReadFlow(r, ref acked, expectFinal: false);
            }

            while (!final)
            {
                final = ReadFlow(r, ref acked, expectFinal: true) < 0;
            }
        }
    }

    /// <summary>Reads one reply: a flow ack (returns its flow, updates <paramref name="acked"/>) or the final PubAck (returns -1).</summary>
    private static long ReadFlow(FrameReader r, ref long acked, bool expectFinal)
    {
        while (true)
        {
            var k = r.Next();
            if (k == FrameKind.Err) throw new InvalidOperationException("server error: " + r.LineText);
            if (k != FrameKind.Msg) continue;
            var p = r.Payload;
            if (p.IndexOf("\"error\""u8) >= 0) throw new InvalidOperationException("batch failed: " + Encoding.UTF8.GetString(p));
            if (p.StartsWith("{\"type\":\"ack\""u8))
            {
                long seq = Field(p, "\"seq\":"u8), msgs = Field(p, "\"msgs\":"u8);
                if (seq > acked) acked = seq;
                return msgs;
            }

            if (p.StartsWith("{\"type\":\"gap\""u8)) throw new InvalidOperationException("gap reported: " + Encoding.UTF8.GetString(p));
            if (p.IndexOf("\"batch\""u8) >= 0)
            {
                if (!expectFinal) throw new InvalidOperationException("batch ended early: " + Encoding.UTF8.GetString(p));
                return -1;
            }

            throw new NotSupportedByServerException("no fast-ingest batch publish (plain PubAck)");
        }
    }

    private static long Field(ReadOnlySpan<byte> json, ReadOnlySpan<byte> name)
    {
        int at = json.IndexOf(name);
        if (at < 0) return 0;
        Utf8Parser.TryParse(json[(at + name.Length)..], out long v, out _);
        return v;
    }

    private static (byte[] Buffer, int[] Offsets) BuildBatch(string subject, string replyBase, int count, int payload)
    {
        var p = Frames.Payload(payload);
        var ms = new MemoryStream(count * (payload + 120));
        var offsets = new int[count + 1];
        for (int i = 1; i <= count; i++)
        {
            offsets[i - 1] = (int)ms.Length;
            int op = i == 1 ? 0 : i == count ? 2 : 1;
            ms.Write(Encoding.ASCII.GetBytes($"PUB {subject} {replyBase}.{i}.{op}.$FI {payload}\r\n"));
            ms.Write(p);
            ms.Write("\r\n"u8);
        }

        offsets[count] = (int)ms.Length;
        return (ms.ToArray(), offsets);
    }
}
