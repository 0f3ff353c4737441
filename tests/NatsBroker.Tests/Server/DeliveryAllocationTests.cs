
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

        double perMessage = PublishDeliverLoop.AllocatedPerMessage(pub, sub);
        // 200k messages: anything per-message would show up as >= 200 KB.
        Assert.True(perMessage < 0.5, $"{perMessage:F3} B/msg allocated over 200k messages");
    }
}

/// <summary>Tests that measure process-wide allocation, or depend on timing (keep-alive, slow consumer), run alone after the parallel ones.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class AllocationCollection
{
    public const string Name = "Timing or allocation sensitive (runs alone)";
}
