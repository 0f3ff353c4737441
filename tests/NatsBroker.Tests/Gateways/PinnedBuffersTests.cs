using NatsBroker.Gateways.Link;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// The gateways' session read buffers: exact power-of-two sizes from the pinned heap (an idle session's buffer must
/// never be moved by a compacting collection, which would make all of it resident), and the adaptive resizing that
/// draws on them.
/// </summary>
public sealed class PinnedBuffersTests
{
    [Theory]
    [InlineData(32 * 1024)]
    [InlineData(64 * 1024)]
    [InlineData(128 * 1024)]
    [InlineData(256 * 1024)]
    public void Rents_exactly_the_size_asked_for_outside_the_movable_generations(int size)
    {
        var array = PinnedBuffers.Rent(size);
        try
        {
            Assert.Equal(size, array.Length);
            // Objects on the pinned object heap report the oldest generation from birth; a fresh movable array of
            // this size would be in generation 0.
            Assert.Equal(GC.MaxGeneration, GC.GetGeneration(array));
        }
        finally
        {
            PinnedBuffers.Return(array);
        }
    }

    [Theory]
    [InlineData(0)]
    [InlineData(16 * 1024)]
    [InlineData(48 * 1024)]
    [InlineData(512 * 1024)]
    public void Refuses_sizes_outside_its_classes(int size) =>
        Assert.Throws<ArgumentOutOfRangeException>(() => PinnedBuffers.Rent(size));

    [Fact]
    public void Adaptive_buffer_doubles_after_a_full_read_and_halves_after_a_run_of_short_reads()
    {
        using var buffer = new AdaptiveReadBuffer();
        Assert.Equal(AdaptiveReadBuffer.MinSize, buffer.Memory.Length);
        buffer.Read(AdaptiveReadBuffer.MinSize);
        Assert.Equal(2 * AdaptiveReadBuffer.MinSize, buffer.Memory.Length);
        for (int i = 0; i < 15; i++) buffer.Read(100);
        Assert.Equal(2 * AdaptiveReadBuffer.MinSize, buffer.Memory.Length);
        buffer.Read(100);
        Assert.Equal(AdaptiveReadBuffer.MinSize, buffer.Memory.Length);
        for (int i = 0; i < 40; i++) buffer.Read(100);
        Assert.Equal(AdaptiveReadBuffer.MinSize, buffer.Memory.Length);
    }
}
