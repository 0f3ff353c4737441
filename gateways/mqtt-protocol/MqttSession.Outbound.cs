using System.Text.Json.Nodes;

namespace NatsBroker.MqttGateway;

/// <summary>
/// QoS 1/2 messages sent to the client: packet identifiers, the in-flight window (the client's MQTT 5 Receive
/// Maximum; 65535 for 3.1.1), PUBACK / PUBREC → PUBREL → PUBCOMP. A message that came from a JetStream consumer
/// carries its ack subject, acknowledged when the client acknowledges (server/mqtt.go trackPublish/untrackPublish).
/// Flow control (MQTT 5 section 4.9, [MQTT-3.3.4-9]): while the window is full, messages wait here in order and go
/// out as PUBACK/PUBCOMP free it. The link's read loop does not wait for the client, because JetStream API replies
/// the client's own requests need (a QoS 1 PUBLISH's store, a SUBSCRIBE's consumer) come on that loop too; only when
/// <see cref="WaitingLimit"/> messages wait does it stop reading, so the backpressure reaches the core.
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>
    /// A QoS 1/2 PUBLISH to the client, waiting for the window or unacknowledged: what is needed to send it (again,
    /// [MQTT-4.4.0-1]) and the JetStream ack subject it settles.
    /// </summary>
    internal sealed class Inflight(byte qos, string? ack, byte[] topic, byte[] payload, byte[] headers, byte[] reply, bool retain,
        uint[]? identifiers, long expiresAt)
    {
        public byte Qos { get; } = qos;
        /// <summary>The JetStream ack subject; null once acknowledged (QoS 2: at PUBREC, see <see cref="OnPubRecAsync"/>).</summary>
        public string? Ack { get; set; } = ack;
        /// <summary>The MQTT topic (UTF-8).</summary>
        public byte[] Topic { get; } = topic;
        public byte[] Payload { get; } = payload;
        /// <summary>The NATS headers (MQTT 5 properties are made from them when it is sent).</summary>
        public byte[] Headers { get; } = headers;
        public byte[] Reply { get; } = reply;
        public bool Retain { get; } = retain;
        public uint[]? Identifiers { get; } = identifiers;
        /// <summary>Unix ms after which it is not sent (0: never), from the Message Expiry Interval.</summary>
        public long ExpiresAt { get; } = expiresAt;
        /// <summary>QoS 2: PUBREC received and PUBREL sent; a resend is the PUBREL.</summary>
        public bool Released { get; set; }
    }

    /// <summary>Messages the link may queue for a full window before its reads wait (and their bytes).</summary>
    private int WaitingLimit => Math.Max(_options.MaxAckPending, 64);
    private const long WaitingBytesLimit = 64L * 1024 * 1024;

    private readonly Dictionary<ushort, Inflight> _inflight = [];
    private readonly Queue<Inflight> _waiting = new();
    private readonly Lock _inflightLock = new();
    private long _waitingBytes;
    /// <summary>Free places in the window; negative after resending more than a smaller new Receive Maximum allows.</summary>
    private int _windowFree = ushort.MaxValue;
    /// <summary>A waiting message is being written: new ones queue behind it (order, [MQTT-4.6.0-6]).</summary>
    private bool _draining;
    private TaskCompletionSource? _spaceWaiter;
    private volatile bool _closing;
    private ushort _clientReceiveMaximum = ushort.MaxValue;
    private uint _clientMaxPacketSize = uint.MaxValue;
    private ushort _lastPacketId;

    /// <summary>Sends a QoS 1/2 message now if the window has room and nothing waits, else queues it.</summary>
    private async ValueTask SendOrQueueAsync(Inflight f)
    {
        ushort id = 0;
        TaskCompletionSource? full = null;
        lock (_inflightLock)
        {
            if (_closing) return;
            if (_waiting.Count == 0 && !_draining && _windowFree > 0)
            {
                _windowFree--;
                id = TrackLocked(f);
            }
            else
            {
                _waiting.Enqueue(f);
                _waitingBytes += f.Payload.Length + f.Headers.Length;
                if (_waiting.Count >= WaitingLimit || _waitingBytes >= WaitingBytesLimit)
                    full = _spaceWaiter ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            }
        }
        if (id != 0) await WritePublishAsync(f, id, dup: false, _end.Token).ConfigureAwait(false);
        else if (full is not null) await full.Task.WaitAsync(_end.Token).ConfigureAwait(false);
    }

    private ushort TrackLocked(Inflight f)
    {
        while (true)
        {
            _lastPacketId = (ushort)(_lastPacketId == ushort.MaxValue ? 1 : _lastPacketId + 1);
            if (_inflight.TryAdd(_lastPacketId, f)) return _lastPacketId;
        }
    }

    /// <summary>Sends waiting messages while the window has room (on the client's loop, after an acknowledgement).</summary>
    private async Task DrainWaitingAsync(CancellationToken ct)
    {
        while (true)
        {
            Inflight f;
            ushort id;
            TaskCompletionSource? space = null;
            lock (_inflightLock)
            {
                if (_draining || _closing || _waiting.Count == 0 || _windowFree <= 0) return;
                f = _waiting.Dequeue();
                _waitingBytes -= f.Payload.Length + f.Headers.Length;
                if (_spaceWaiter is not null && _waiting.Count < WaitingLimit && _waitingBytes < WaitingBytesLimit)
                {
                    space = _spaceWaiter;
                    _spaceWaiter = null;
                }
                if (MessageExpired(f.ExpiresAt))
                {
                    id = 0;
                }
                else
                {
                    _windowFree--;
                    id = TrackLocked(f);
                    _draining = true;
                }
            }
            space?.TrySetResult();
            if (id == 0)
            {
                // [MQTT-3.3.2-5]: expired while waiting: not sent; its stream copy is done with.
                if (f.Ack is not null) await AckStreamMessageAsync(f.Ack).ConfigureAwait(false);
                continue;
            }
            try
            {
                await WritePublishAsync(f, id, dup: false, ct).ConfigureAwait(false);
            }
            finally
            {
                lock (_inflightLock) _draining = false;
            }
        }
    }

    /// <summary>The connection is closing: a link read loop waiting for queue space goes on (and drops what comes).</summary>
    private void ReleaseWindowWaiters()
    {
        TaskCompletionSource? waiter;
        lock (_inflightLock)
        {
            _closing = true;
            waiter = _spaceWaiter;
            _spaceWaiter = null;
        }
        waiter?.TrySetResult();
    }

    private async Task OnPubAckAsync(ushort packetId, CancellationToken ct)
    {
        Inflight? done;
        lock (_inflightLock)
        {
            if (!_inflight.Remove(packetId, out done)) return;
            _windowFree++;
        }
        if (done.Ack is not null) await AckStreamMessageAsync(done.Ack).ConfigureAwait(false);
        await DrainWaitingAsync(ct).ConfigureAwait(false);
    }

    /// <summary>
    /// QoS 2, PUBREC: the client has the message. A message from a persistent session's JetStream consumer is then
    /// recorded as released in the session record (<c>released</c>, ours) before its stream copy is acknowledged, so a
    /// gateway restart or another gateway process sends the client PUBREL for it ([MQTT-4.3.3]) and the consumer never
    /// redelivers it: exactly once across a kill -9 of the gateway too. (nats-server keeps PUBRELs in a stream of its
    /// own, <c>$MQTT_out</c>, since 2.10; 2.9 redelivers the PUBLISH.)
    /// </summary>
    private async Task OnPubRecAsync(ushort packetId, CancellationToken ct)
    {
        string? ack = null;
        lock (_inflightLock)
        {
            if (_inflight.TryGetValue(packetId, out var f) && !f.Released)
            {
                f.Released = true;
                ack = f.Ack;
            }
        }
        if (ack is not null && _js is not null && !_cleanSession)
        {
            await SaveSessionAsync(ct).ConfigureAwait(false);
            await AckStreamMessageAsync(ack).ConfigureAwait(false);
            lock (_inflightLock)
            {
                if (_inflight.TryGetValue(packetId, out var f) && ReferenceEquals(f.Ack, ack)) f.Ack = null;
            }
        }
        await _out.SendAsync(new MQTTnet.Packets.MqttPubRelPacket { PacketIdentifier = packetId }, ct).ConfigureAwait(false);
    }

    /// <summary>Packet identifiers of QoS 2 messages released to the client (PUBREC came) and not yet completed.</summary>
    private JsonArray ReleasedPacketIds()
    {
        var ids = new JsonArray();
        lock (_inflightLock)
        {
            foreach (var (id, f) in _inflight) if (f.Released) ids.Add((JsonNode)(int)id);
        }
        return ids;
    }

    /// <summary>
    /// A resumed session's released QoS 2 messages (<see cref="OnPubRecAsync"/>) not already resent from this process's
    /// parked deliveries: PUBREL again, with their packet identifiers held until PUBCOMP ([MQTT-4.4.0-1]).
    /// </summary>
    private async Task ResendReleasedAsync(CancellationToken ct)
    {
        if (_restored?["released"] is not JsonArray stored) return;
        foreach (var node in stored)
        {
            if (node is not JsonValue v || !v.TryGetValue(out int value) || value is <= 0 or > ushort.MaxValue) continue;
            ushort packetId = (ushort)value;
            lock (_inflightLock)
            {
                if (_inflight.ContainsKey(packetId)) continue;
                _inflight[packetId] = new Inflight(2, null, [], [], [], [], false, null, 0) { Released = true };
                _windowFree--;
                if (packetId > _lastPacketId) _lastPacketId = packetId;
            }
            await _out.SendAsync(new MQTTnet.Packets.MqttPubRelPacket { PacketIdentifier = packetId }, ct).ConfigureAwait(false);
        }
    }

    private Task OnPubCompAsync(ushort packetId, CancellationToken ct) => OnPubAckAsync(packetId, ct);

    /// <summary>
    /// The connection of a persistent session ended: its unacknowledged deliveries wait in the registry for the
    /// client's return to this gateway process ([MQTT-4.4.0-1]). Without it (a clean session, another process) the
    /// JetStream consumer redelivers them after ack_wait instead; so do the messages still waiting for the window.
    /// </summary>
    private void ParkInflight()
    {
        if (_cleanSession || _sessionExpiry == 0 || _clientId.Length == 0) return;
        KeyValuePair<ushort, Inflight>[] pending;
        lock (_inflightLock) pending = [.. _inflight];
        if (pending.Length > 0) _registry.Park(_clientId, pending, _options.AckWait);
    }

    /// <summary>
    /// [MQTT-4.4.0-1]: on reconnection to a session, the server re-sends unacknowledged PUBLISH packets (with DUP
    /// set, the same packet identifiers) and PUBREL packets, in their original order. They count against the window.
    /// </summary>
    private async Task ResendParkedAsync(CancellationToken ct)
    {
        if (_registry.TakeParked(_clientId, _options.AckWait) is not { } parked) return;
        foreach (var (packetId, f) in parked.OrderBy(p => p.Key))
        {
            lock (_inflightLock)
            {
                _inflight[packetId] = f;
                _windowFree--;
                if (packetId > _lastPacketId) _lastPacketId = packetId;
            }
            if (f.Released) await _out.SendAsync(new MQTTnet.Packets.MqttPubRelPacket { PacketIdentifier = packetId }, ct).ConfigureAwait(false);
            else await WritePublishAsync(f, packetId, dup: true, ct).ConfigureAwait(false);
        }
    }

    /// <summary>After CONNACK: the window is the client's Receive Maximum.</summary>
    private void OpenSendWindow()
    {
        lock (_inflightLock) _windowFree = _clientReceiveMaximum - _inflight.Count;
    }
}
