using System.Threading.Channels;
using NATS.Client.Core;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// A NATS.Net core subscription whose messages a test reads in arrival order, with two kinds of marker messages kept
/// apart from the ordinary ones by a header: <b>probes</b> (<see cref="Interest"/>: published until one arrives, so
/// the publisher's node is known to have the subscription's interest) and <b>fences</b> (<see cref="Fence"/>:
/// published last, so once a fence arrived every earlier message of that publisher to this subscription has too: a
/// publisher's messages to one node travel one route connection in order, route.go:processInboundRoutedMsg, and one
/// account's traffic stays on one pooled connection, route.go:computeRoutePoolIdx).
/// </summary>
public sealed class Recorder : IAsyncDisposable
{
    public const string ProbeHeader = "Cluster-Probe";
    public const string FenceHeader = "Cluster-Fence";

    private readonly INatsSub<byte[]> _sub;
    private readonly Queue<NatsMsg<byte[]>> _ordinary = new();
    private readonly HashSet<string> _probes = new(StringComparer.Ordinal);
    private readonly HashSet<string> _fences = new(StringComparer.Ordinal);

    private Recorder(INatsSub<byte[]> sub, string name)
    {
        _sub = sub;
        Name = name;
    }

    /// <summary>For failure messages: which client and node this is.</summary>
    public string Name { get; }

    public string Subject => _sub.Subject;

    /// <summary>Ordinary messages read so far (including those already returned).</summary>
    public int OrdinaryCount { get; private set; }

    public static async Task<Recorder> SubscribeAsync(NatsConnection connection, string subject, string name, string? queueGroup = null) =>
        new(await connection.SubscribeCoreAsync<byte[]>(subject, queueGroup), name);

    /// <summary>Reads for at most <paramref name="wait"/>; true as soon as any of the probes <paramref name="ids"/> arrived (now or earlier).</summary>
    internal async Task<bool> SawProbeAsync(IReadOnlyCollection<string> ids, TimeSpan wait)
    {
        using var cts = new CancellationTokenSource(wait);
        while (!ids.Any(_probes.Contains))
        {
            try
            {
                Classify(await _sub.Msgs.ReadAsync(cts.Token));
            }
            catch (OperationCanceledException)
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>Reads until every fence in <paramref name="ids"/> arrived; returns the ordinary messages not returned before, in order.</summary>
    public async Task<List<NatsMsg<byte[]>>> UntilFencesAsync(params string[] ids)
    {
        using var cts = new CancellationTokenSource(ClusterClients.Wait);
        while (!ids.All(_fences.Contains))
        {
            try
            {
                Classify(await _sub.Msgs.ReadAsync(cts.Token));
            }
            catch (OperationCanceledException)
            {
                throw new TimeoutException($"{Name} ({Subject}): fence(s) {string.Join(", ", ids.Where(i => !_fences.Contains(i)))} "
                    + $"did not arrive within {ClusterClients.Wait.TotalSeconds:0} s ({_ordinary.Count} ordinary message(s) read meanwhile)");
            }
            catch (ChannelClosedException e)
            {
                throw new InvalidOperationException($"{Name} ({Subject}): the subscription ended while waiting for fences", e);
            }
        }

        return Take();
    }

    /// <summary>Reads until <paramref name="count"/> ordinary messages arrived in all (returned ones included); returns those not returned before.</summary>
    public async Task<List<NatsMsg<byte[]>>> UntilCountAsync(int count)
    {
        using var cts = new CancellationTokenSource(ClusterClients.Wait);
        while (OrdinaryCount < count)
        {
            try
            {
                Classify(await _sub.Msgs.ReadAsync(cts.Token));
            }
            catch (OperationCanceledException)
            {
                throw new TimeoutException($"{Name} ({Subject}): {OrdinaryCount} of {count} messages within {ClusterClients.Wait.TotalSeconds:0} s");
            }
        }

        return Take();
    }

    /// <summary>Every ordinary message already delivered to the subscription and not returned before (no waiting).</summary>
    public List<NatsMsg<byte[]>> Drain()
    {
        while (_sub.Msgs.TryRead(out var m))
        {
            Classify(m);
        }

        return Take();
    }

    private List<NatsMsg<byte[]>> Take()
    {
        var list = _ordinary.ToList();
        _ordinary.Clear();
        return list;
    }

    private void Classify(NatsMsg<byte[]> m)
    {
        if (m.Headers is { } h && h.TryGetValue(ProbeHeader, out var probe))
        {
            _probes.Add(probe.ToString());
        }
        else if (m.Headers is { } h2 && h2.TryGetValue(FenceHeader, out var fence))
        {
            _fences.Add(fence.ToString());
        }
        else
        {
            _ordinary.Enqueue(m);
            OrdinaryCount++;
        }
    }

    public ValueTask DisposeAsync() => _sub.DisposeAsync();
}
