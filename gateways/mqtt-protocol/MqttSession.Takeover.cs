using System.Buffers;
using System.Globalization;
using System.Text;
using Microsoft.Extensions.Logging;

namespace NatsBroker.MqttGateway;

/// <summary>
/// A client ID taken by a connection to another gateway process. Several processes serve MQTT on one core (instances
/// sharing the port with <c>reuse_port</c>, or MQTT over WebSocket in the websocket gateway), and each process's
/// <see cref="SessionRegistry"/> sees only its own connections: a client reconnecting through another process must
/// still end its old connection ([MQTT-3.1.4-2]). As nats-server's servers learn of a client ID used elsewhere in a
/// cluster (server/mqtt.go processSessionPersist, on the replies of session saves,
/// <c>$MQTT.JSA.&lt;server&gt;.SP.&lt;client ID hash&gt;.&lt;id&gt;</c>), every connection announces its client ID
/// on the core and listens for later announcements of it.
/// </summary>
/// <remarks>
/// The announcement is a plain message (no stream stores it) on <c>$MQTT.JSA.&lt;process origin&gt;.SP.&lt;client ID
/// hash&gt;</c> with the payload "&lt;connect time, Unix 100 ns units&gt; &lt;client ID&gt;". A connection that gets one
/// from another process, for its own client ID, made after its own connect, is taken over: closed without its will,
/// leaving the session to the newer connection. The connection subscribes before it announces, on the same link, so
/// the later of two connections always finds the earlier one's subscription in place, except when both connect within
/// the moment it takes a SUB to reach the core (then both stay connected, as in a nats-server cluster's race). A user
/// whose permissions refuse the subscription gets no cross-process takeover (the refusal is logged by the core only).
/// </remarks>
internal sealed partial class MqttSession
{
    private const string AnnouncePrefix = "$MQTT.JSA.";
    private int _announceSid;
    private long _connectedAt;

    /// <summary>Subscribes to later announcements of this client ID, then announces this connection.</summary>
    private async Task AnnounceClientIdAsync(CancellationToken ct)
    {
        string hash = SessionHash(_clientId);
        _connectedAt = DateTime.UtcNow.Ticks;
        _announceSid = _nats!.NextSid();
        await _nats.SubscribeAsync(AnnouncePrefix + "*.SP." + hash, null, _announceSid, ct).ConfigureAwait(false);
        var payload = Encoding.UTF8.GetBytes(_connectedAt.ToString(CultureInfo.InvariantCulture) + " " + _clientId);
        await _nats.PublishAsync(AnnouncePrefix + s_origin + ".SP." + hash, null, ReadOnlyMemory<byte>.Empty, new ReadOnlySequence<byte>(payload), ct)
            .ConfigureAwait(false);
    }

    /// <summary>An announcement of this client ID (<see cref="_announceSid"/>): another process's newer connection takes it over.</summary>
    private void OnAnnouncement(NatsMessage m)
    {
        // $MQTT.JSA.<origin>.SP.<hash>: this process's own connections are the registry's business.
        var subject = m.Subject.Span[AnnouncePrefix.Length..];
        int dot = subject.IndexOf((byte)'.');
        if (dot <= 0) return;
        var origin = subject[..dot];
        if (origin.SequenceEqual(s_originBytes)) return;
        var payload = m.Payload.Span;
        int space = payload.IndexOf((byte)' ');
        if (space <= 0 || !long.TryParse(payload[..space], NumberStyles.None, CultureInfo.InvariantCulture, out long at)) return;
        // The same hash can come from another client ID (errMQTTSessionCollision): only this one's announcements count.
        if (!payload[(space + 1)..].SequenceEqual(Encoding.UTF8.GetBytes(_clientId))) return;
        // The older connection gives way; a tie goes to the greater origin.
        if (at < _connectedAt || (at == _connectedAt && origin.SequenceCompareTo(s_originBytes) < 0)) return;
        _log.LogWarning("Replacing old client {Old} since a connection to another gateway process has the same client ID \"{Id}\"", Describe(), _clientId);
        TakeOver();
    }
}
