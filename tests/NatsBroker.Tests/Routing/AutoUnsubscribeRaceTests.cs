using System.Text;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// <c>UNSUB sid max</c> with several publishers racing: exactly <c>max</c> messages arrive. The count is checked and
/// bumped under the subscriber's own delivery lock, as nats-server's deliverMsg does under the client lock.
/// </summary>
public sealed class AutoUnsubscribeRaceTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Concurrent_publishers_deliver_exactly_max_messages(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        const int max = 50, publishers = 6, perPublisher = 2000;
        for (int round = 0; round < 5; round++)
        {
            string subject = $"race.{round}";
            await using var sub = await Connected(s);
            await sub.SendAsync($"SUB {subject} 1\r\nUNSUB 1 {max}\r\n");
            await sub.PingAsync();
            var pubs = new List<RawClient>();
            for (int p = 0; p < publishers; p++) pubs.Add(await Connected(s));
            var burst = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat($"PUB {subject} 1\r\nx\r\n", perPublisher)));
            // All publishers send their whole burst at once, so deliveries to the one subscriber race.
            await Task.WhenAll(pubs.Select(p => p.SendBytesAsync(burst)));
            foreach (var p in pubs) await p.PingAsync(TimeSpan.FromSeconds(20));
            var lines = await sub.PingAsync(TimeSpan.FromSeconds(20));
            int received = lines.Count(l => l.StartsWith("MSG ", StringComparison.Ordinal));
            Assert.Equal(max, received);
            foreach (var p in pubs) await p.DisposeAsync();
        }
    }
}
