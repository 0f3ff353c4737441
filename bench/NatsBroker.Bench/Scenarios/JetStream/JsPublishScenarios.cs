using System.Diagnostics;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>Synchronous publish: one message, wait for its PubAck, next. Latency per publish.</summary>
internal sealed class JsSyncPublishScenario : JsScenarioBase
{
    private readonly string _storage;

    public JsSyncPublishScenario(string name, int payload, string storage, long defaultCount)
        : base(name, $"JetStream sync publish, {storage}", payload, defaultCount, latency: true)
    {
        _storage = storage;
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "SP");
        string subject = "bjs.sp." + ctx.RunId;
        api.CreateStream(stream, subject, _storage);
        var c = ctx.Connect("js-sync-pub", headers: true);
        string inbox = "_INBOX.ack." + ctx.RunId;
        c.Send($"SUB {inbox} 1\r\n");
        c.Flush();
        var frame = Frames.Pub(subject, inbox, PayloadBytes);
        long n = ctx.Count;
        long w = Warm(n, 10, 2000);
        Publish(c, frame, w, new Histogram());
        var h = new Histogram();
        ctx.MarkStart();
        Publish(c, frame, n, h);
        ctx.MarkEnd();
        VerifyStreamCount(api, stream, w + n);
        var r = ctx.Result;
        r.Messages = n;
        r.P50Us = h.PercentileMicros(50);
        r.P95Us = h.PercentileMicros(95);
        r.P99Us = h.PercentileMicros(99);
        return r;
    }

    private static void Publish(RawConnection c, byte[] frame, long n, Histogram h)
    {
        var r = c.Reader;
        for (long i = 0; i < n; i++)
        {
            long t0 = Stopwatch.GetTimestamp();
            c.Send(frame);
            while (true)
            {
                var k = r.Next();
                if (k == FrameKind.Msg)
                {
                    if (r.Payload.IndexOf("\"error\""u8) >= 0)
                    {
                        throw new InvalidOperationException("publish failed: " + System.Text.Encoding.UTF8.GetString(r.Payload));
                    }

                    break;
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

            h.RecordTicks(Stopwatch.GetTimestamp() - t0);
        }
    }
}

/// <summary>Pipelined publish with up to 256 messages awaiting their PubAck.</summary>
internal sealed class JsAsyncPublishScenario : JsScenarioBase
{
    private readonly string _storage;

    private readonly bool _persistAsync;

    public JsAsyncPublishScenario(string name, int payload, string storage, long defaultCount, bool persistAsync = false)
        : base(name, $"JetStream async publish (256 in flight), {storage}{(persistAsync ? " persist_mode async" : "")}", payload, defaultCount, latency: false)
    {
        _storage = storage;
        _persistAsync = persistAsync;
    }

    public override ScenarioResult Run(ScenarioContext ctx)
    {
        var api = JsApi.Open(ctx);
        string stream = StreamName(ctx, "AP");
        string subject = "bjs.ap." + ctx.RunId;
        // nats-server before 2.12 ignores persist_mode (an unknown field): it stores as a plain file stream.
        api.CreateStream(stream, subject, _storage, _persistAsync ? ",\"persist_mode\":\"async\"" : "");
        var p = new AsyncJsPublisher(ctx, subject, PayloadBytes, 256);
        long n = ctx.Count;
        long w = Warm(n, 100, 20_000);
        p.Publish(w);
        ctx.MarkStart();
        p.Publish(n);
        ctx.MarkEnd(p.EndTimestamp);
        VerifyStreamCount(api, stream, w + n);
        ctx.Result.Messages = n;
        return ctx.Result;
    }
}
