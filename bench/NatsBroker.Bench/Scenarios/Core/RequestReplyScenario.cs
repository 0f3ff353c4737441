using System.Buffers.Text;
using System.Diagnostics;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Core;

/// <summary>
/// C clients each send a request and wait for its reply before the next; R services (optionally in one queue
/// group) echo the payload back, batching replies per read. Latency per request from a histogram.
/// </summary>
internal sealed class RequestReplyScenario : IScenario
{
    private readonly int _clients;
    private readonly int _services;
    private readonly bool _queue;
    private readonly bool _cold;

    /// <param name="cold">No warm-up requests: the timed part is the first traffic the fresh server process sees.</param>
    public RequestReplyScenario(string name, string title, int clients, int services, bool queue, int payload, long defaultCount, bool cold = false)
    {
        _cold = cold;
        Name = name;
        Title = title;
        _clients = clients;
        _services = services;
        _queue = queue;
        PayloadBytes = payload;
        DefaultCount = defaultCount;
    }

    public string Name { get; }

    public string Title { get; }

    public string Generator => "raw";

    public int PayloadBytes { get; }

    public bool NeedsJetStream => false;

    public bool ReportsLatency => true;

    public long DefaultCount { get; }

    public ScenarioResult Run(ScenarioContext ctx)
    {
        string svcSubject = "bench.rr." + ctx.RunId;
        long perClient = Math.Max(1, ctx.Count / _clients);
        long warmPerClient = _cold ? 0 : Math.Clamp(perClient / 5, 5, 2000);

        for (int i = 0; i < _services; i++)
        {
            var c = ctx.Connect("svc" + i);
            c.Send(_queue ? $"SUB {svcSubject} q{ctx.RunId} 1\r\n" : $"SUB {svcSubject} 1\r\n");
            c.Flush();
            ctx.Subscribed("svc" + i, c);
            ctx.StartWorker("service", () => Serve(c, PayloadBytes));
        }

        var hists = new Histogram[_clients];
        var ends = new long[_clients];
        using var warmed = new CountdownEvent(_clients);
        using var go = new ManualResetEventSlim(false);
        var threads = new Thread[_clients];
        var conns = new RawConnection[_clients];
        for (int i = 0; i < _clients; i++)
        {
            var c = ctx.Connect("client" + i);
            string inbox = $"bench.rep.{ctx.RunId}.{i}";
            c.Send($"SUB {inbox} 1\r\n");
            c.Flush();
            ctx.Subscribed("client" + i, c);
            conns[i] = c;
        }

        for (int i = 0; i < _clients; i++)
        {
            int idx = i;
            var c = conns[i];
            var frame = Frames.Pub(svcSubject, $"bench.rep.{ctx.RunId}.{i}", PayloadBytes);
            hists[i] = new Histogram();
            threads[i] = ctx.StartWorker(
                "client",
                () =>
                {
                    var warmHist = new Histogram();
                    Requests(c, frame, warmPerClient, warmHist);
                    warmed.Signal();
                    go.Wait();
                    Requests(c, frame, perClient, hists[idx]);
                    ends[idx] = Stopwatch.GetTimestamp();
                },
                256 * 1024);
        }

        ctx.Wait(warmed.WaitHandle, "warm-up requests");
        ctx.MarkStart();
        go.Set();
        foreach (var t in threads)
        {
            ctx.Join(t, "clients");
        }

        ctx.MarkEnd(ends.Max());
        var all = new Histogram();
        foreach (var h in hists)
        {
            all.Add(h);
        }

        var r = ctx.Result;
        r.Messages = perClient * _clients;
        r.Deliveries = r.Messages;
        r.P50Us = all.PercentileMicros(50);
        r.P95Us = all.PercentileMicros(95);
        r.P99Us = all.PercentileMicros(99);
        if (all.Count != r.Messages)
        {
            throw new InvalidDataException($"{all.Count} replies for {r.Messages} requests");
        }

        return r;
    }

    private void Requests(RawConnection c, byte[] frame, long n, Histogram h)
    {
        var r = c.Reader;
        for (long i = 0; i < n; i++)
        {
            long t0 = Stopwatch.GetTimestamp();
            c.Send(frame);
            while (true)
            {
                var k = r.Next();
                if (k is FrameKind.Msg or FrameKind.HMsg)
                {
                    if (r.PayloadLength != PayloadBytes)
                    {
                        throw new InvalidDataException($"reply payload {r.PayloadLength} B, expected {PayloadBytes} B");
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

    /// <summary>Echo service: replies are appended to one buffer and sent when the reader is about to block.</summary>
    internal static void Serve(RawConnection c, int payload)
    {
        var outBuf = new byte[Math.Max(256 * 1024, 4 * (payload + 300))];
        int outLen = 0;
        var r = c.Reader;
        r.BeforeBlockingRead = () =>
        {
            if (outLen > 0)
            {
                c.Send(outBuf.AsSpan(0, outLen));
                outLen = 0;
            }
        };
        while (true)
        {
            var k = r.Next();
            if (k is not (FrameKind.Msg or FrameKind.HMsg))
            {
                if (k == FrameKind.Err)
                {
                    throw new InvalidOperationException("server error: " + r.LineText);
                }

                continue;
            }

            var reply = r.Reply;
            var pay = r.Payload;
            if (reply.IsEmpty)
            {
                continue;
            }

            int need = 4 + reply.Length + 12 + pay.Length + 2;
            if (outLen + need > outBuf.Length)
            {
                c.Send(outBuf.AsSpan(0, outLen));
                outLen = 0;
            }

            var d = outBuf.AsSpan(outLen);
            "PUB "u8.CopyTo(d);
            int p = 4;
            reply.CopyTo(d[p..]);
            p += reply.Length;
            d[p++] = (byte)' ';
            Utf8Formatter.TryFormat(pay.Length, d[p..], out int w);
            p += w;
            d[p++] = (byte)'\r';
            d[p++] = (byte)'\n';
            pay.CopyTo(d[p..]);
            p += pay.Length;
            d[p++] = (byte)'\r';
            d[p++] = (byte)'\n';
            outLen += p;
        }
    }
}
