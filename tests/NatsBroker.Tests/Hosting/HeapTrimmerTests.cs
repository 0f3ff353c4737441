using NatsBroker.Contracts.Runtime;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// The heap trimmer (contracts/Runtime/HeapTrimmer.cs): when it collects, and that a collection gives memory back.
/// End to end (the MQTT gateway after a connect storm) it is measured by the bench row <c>mqtt-sessions10k</c>.
/// </summary>
public sealed class HeapTrimmerTests(ITestOutputHelper output)
{
    private const long MB = 1L << 20;

    [Theory]
    [InlineData(0, 60, 40, true)] // quiet, grew by 20 MB and by half
    [InlineData(512 * 1024, 60, 40, true)] // some allocation, under the quiet threshold
    [InlineData(2 * MB, 60, 40, false)] // still allocating: the burst may not be over
    [InlineData(0, 50, 40, false)] // grew by 10 MB only
    [InlineData(0, 240, 200, false)] // grew by 40 MB but by a fifth only
    [InlineData(0, 2048, 1024, false)] // too large a heap to pause for
    [InlineData(0, 30, 40, false)] // shrank
    public void Trims_only_a_quiet_heap_that_grew_by_enough(long allocatedInPeriod, long committedMb, long baselineMb, bool expected)
    {
        Assert.Equal(expected, HeapTrimmer.ShouldTrim(allocatedInPeriod, committedMb * MB, baselineMb * MB));
    }

    [Fact]
    public void A_trim_gives_the_memory_of_dead_objects_back()
    {
        using var trimmer = HeapTrimmer.Start();
        Assert.NotNull(trimmer); // the test run does not switch trimming off

        // 64 MB in small arrays that survive a collection (so the GC commits them as part of an older generation),
        // then die: what a connect storm's handshake buffers look like afterwards.
        var keep = new List<byte[]>();
        for (int i = 0; i < 64 * 256; i++) keep.Add(new byte[4096 - 32]);
        GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: false);
        long heldCommitted = GC.GetGCMemoryInfo().TotalCommittedBytes;
        GC.KeepAlive(keep);
        keep = null;

        var trim = trimmer.TrimNow();
        output.WriteLine($"held {heldCommitted / (double)MB:0.0} MB committed; trim: {trim}");
        Assert.True(trim.CommittedAfter < heldCommitted - 32 * MB, $"committed {heldCommitted / MB} MB before, {trim.CommittedAfter / MB} MB after");
    }

}
