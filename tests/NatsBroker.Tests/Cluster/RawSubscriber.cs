using System.Globalization;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// A raw protocol client on one node, for what NATS.Net hides: it counts <c>max</c> deliveries itself and drops
/// messages for a subscription it has unsubscribed, so a server that over-delivers would look right through it.
/// Here every MSG the node writes is seen. Protocol 0 (no <c>protocol</c> in CONNECT), so no async INFO interleaves with MSGs.
/// Probes and fences are plain payloads (<c>probe-...</c>, <c>fence-...</c>) on a subscription of their own.
/// </summary>
public sealed class RawSubscriber : IAsyncDisposable
{
    private readonly RawClient _raw;
    private readonly List<NatsMessage> _ordinary = [];
    private readonly HashSet<string> _markers = new(StringComparer.Ordinal);

    private RawSubscriber(RawClient raw) => _raw = raw;

    public static async Task<RawSubscriber> ConnectAsync(ClusterNode node)
    {
        var raw = await RawClient.ConnectAsync("127.0.0.1", node.ClientPort).ConfigureAwait(false);
        try
        {
            // headers: a Recorder's probes and fences are HMSGs; without it they would arrive as empty MSGs.
            await raw.HandshakeAsync("""{"verbose":false,"pedantic":false,"headers":true}""").ConfigureAwait(false);
            return new RawSubscriber(raw);
        }
        catch
        {
            await raw.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Sends protocol lines, then PING, and waits for the PONG: the node has processed them.</summary>
    public async Task SendAsync(params string[] lines)
    {
        await _raw.SendAsync(string.Concat(lines.Select(l => l + "\r\n")) + "PING\r\n").ConfigureAwait(false);
        var before = await _raw.ReadUntilPongAsync().ConfigureAwait(false);
        if (before.Count > 0)
        {
            throw new Xunit.Sdk.XunitException("unexpected before PONG: " + string.Join(" | ", before));
        }
    }

    /// <summary>
    /// Publishes probes on <paramref name="subject"/> from <paramref name="publisher"/> until one arrives on sid
    /// <paramref name="sid"/>; the sid subscribed last vouches for the earlier SUBs/UNSUBs of this connection (RS+/RS-
    /// go out in order on one route connection).
    /// </summary>
    public async Task WaitForInterestAsync(NatsConnection publisher, string subject, string sid)
    {
        var sent = new List<string>();
        var deadline = DateTime.UtcNow + ClusterClients.Wait;
        while (!sent.Any(_markers.Contains))
        {
            if (DateTime.UtcNow > deadline)
            {
                throw new TimeoutException($"raw subscription sid {sid} ({subject}) not reached from {publisher.Opts.Name} ({publisher.Opts.Url}) after {sent.Count} probes");
            }

            var id = "probe-" + Guid.NewGuid().ToString("N");
            sent.Add(id);
            await publisher.PublishAsync(subject, id).ConfigureAwait(false);
            await ReadForAsync(TimeSpan.FromMilliseconds(50)).ConfigureAwait(false);
        }
    }

    /// <summary>Publishes a fence on <paramref name="subject"/>; its id for <see cref="UntilMarkersAsync"/>.</summary>
    public static async Task<string> SendFenceAsync(NatsConnection publisher, string subject)
    {
        var id = "fence-" + Guid.NewGuid().ToString("N");
        await publisher.PublishAsync(subject, id).ConfigureAwait(false);
        return id;
    }

    /// <summary>Reads until every marker in <paramref name="ids"/> arrived; returns the ordinary messages read so far and clears them.</summary>
    public async Task<List<NatsMessage>> UntilMarkersAsync(params string[] ids)
    {
        var deadline = DateTime.UtcNow + ClusterClients.Wait;
        while (!ids.All(_markers.Contains))
        {
            if (DateTime.UtcNow > deadline)
            {
                throw new TimeoutException($"raw subscriber: marker(s) {string.Join(", ", ids.Where(i => !_markers.Contains(i)))} did not arrive "
                    + $"within {ClusterClients.Wait.TotalSeconds:0} s ({_ordinary.Count} ordinary message(s) meanwhile)");
            }

            await ReadForAsync(TimeSpan.FromMilliseconds(100)).ConfigureAwait(false);
        }

        var list = _ordinary.ToList();
        _ordinary.Clear();
        return list;
    }

    private async Task ReadForAsync(TimeSpan wait)
    {
        var deadline = DateTime.UtcNow + wait;
        while (DateTime.UtcNow < deadline)
        {
            NatsMessage? m;
            try
            {
                m = await _raw.ReadMessageAsync(deadline - DateTime.UtcNow).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                return;
            }

            if (m is null)
            {
                throw new Xunit.Sdk.XunitException($"raw subscriber: connection closed ({_raw.CloseReason})");
            }

            if (m.PayloadText.StartsWith("probe-", StringComparison.Ordinal) || m.PayloadText.StartsWith("fence-", StringComparison.Ordinal))
            {
                _markers.Add(m.PayloadText);
            }
            else if (HeaderMarker(m) is { } marker)
            {
                // A Recorder's probe or fence (HMSG) on a subject this connection shares with a Recorder.
                _markers.Add(marker);
            }
            else
            {
                _ordinary.Add(m);
            }
        }
    }

    private static string? HeaderMarker(NatsMessage m)
    {
        if (m.HeaderText is not { } headers)
        {
            return null;
        }

        foreach (var line in headers.Split("\r\n"))
        {
            var colon = line.IndexOf(':', StringComparison.Ordinal);
            if (colon > 0 && line[..colon] is Recorder.ProbeHeader or Recorder.FenceHeader)
            {
                return line[(colon + 1)..].Trim();
            }
        }

        return null;
    }

    /// <summary>Counts per sid, for assertions: "1" → 5.</summary>
    public static Dictionary<string, int> CountBySid(IEnumerable<NatsMessage> messages) =>
        messages.GroupBy(m => m.Sid).ToDictionary(g => g.Key, g => g.Count(), StringComparer.Ordinal);

    public static string Describe(IEnumerable<NatsMessage> messages) =>
        string.Join(", ", messages.Select(m => string.Create(CultureInfo.InvariantCulture, $"{m.Subject}/sid {m.Sid}: {m.PayloadText}")));

    public ValueTask DisposeAsync() => _raw.DisposeAsync();
}
