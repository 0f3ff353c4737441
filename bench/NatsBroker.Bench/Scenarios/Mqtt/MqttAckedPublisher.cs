using System.Diagnostics;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// QoS 1 publisher with at most <c>window</c> PUBLISH packets unacknowledged, as an MQTT client with a send quota
/// (MQTT 5's Receive Maximum, 3.1.1 brokers' max in-flight). The packets are pre-built; only their packet
/// identifiers are patched before a send. A reader thread (<see cref="ReadAcks"/>) counts PUBACKs and checks that
/// they come in publish order ([MQTT-4.6.0-2]); the writer sends whenever a quarter of the window is free.
/// </summary>
internal sealed class MqttAckedPublisher
{
    private readonly byte[] _buf;
    private readonly int _frameLen;
    private readonly int _idOffset;
    private readonly int _window;
    private readonly ScenarioContext _ctx;
    private readonly ManualResetEventSlim _acked = new(false);
    private long _sent;
    private long _ackCount;

    public MqttAckedPublisher(MqttConnection conn, string topic, int payloadBytes, int window, ScenarioContext ctx)
    {
        Conn = conn;
        _window = window;
        _ctx = ctx;
        var frame = MqttPackets.PublishPacket(topic, 1, payloadBytes, out _idOffset);
        (_buf, _frameLen, _) = Frames.Repeat(frame, frame.Length * window);
    }

    public MqttConnection Conn { get; }

    public long Acked => Volatile.Read(ref _ackCount);

    /// <summary>When the PUBACK of the last message of <see cref="WaitAcked"/>'s target arrived.</summary>
    public long EndTimestamp { get; private set; }

    /// <summary>Reader thread: counts PUBACKs until <paramref name="total"/> arrived.</summary>
    public void ReadAcks(long total)
    {
        long count = 0;
        while (count < total)
        {
            if (!Conn.TryNext())
            {
                if (count != Volatile.Read(ref _ackCount))
                {
                    Volatile.Write(ref _ackCount, count);
                    _acked.Set();
                }

                Conn.Fill();
                continue;
            }

            if (Conn.Type != MqttPackets.PubAck)
            {
                throw new InvalidDataException($"unexpected MQTT packet 0x{Conn.Header:X2} at a QoS 1 publisher");
            }

            var body = Conn.Body;
            int id = (body[0] << 8) | body[1];
            if (id != PacketId(count))
            {
                throw new InvalidDataException($"PUBACK {count + 1} has packet id {id}, expected {PacketId(count)} (acknowledgements out of order)");
            }

            count++;
        }

        EndTimestamp = Stopwatch.GetTimestamp();
        Volatile.Write(ref _ackCount, count);
        _acked.Set();
    }

    /// <summary>Publishes <paramref name="n"/> more messages, never more than the window unacknowledged.</summary>
    public void Publish(long n)
    {
        long target = _sent + n;
        int minBatch = Math.Max(1, _window / 4);
        while (_sent < target)
        {
            _acked.Reset();
            long left = target - _sent;
            long free = _window - (_sent - Acked);
            if (free < Math.Min(minBatch, left))
            {
                WaitForAcks("PUBACKs");
                continue;
            }

            int k = (int)Math.Min(free, left);
            for (int i = 0; i < k; i++)
            {
                int id = PacketId(_sent + i);
                int at = (i * _frameLen) + _idOffset;
                _buf[at] = (byte)(id >> 8);
                _buf[at + 1] = (byte)id;
            }

            Conn.Send(_buf.AsSpan(0, k * _frameLen));
            _sent += k;
        }
    }

    /// <summary>Waits until every message published so far is acknowledged.</summary>
    public void WaitAcked()
    {
        while (true)
        {
            _acked.Reset();
            if (Acked >= _sent)
            {
                return;
            }

            WaitForAcks($"PUBACKs ({Acked} of {_sent})");
        }
    }

    /// <summary>Packet identifiers 1..65535 in turn (0 is not allowed, 2.3.1); the window is far below 65535.</summary>
    private static int PacketId(long sequence) => (int)(sequence % 65535) + 1;

    private void WaitForAcks(string what)
    {
        _acked.Wait(50);
        _ctx.ThrowIfFailed();
        if (Stopwatch.GetTimestamp() > _ctx.Deadline)
        {
            throw new TimeoutException("timed out waiting for " + what);
        }
    }
}
