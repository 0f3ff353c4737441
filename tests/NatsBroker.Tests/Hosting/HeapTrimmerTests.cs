using System.Text;
using System.Text.RegularExpressions;
using NatsBroker.Transport.Runtime;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// The heap trimmer (transport/Runtime/HeapTrimmer.cs): when it collects, that a collection gives memory back, and
/// that the core process does it on its own after its heap grew. The MQTT gateway's trim after a connect storm is
/// measured by the bench row <c>mqtt-sessions10k</c>.
/// </summary>
public sealed partial class HeapTrimmerTests(ITestOutputHelper output)
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

    [Fact]
    public async Task The_core_gives_memory_back_after_a_burst_of_subscriptions()
    {
        // Debug level: the trim's log line is how this test sees it.
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { ExtraArgs = ["-D"] }, output);
        await using var client = await RawClient.ConnectAndHandshakeAsync(server);

        // 150,000 subscriptions (tens of MB of subscription state in the core), then all removed: a burst whose
        // memory is garbage afterwards.
        const int subs = 150_000;
        var batch = new StringBuilder();
        for (int start = 0; start < subs; start += 10_000)
        {
            batch.Clear();
            for (int i = start; i < start + 10_000; i++) batch.Append("SUB trim.burst.").Append(i).Append(' ').Append(i + 1).Append("\r\n");
            await client.SendAsync(batch.ToString());
        }
        await client.SendLineAsync("PING");
        Assert.Equal("PONG", await client.ReadLineAsync(TimeSpan.FromSeconds(30)));
        for (int start = 0; start < subs; start += 10_000)
        {
            batch.Clear();
            for (int i = start; i < start + 10_000; i++) batch.Append("UNSUB ").Append(i + 1).Append("\r\n");
            await client.SendAsync(batch.ToString());
        }
        await client.SendLineAsync("PING");
        Assert.Equal("PONG", await client.ReadLineAsync(TimeSpan.FromSeconds(30)));

        // The trimmer looks every 250 ms and waits for a quiet period: well within 10 s.
        Match? trimmed = null;
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        while (DateTime.UtcNow < deadline && !(trimmed = TrimLine().Match(server.Output)).Success) await Task.Delay(100);
        output.WriteLine(server.OutputTail(2000));
        Assert.True(trimmed is { Success: true }, "no 'heap trimmed' line within 10 s");
        double before = double.Parse(trimmed.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
        double after = double.Parse(trimmed.Groups[2].Value, System.Globalization.CultureInfo.InvariantCulture);
        Assert.True(after < before, $"committed {before} MB before the trim, {after} MB after");

        // The server still serves.
        await client.SendLineAsync("PING");
        Assert.Equal("PONG", await client.ReadLineAsync());
    }

    [GeneratedRegex(@"heap trimmed: ([0-9.]+) -> ([0-9.]+) MB committed")]
    private static partial Regex TrimLine();
}
