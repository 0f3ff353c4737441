using System.Diagnostics;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>
/// An MQTT subscriber counting PUBLISH packets on a dedicated thread and checking their payload size. QoS 1
/// deliveries are acknowledged with PUBACKs gathered into one send per read (3.3.4: the receiver of a QoS 1 PUBLISH
/// answers with PUBACK), so the generator makes one syscall per batch, not per message.
/// </summary>
internal sealed class MqttSubscriber(MqttConnection conn, int payloadSize) : IReceiveCounter
{
    private readonly byte[] _acks = new byte[4 * 4096];
    private long _received;
    private int _ackLen;

    public MqttConnection Conn { get; } = conn;

    public long Received => Volatile.Read(ref _received);

    /// <summary>QoS 1 deliveries flagged DUP (redelivered), acknowledged but not counted.</summary>
    public long Duplicates { get; private set; }

    public long DoneTimestamp { get; private set; }

    public ManualResetEventSlim WarmDone { get; } = new(false);

    public ManualResetEventSlim Done { get; } = new(false);

    /// <summary>Reads until <paramref name="total"/> messages arrived; sets WarmDone after <paramref name="warm"/>.</summary>
    public void Run(long warm, long total)
    {
        long count = 0;
        if (warm == 0)
        {
            WarmDone.Set();
        }

        while (count < total)
        {
            if (!Conn.TryNext())
            {
                FlushAcks();
                Conn.Fill();
                continue;
            }

            if (Conn.Type != MqttPackets.Publish)
            {
                throw new InvalidDataException($"unexpected MQTT packet 0x{Conn.Header:X2} at a subscriber");
            }

            if (!TakePublish(count + 1))
            {
                continue;
            }

            count++;
            Volatile.Write(ref _received, count);
            if (count == warm)
            {
                WarmDone.Set();
            }
        }

        FlushAcks();
        DoneTimestamp = Stopwatch.GetTimestamp();
        Done.Set();
    }

    /// <summary>After Run: PINGREQ/PINGRESP and fail if any PUBLISH arrives before the PINGRESP (too many messages).</summary>
    public void CheckNoExtra()
    {
        Conn.Send(MqttPackets.PingReq);
        long extra = 0;
        while (Conn.Next() != MqttPackets.PingResp)
        {
            if (Conn.Type == MqttPackets.Publish && TakePublish(0))
            {
                extra++;
            }
        }

        FlushAcks();
        if (extra > 0)
        {
            throw new InvalidDataException($"{extra} more messages than published arrived at an MQTT subscriber");
        }
    }

    /// <summary>Checks the current PUBLISH, queues its PUBACK; false for a DUP redelivery.</summary>
    private bool TakePublish(long ordinal)
    {
        var body = Conn.Body;
        int qos = Conn.Qos;
        int offset = 2 + ((body[0] << 8) | body[1]);
        if (qos > 0)
        {
            if (_ackLen + 4 > _acks.Length)
            {
                FlushAcks();
            }

            MqttPackets.WritePubAck(_acks.AsSpan(_ackLen), (body[offset] << 8) | body[offset + 1]);
            _ackLen += 4;
            offset += 2;
        }

        int size = body.Length - offset;
        if (size != payloadSize)
        {
            throw new InvalidDataException($"MQTT message {ordinal}: payload {size} B, expected {payloadSize} B");
        }

        if (qos > 0 && (Conn.Header & 0x08) != 0)
        {
            Duplicates++;
            return false;
        }

        return true;
    }

    private void FlushAcks()
    {
        if (_ackLen > 0)
        {
            Conn.Send(_acks.AsSpan(0, _ackLen));
            _ackLen = 0;
        }
    }
}
