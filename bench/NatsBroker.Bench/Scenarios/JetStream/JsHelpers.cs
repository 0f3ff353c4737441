using System.Buffers.Text;
using System.Diagnostics;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>Pipelined publisher: keeps up to <c>window</c> messages awaiting their PubAck.</summary>
internal sealed class AsyncJsPublisher
{
    private readonly ScenarioContext _ctx;
    private readonly RawConnection _c;
    private readonly byte[] _buf;
    private readonly int _frameLen;
    private readonly int _framesPerBuf;
    private readonly int _window;
    private long _acked;

    public AsyncJsPublisher(ScenarioContext ctx, string subject, int payload, int window)
    {
        _ctx = ctx;
        _window = window;
        _c = ctx.Connect("js-async-pub", headers: true);
        string inbox = "_INBOX.acks." + ctx.RunId;
        _c.Send($"SUB {inbox} 1\r\n");
        _c.Flush();
        (_buf, _frameLen, _framesPerBuf) = Frames.Repeat(Frames.Pub(subject, inbox, payload), 64 * 1024);
    }

    public long EndTimestamp { get; private set; }

    /// <summary>Publishes n messages and returns when all n PubAcks arrived (an error ack fails the run).</summary>
    public void Publish(long n)
    {
        using var progress = new ManualResetEventSlim(false);
        using var done = new ManualResetEventSlim(false);
        Volatile.Write(ref _acked, 0);
        var r = _c.Reader;
        long local = 0;
        r.BeforeBlockingRead = () =>
        {
            Volatile.Write(ref _acked, local);
            progress.Set();
        };
        _ctx.StartWorker("js-ack-reader", () =>
        {
            while (local < n)
            {
                var k = r.Next();
                if (k == FrameKind.Msg)
                {
                    if (r.Payload.IndexOf("\"error\""u8) >= 0)
                    {
                        throw new InvalidOperationException("publish failed: " + System.Text.Encoding.UTF8.GetString(r.Payload));
                    }

                    local++;
                }
                else if (k == FrameKind.HMsg && r.Status == 503)
                {
                    throw new NotSupportedByServerException("no responders for the stream subject");
                }
                else if (k == FrameKind.Err)
                {
                    throw new InvalidOperationException("server error: " + r.LineText);
                }
            }

            Volatile.Write(ref _acked, local);
            EndTimestamp = Stopwatch.GetTimestamp();
            done.Set();
            progress.Set();
        });

        long sent = 0;
        while (sent < n)
        {
            long room = _window - (sent - Volatile.Read(ref _acked));
            if (room <= 0)
            {
                progress.Reset();
                if (_window - (sent - Volatile.Read(ref _acked)) <= 0)
                {
                    _ctx.Wait(progress, "PubAcks");
                }

                continue;
            }

            int k = (int)Math.Min(Math.Min(room, n - sent), _framesPerBuf);
            _c.Send(_buf.AsSpan(0, k * _frameLen));
            sent += k;
        }

        _ctx.Wait(done, $"{n} PubAcks");
        r.BeforeBlockingRead = null;
    }
}

/// <summary>Durable pull consumer: fetch a batch, ack each message (acks batched with the next fetch request).</summary>
internal sealed class PullFetcher
{
    private readonly RawConnection _c;
    private readonly byte[] _next;
    private readonly byte[] _ackBuf = new byte[1024 * 1024];
    private readonly int _batch;
    private readonly int _payload;
    private int _ackLen;

    public PullFetcher(ScenarioContext ctx, string stream, string durable, int batch, int payload)
    {
        _batch = batch;
        _payload = payload;
        _c = ctx.Connect("js-fetch", headers: true, readBuffer: 1024 * 1024);
        string inbox = "_INBOX.pull." + ctx.RunId;
        _c.Send($"SUB {inbox} 1\r\n");
        _c.Flush();
        string req = $"{{\"batch\":{batch},\"expires\":5000000000}}";
        _next = System.Text.Encoding.ASCII.GetBytes($"PUB $JS.API.CONSUMER.MSG.NEXT.{stream}.{durable} {inbox} {req.Length}\r\n{req}\r\n");
    }

    public long EndTimestamp { get; private set; }

    /// <summary>Receives n messages; calls onMessage (optional) with each payload.</summary>
    public void Fetch(long n, Action<ReadOnlySpan<byte>>? onMessage = null)
    {
        var r = _c.Reader;
        long got = 0;
        int emptyBatches = 0;
        while (got < n)
        {
            FlushAcks(withNext: true);
            int inBatch = 0;
            bool batchEnded = false;
            while (inBatch < _batch && got < n && !batchEnded)
            {
                switch (r.Next())
                {
                    case FrameKind.Msg:
                    case FrameKind.HMsg when r.Status == 0:
                        if (r.PayloadLength != _payload)
                        {
                            throw new InvalidDataException($"fetched payload {r.PayloadLength} B, expected {_payload} B");
                        }

                        onMessage?.Invoke(r.Payload);
                        AppendAck(r.Reply);
                        inBatch++;
                        got++;
                        break;
                    case FrameKind.HMsg:
                        int st = r.Status;
                        if (st is 404 or 408 or 409)
                        {
                            batchEnded = true;
                        }
                        else if (st == 503)
                        {
                            throw new NotSupportedByServerException("no responders for CONSUMER.MSG.NEXT");
                        }

                        break;
                    case FrameKind.Err:
                        throw new InvalidOperationException("server error: " + r.LineText);
                    default:
                        break;
                }
            }

            if (inBatch == 0 && ++emptyBatches > 3)
            {
                throw new InvalidDataException($"fetch returned nothing 3 times after {got} of {n} messages");
            }
        }

        EndTimestamp = Stopwatch.GetTimestamp();
        FlushAcks(withNext: false);
    }

    /// <summary>When the fetch loop is done and the server has the acks: PING/PONG on this connection.</summary>
    public void FlushConnection() => _c.Flush();

    private void AppendAck(ReadOnlySpan<byte> reply)
    {
        if (reply.IsEmpty)
        {
            return;
        }

        if (_ackLen + reply.Length + 16 > _ackBuf.Length)
        {
            FlushAcks(false);
        }

        var d = _ackBuf.AsSpan(_ackLen);
        "PUB "u8.CopyTo(d);
        reply.CopyTo(d[4..]);
        int p = 4 + reply.Length;
        " 0\r\n\r\n"u8.CopyTo(d[p..]);
        _ackLen += p + 6;
    }

    private void FlushAcks(bool withNext)
    {
        if (withNext && _ackLen + _next.Length <= _ackBuf.Length)
        {
            _next.CopyTo(_ackBuf, _ackLen);
            _ackLen += _next.Length;
            withNext = false;
        }

        if (_ackLen > 0)
        {
            _c.Send(_ackBuf.AsSpan(0, _ackLen));
            _ackLen = 0;
        }

        if (withNext)
        {
            _c.Send(_next);
        }
    }
}

internal static class JsText
{
    public static int WriteLong(Span<byte> d, long v)
    {
        Utf8Formatter.TryFormat(v, d, out int w);
        return w;
    }
}
