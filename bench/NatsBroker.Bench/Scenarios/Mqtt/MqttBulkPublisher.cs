using System.Diagnostics;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// QoS 0 publisher: writes a pre-built buffer of identical PUBLISH packets in large socket sends, gated by the
/// subscribers' progress (<see cref="FlowGate"/>), and ends with PINGREQ/PINGRESP (the broker read them all).
/// </summary>
internal sealed class MqttBulkPublisher
{
    private readonly byte[] _buf;
    private readonly int _frameLen;
    private readonly int _framesPerBuf;

    public MqttBulkPublisher(MqttConnection conn, byte[] frame, int chunkBytes)
    {
        Conn = conn;
        (_buf, _frameLen, _framesPerBuf) = Frames.Repeat(frame, chunkBytes);
    }

    public MqttConnection Conn { get; }

    public int FramesPerBatch => _framesPerBuf;

    public long EndTimestamp { get; private set; }

    public void PublishAndFlush(long n, FlowGate? gate)
    {
        while (n > 0)
        {
            int k = (int)Math.Min(_framesPerBuf, n);
            gate?.BeforeSend(k);
            Conn.Send(_buf.AsSpan(0, k * _frameLen));
            gate?.AfterSend(k);
            n -= k;
        }

        Conn.Ping();
        EndTimestamp = Stopwatch.GetTimestamp();
    }
}
