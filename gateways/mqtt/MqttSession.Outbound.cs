namespace NatsBroker.MqttGateway;

/// <summary>
/// QoS 1/2 messages sent to the client: packet identifiers, the in-flight window (the client's MQTT 5 Receive
/// Maximum; 65535 for 3.1.1), PUBACK / PUBREC → PUBREL → PUBCOMP. A message that came from a JetStream consumer
/// carries its ack subject, acknowledged when the client acknowledges (server/mqtt.go trackPublish/untrackPublish).
/// </summary>
internal sealed partial class MqttSession
{
    private sealed class Inflight(byte qos, string? ack)
    {
        public byte Qos { get; } = qos;
        public string? Ack { get; } = ack;
        public bool Released { get; set; }
    }

    private readonly Dictionary<ushort, Inflight> _inflight = [];
    private readonly Lock _inflightLock = new();
    private SemaphoreSlim _sendWindow = new(ushort.MaxValue, ushort.MaxValue);
    private ushort _clientReceiveMaximum = ushort.MaxValue;
    private uint _clientMaxPacketSize = uint.MaxValue;
    private ushort _lastPacketId;

    private async ValueTask<ushort> AcquirePacketIdAsync(byte qos, string? ack)
    {
        // Flow control (MQTT 5 section 4.9): no more unacknowledged QoS 1/2 PUBLISHes than the client allows;
        // waiting here stops the link's reads, so the backpressure reaches the core.
        await _sendWindow.WaitAsync(_end.Token).ConfigureAwait(false);
        lock (_inflightLock)
        {
            while (true)
            {
                _lastPacketId = (ushort)(_lastPacketId == ushort.MaxValue ? 1 : _lastPacketId + 1);
                if (_inflight.TryAdd(_lastPacketId, new Inflight(qos, ack))) return _lastPacketId;
            }
        }
    }

    private async Task OnPubAckAsync(ushort packetId)
    {
        Inflight? done;
        lock (_inflightLock)
        {
            if (!_inflight.Remove(packetId, out done)) return;
        }
        _sendWindow.Release();
        if (done.Ack is not null) await AckStreamMessageAsync(done.Ack).ConfigureAwait(false);
    }

    private async Task OnPubRecAsync(ushort packetId, CancellationToken ct)
    {
        lock (_inflightLock)
        {
            if (_inflight.TryGetValue(packetId, out var f)) f.Released = true;
        }
        await _out.SendAsync(new MQTTnet.Packets.MqttPubRelPacket { PacketIdentifier = packetId }, ct).ConfigureAwait(false);
    }

    private Task OnPubCompAsync(ushort packetId) => OnPubAckAsync(packetId);

    /// <summary>After CONNACK: the send window is the client's Receive Maximum.</summary>
    private void OpenSendWindow()
    {
        _sendWindow.Dispose();
        _sendWindow = new SemaphoreSlim(_clientReceiveMaximum, _clientReceiveMaximum);
    }
}
