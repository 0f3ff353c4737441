using System.Diagnostics;
using NatsBroker.Bench.Scenarios;

namespace NatsBroker.Bench.Raw;

/// <summary>A subscriber whose received-message count a <see cref="FlowGate"/> watches (NATS or MQTT).</summary>
internal interface IReceiveCounter
{
    long Received { get; }
}

/// <summary>A subscriber connection counting MSG frames on a dedicated thread and checking their size.</summary>
internal sealed class CountingSubscriber : IReceiveCounter
{
    private long _received;

    public CountingSubscriber(RawConnection conn, int payloadSize)
    {
        Conn = conn;
        PayloadSize = payloadSize;
    }

    public RawConnection Conn { get; }

    public int PayloadSize { get; }

    public long Received => Volatile.Read(ref _received);

    public long DoneTimestamp { get; private set; }

    public ManualResetEventSlim WarmDone { get; } = new(false);

    public ManualResetEventSlim Done { get; } = new(false);

    /// <summary>Reads until <paramref name="total"/> messages arrived; sets WarmDone after <paramref name="warm"/>.</summary>
    public void Run(long warm, long total)
    {
        var r = Conn.Reader;
        long count = 0;
        if (warm == 0)
        {
            WarmDone.Set();
        }

        while (count < total)
        {
            switch (r.Next())
            {
                case FrameKind.Msg:
                case FrameKind.HMsg:
                    if (r.PayloadLength != PayloadSize)
                    {
                        throw new InvalidDataException($"message {count + 1}: payload {r.PayloadLength} B, expected {PayloadSize} B");
                    }

                    count++;
                    Volatile.Write(ref _received, count);
                    if (count == warm)
                    {
                        WarmDone.Set();
                    }

                    break;
                case FrameKind.Err:
                    throw new InvalidOperationException("server error: " + r.LineText);
                default:
                    break;
            }
        }

        DoneTimestamp = Stopwatch.GetTimestamp();
        Done.Set();
    }

    /// <summary>After Run: PING/PONG and fail if any message arrives before the PONG (duplicates or too many).</summary>
    public void CheckNoExtra()
    {
        Conn.Send("PING\r\n"u8);
        long extra = 0;
        while (true)
        {
            var k = Conn.Reader.Next();
            if (k == FrameKind.Pong)
            {
                break;
            }

            if (k is FrameKind.Msg or FrameKind.HMsg)
            {
                extra++;
            }
        }

        if (extra > 0)
        {
            throw new InvalidDataException($"{extra} more messages than published arrived");
        }
    }
}

/// <summary>
/// Bounds how far publishers run ahead of the slowest subscriber (in messages), so that a fast generator never
/// trips the server's slow-consumer limit. Checked once per batch, not per message.
/// </summary>
internal sealed class FlowGate
{
    private readonly IReadOnlyList<IReceiveCounter> _subs;
    private readonly long _window;
    private readonly ScenarioContext _ctx;
    private long _published;

    public FlowGate(IReadOnlyList<IReceiveCounter> subs, long windowMessages, ScenarioContext ctx)
    {
        _subs = subs;
        _window = windowMessages;
        _ctx = ctx;
    }

    public long Stalls { get; private set; }

    public void BeforeSend(int k)
    {
        if (_subs.Count == 0)
        {
            return;
        }

        while (true)
        {
            long min = long.MaxValue;
            for (int i = 0; i < _subs.Count; i++)
            {
                min = Math.Min(min, _subs[i].Received);
            }

            if (Volatile.Read(ref _published) + k - min <= _window)
            {
                return;
            }

            Stalls++;
            _ctx.ThrowIfFailed();
            if (Stopwatch.GetTimestamp() > _ctx.Deadline)
            {
                throw new TimeoutException($"subscribers stopped receiving at {min} messages");
            }

            Thread.Sleep(1);
        }
    }

    public void AfterSend(int k) => Interlocked.Add(ref _published, k);
}

/// <summary>A connection a <see cref="BulkPublisher"/> writes to: NATS (flushed by PING/PONG) or MQTT (PINGREQ/PINGRESP).</summary>
internal interface IBulkConnection
{
    void Send(ReadOnlySpan<byte> data);

    /// <summary>Returns once the server has read everything sent before.</summary>
    void Flush();
}

/// <summary>Writes pre-built PUB (or MQTT PUBLISH) buffers in large socket sends.</summary>
internal sealed class BulkPublisher
{
    private readonly IBulkConnection _conn;
    private readonly byte[] _buf;
    private readonly int _frameLen;
    private readonly int _framesPerBuf;

    public BulkPublisher(IBulkConnection conn, byte[] frame, int chunkBytes = 256 * 1024)
    {
        _conn = conn;
        (_buf, _frameLen, _framesPerBuf) = Frames.Repeat(frame, chunkBytes);
    }

    /// <summary>Frames written per socket send.</summary>
    public int FramesPerBatch => _framesPerBuf;

    public long EndTimestamp { get; private set; }

    public void Publish(long n, FlowGate? gate)
    {
        while (n > 0)
        {
            int k = (int)Math.Min(_framesPerBuf, n);
            gate?.BeforeSend(k);
            _conn.Send(_buf.AsSpan(0, k * _frameLen));
            gate?.AfterSend(k);
            n -= k;
        }
    }

    /// <summary>Publishes then waits until the server has read them (PONG or PINGRESP); records the time.</summary>
    public void PublishAndFlush(long n, FlowGate? gate)
    {
        Publish(n, gate);
        _conn.Flush();
        EndTimestamp = Stopwatch.GetTimestamp();
    }
}
