using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Server;

/// <summary>
/// The publish → route → deliver path must not allocate per message in steady state. Measured process-wide
/// (GC.GetTotalAllocatedBytes) around a 1:1 publish/deliver loop driven by blocking raw sockets, which
/// themselves allocate nothing; the budget absorbs timers and thread-pool bookkeeping, not per-message garbage.
/// </summary>
[Collection(AllocationCollection.Name)]
public class DeliveryAllocationTests
{
    [Fact]
    public async Task Publish_and_deliver_allocate_nothing_per_message_in_steady_state()
    {
        await using var server = new EmbeddedServer();
        using var sub = server.Connect();
        sub.Send("SUB bench.> 1\r\nPING\r\n"u8);
        EmbeddedServer.ReadUntil(sub, "PONG\r\n"u8);
        using var pub = server.Connect();

        const int batch = 1000;
        var sb = new StringBuilder();
        for (int i = 0; i < batch; i++) sb.Append("PUB bench.x 16\r\n0123456789abcdef\r\n");
        var batchBytes = Encoding.ASCII.GetBytes(sb.ToString());
        int perMsg = "MSG bench.x 1 16\r\n0123456789abcdef\r\n".Length;
        var recv = new byte[1 << 20];

        void Run(int batches)
        {
            // Windows of 20 batches (720 KB) in flight: a burst the outbound buffer must absorb without
            // allocating, bounded so the warm-up reaches the same pool size as the measured run.
            const int window = 20;
            for (int w = 0; w < batches; w += window)
            {
                long expected = (long)window * batch * perMsg, got = 0;
                var sender = Task.Run(() => { for (int b = 0; b < window; b++) pub.Send(batchBytes); });
                while (got < expected)
                {
                    int n = sub.Receive(recv);
                    Assert.True(n > 0, "subscriber connection closed");
                    got += n;
                }
                sender.Wait();
                Assert.Equal(expected, got);
            }
        }

        // Warm-up with the same burst: JIT, the chunk pool and list capacities reach their steady size.
        Run(200);
        Run(200);
        long before = GC.GetTotalAllocatedBytes(precise: true);
        const int measuredBatches = 200;
        Run(measuredBatches);
        long allocated = GC.GetTotalAllocatedBytes(precise: true) - before;
        double perMessage = (double)allocated / (measuredBatches * batch);
        // 200k messages: anything per-message would show up as >= 200 KB.
        Assert.True(perMessage < 0.5, $"allocated {allocated} bytes for {measuredBatches * batch} messages ({perMessage:F3} B/msg)");
    }
}

/// <summary>Tests that measure process-wide allocation, or depend on timing (keep-alive, slow consumer), run alone after the parallel ones.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class AllocationCollection
{
    public const string Name = "Timing or allocation sensitive (runs alone)";
}
