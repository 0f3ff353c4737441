namespace NatsBroker.MqttGateway;

/// <summary>
/// QoS 1/2 messages sent to the client: packet identifiers, the in-flight window (the client's MQTT 5 Receive
/// Maximum; 65535 for 3.1.1), PUBACK / PUBREC → PUBREL → PUBCOMP. A message that came from a JetStream consumer
/// carries its ack subject, acknowledged when the client acknowledges (server/mqtt.go trackPublish/untrackPublish).
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>
    /// An unacknowledged QoS 1/2 PUBLISH: what is needed to send it again ([MQTT-4.4.0-1]) if the client reconnects to
    /// its persistent session before acknowledging it, and the JetStream ack subject it settles.
    /// </summary>
    internal sealed class Inflight(byte qos, string? ack, byte[] topic, byte[] payload)
    {
        public byte Qos { get; } = qos;
        public string? Ack { get; } = ack;
        public byte[] Topic { get; } = topic;
        public byte[] Payload { get; } = payload;
        /// <summary>QoS 2: PUBREC received and PUBREL sent; a resend is the PUBREL.</summary>
        public bool Released { get; set; }
    }

    private readonly Dictionary<ushort, Inflight> _inflight = [];
    private readonly Lock _inflightLock = new();
    private SemaphoreSlim _sendWindow = new(ushort.MaxValue, ushort.MaxValue);
    private ushort _clientReceiveMaximum = ushort.MaxValue;
    private uint _clientMaxPacketSize = uint.MaxValue;
    private ushort _lastPacketId;

    private async ValueTask<ushort> AcquirePacketIdAsync(byte qos, string? ack, byte[] topic, byte[] payload)
    {
        // Flow control (MQTT 5 section 4.9): no more unacknowledged QoS 1/2 PUBLISHes than the client allows;
        // waiting here stops the link's reads, so the backpressure reaches the core.
        await _sendWindow.WaitAsync(_end.Token).ConfigureAwait(false);
        lock (_inflightLock)
        {
            while (true)
            {
                _lastPacketId = (ushort)(_lastPacketId == ushort.MaxValue ? 1 : _lastPacketId + 1);
                if (_inflight.TryAdd(_lastPacketId, new Inflight(qos, ack, topic, payload))) return _lastPacketId;
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

    /// <summary>
    /// The connection of a persistent session ended: its unacknowledged deliveries wait in the registry for the
    /// client's return to this gateway process ([MQTT-4.4.0-1]). Without it (a clean session, another process) the
    /// JetStream consumer redelivers them after ack_wait instead.
    /// </summary>
    private void ParkInflight()
    {
        if (_cleanSession || _clientId.Length == 0) return;
        KeyValuePair<ushort, Inflight>[] pending;
        lock (_inflightLock) pending = [.. _inflight];
        if (pending.Length > 0) _registry.Park(_clientId, pending, _options.AckWait);
    }

    /// <summary>
    /// [MQTT-4.4.0-1]: on reconnection with CleanSession 0, the server re-sends unacknowledged PUBLISH packets (with
    /// DUP set, the same packet identifiers) and PUBREL packets, in their original order.
    /// </summary>
    private async Task ResendParkedAsync(CancellationToken ct)
    {
        if (_registry.TakeParked(_clientId, _options.AckWait) is not { } parked) return;
        foreach (var (packetId, f) in parked.OrderBy(p => p.Key))
        {
            await _sendWindow.WaitAsync(ct).ConfigureAwait(false);
            lock (_inflightLock)
            {
                _inflight[packetId] = f;
                if (packetId > _lastPacketId) _lastPacketId = packetId;
            }
            if (f.Released) await _out.SendAsync(new MQTTnet.Packets.MqttPubRelPacket { PacketIdentifier = packetId }, ct).ConfigureAwait(false);
            else await _out.SendPublishAsync(f.Topic, f.Payload, f.Qos, packetId, retain: false, dup: true, ct).ConfigureAwait(false);
        }
    }

    /// <summary>After CONNACK: the send window is the client's Receive Maximum.</summary>
    private void OpenSendWindow()
    {
        _sendWindow.Dispose();
        _sendWindow = new SemaphoreSlim(_clientReceiveMaximum, _clientReceiveMaximum);
    }
}
