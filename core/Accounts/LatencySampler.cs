using System.Buffers;
using NatsBroker.Configuration;
using NatsBroker.Routing;

namespace NatsBroker.Accounts;

/// <summary>
/// Decides which requests through one service import are measured (server/accounts.go shouldSample): all at 100%,
/// a random share otherwise (nats-server's <c>rand.Int31n(100) &lt;= sampling</c>), and, when the dice say no or
/// the sampling is "headers", those carrying a sampled trace header (<see cref="TraceHeaders"/>). Only a sampled
/// request allocates (its <see cref="LatencyTracking"/>); the header scan of the others does not.
/// </summary>
internal sealed class LatencySampler(ServiceLatencyReporter reporter, ServiceLatencyConfig config, Account exporter, bool share)
{
    public ServiceLatencyConfig Config => config;

    /// <summary>The tracking of <paramref name="msg"/> when it is sampled; null when not.</summary>
    public LatencyTracking? Sample(ref RoutedMessage msg)
    {
        int sampling = config.Sampling;
        if (sampling >= 100 || (sampling > 0 && Random.Shared.Next(100) <= sampling))
            return new LatencyTracking(reporter, config, exporter, msg.Origin, share, null);
        if (msg.HeaderSize <= 0) return null;
        var block = msg.Payload.Slice(0, msg.HeaderSize);
        SortedDictionary<string, List<string>>? header;
        if (block.IsSingleSegment)
        {
            if (!TraceHeaders.ShouldSample(block.FirstSpan, out header)) return null;
        }
        else
        {
            var rented = ArrayPool<byte>.Shared.Rent(msg.HeaderSize);
            try
            {
                block.CopyTo(rented);
                if (!TraceHeaders.ShouldSample(rented.AsSpan(0, msg.HeaderSize), out header)) return null;
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(rented);
            }
        }
        return new LatencyTracking(reporter, config, exporter, msg.Origin, share, header);
    }
}
