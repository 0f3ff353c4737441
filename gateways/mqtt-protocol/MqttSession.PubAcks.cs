using Microsoft.Extensions.Logging;

namespace NatsBroker.MqttGateway;

/// <summary>
/// QoS 1 PUBLISHes from the client, pipelined: each is published and its JetStream store sent at once, and its PUBACK
/// waits in a queue until that store is acknowledged (nothing is acknowledged to the client before it is durable).
/// The read loop drains the queue, in order ([MQTT-4.6.0-2]: PUBACKs in the order the PUBLISHes came), before it
/// waits for the client, before handling any other packet, and when <see cref="MaxPendingPubAcks"/> are queued: so
/// the stores of one client read go to the core in one write and their PUBACKs to the client in one write, where
/// one store round trip per PUBLISH (as nats-server's mqttProcessPub makes it) capped a client at one message per
/// round trip. A failed store closes the connection as before: the PUBACKs before it are sent, none after it.
/// </summary>
internal sealed partial class MqttSession
{
    /// <summary>Bounds the queue (and so the stores one client has in flight): a client's Receive Maximum may be 65,535.</summary>
    private const int MaxPendingPubAcks = 256;

    private readonly Queue<(ushort PacketId, Task Stored)> _pendingPubAcks = new();

    private void QueuePubAck(ushort packetId, Task stored) => _pendingPubAcks.Enqueue((packetId, stored));

    /// <summary>Sends the queued PUBACKs as their stores complete, in order; throws the first store's failure.</summary>
    private async Task DrainPubAcksAsync(CancellationToken ct)
    {
        if (_pendingPubAcks.Count == 0) return;
        await _nats!.FlushPublishesAsync(ct).ConfigureAwait(false);
        try
        {
            while (_pendingPubAcks.TryPeek(out var pending))
            {
                await pending.Stored.ConfigureAwait(false);
                _pendingPubAcks.Dequeue();
                await _out.SendPubAckAsync(pending.PacketId, ct, batch: true).ConfigureAwait(false);
            }
        }
        finally
        {
            await _out.FlushAsync(ct).ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The connection ends: the publishes and stores already received go to the core (they were received, so they are delivered), and
    /// their outcomes are awaited so that no failure goes unobserved; the client is not acknowledged any more.
    /// </summary>
    private async Task SettlePubAcksAsync()
    {
        if (_nats is null) return;
        try
        {
            // Also the batched QoS 0 publishes (NatsLink.PublishAsync's batch), which nothing else would write now.
            await _nats.FlushPublishesAsync(CancellationToken.None).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException)
        {
            _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: batched publishes and {Count} QoS 1 stores not sent: {Error}", RemoteIp, _remote.Port, _clientId, _pendingPubAcks.Count, ex.Message);
        }
        while (_pendingPubAcks.TryDequeue(out var pending))
        {
            try
            {
                await pending.Stored.ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or TimeoutException or JetStreamException)
            {
                _log.LogDebug("{Ip}:{Port} - mqtt client {Id}: a QoS 1 store failed after the client left: {Error}", RemoteIp, _remote.Port, _clientId, ex.Message);
            }
        }
    }
}
