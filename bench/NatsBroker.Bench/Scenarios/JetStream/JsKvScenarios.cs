using System.Diagnostics;
using System.Globalization;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>
/// Key-value put and get as the KV clients do them (issue 8's "KV put/get" rows), one request at a time: a bucket is
/// the stream <c>KV_&lt;bucket&gt;</c> on <c>$KV.&lt;bucket&gt;.&gt;</c> with history 1, direct get allowed (nats.go and
/// NATS.Net's bucket settings); put = a publish to <c>$KV.&lt;bucket&gt;.&lt;key&gt;</c> waiting for its PubAck; get =
/// <c>$JS.API.DIRECT.GET.KV_&lt;bucket&gt;.$KV.&lt;bucket&gt;.&lt;key&gt;</c> (last message of the key). Keys cycle
/// over 1,000. Latency per operation.
/// </summary>
internal sealed class JsKvScenario : JsScenarioBase
{
    private const int Keys = 1000;
    private readonly bool _get;

    public JsKvScenario(string name, int payload, bool get, long defaultCount)
        : base(name, get ? "KV get (direct get of the last value), file" : "KV put (wait for each PubAck), file", payload, defaultCount, latency: true)
    {
        _get = get;
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string bucket = "B" + ctx.RunId;
        string stream = "KV_" + bucket;
        api.CreateStream(stream, $"$KV.{bucket}.>", "file",
            ",\"max_msgs_per_subject\":1,\"discard\":\"new\",\"allow_rollup_hdrs\":true,\"deny_delete\":true,\"allow_direct\":true");
        var c = ctx.Connect("kv", headers: true);
        string inbox = "_INBOX.kv." + ctx.RunId;
        c.Send($"SUB {inbox} 1\r\n");
        c.Flush();
        var puts = new byte[Keys][];
        for (int k = 0; k < Keys; k++)
        {
            puts[k] = Frames.Pub($"$KV.{bucket}.k{k.ToString(CultureInfo.InvariantCulture)}", inbox, PayloadBytes);
        }

        byte[][] ops = puts;
        if (_get)
        {
            Run(c, puts, Keys, new Histogram(), expectPayload: -1);
            ops = new byte[Keys][];
            for (int k = 0; k < Keys; k++)
            {
                ops[k] = Frames.Pub($"$JS.API.DIRECT.GET.{stream}.$KV.{bucket}.k{k.ToString(CultureInfo.InvariantCulture)}", inbox, 0);
            }
        }

        long n = ctx.Count;
        long w = Warm(n, 10, 2000);
        int expect = _get ? PayloadBytes : -1;
        Run(c, ops, w, new Histogram(), expect);
        var h = new Histogram();
        ctx.MarkStart();
        Run(c, ops, n, h, expect);
        ctx.MarkEnd();
        // Both passes start at key 0: the puts wrote the first max(w, n) keys (all of them for the gets).
        long expected = _get ? Keys : Math.Min(Keys, Math.Max(w, n));
        long keys = api.StreamMessages(stream);
        if (keys != expected)
        {
            throw new InvalidDataException($"bucket holds {keys} values, expected {expected}");
        }

        var r = ctx.Result;
        r.Messages = n;
        r.P50Us = h.PercentileMicros(50);
        r.P95Us = h.PercentileMicros(95);
        r.P99Us = h.PercentileMicros(99);
        return r;
    }

    /// <param name="expectPayload">Gets: the value's size (a reply without it is an error); puts: -1 (a PubAck).</param>
    private static void Run(RawConnection c, byte[][] ops, long n, Histogram h, int expectPayload)
    {
        var r = c.Reader;
        for (long i = 0; i < n; i++)
        {
            long t0 = Stopwatch.GetTimestamp();
            c.Send(ops[i % ops.Length]);
            while (true)
            {
                var k = r.Next();
                if (k is FrameKind.Msg or FrameKind.HMsg)
                {
                    if (k == FrameKind.HMsg && r.Status is >= 400)
                    {
                        throw new NotSupportedByServerException($"status {r.Status} for {System.Text.Encoding.ASCII.GetString(ops[i % ops.Length]).Split('\r')[0]}");
                    }

                    if (expectPayload < 0 ? r.Payload.IndexOf("\"error\""u8) >= 0 : r.PayloadLength != expectPayload)
                    {
                        throw new InvalidOperationException("KV operation failed: " + System.Text.Encoding.UTF8.GetString(r.Payload));
                    }

                    break;
                }

                if (k == FrameKind.Err)
                {
                    throw new InvalidOperationException("server error: " + r.LineText);
                }
            }

            h.RecordTicks(Stopwatch.GetTimestamp() - t0);
        }
    }
}
