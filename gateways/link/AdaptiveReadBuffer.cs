namespace NatsBroker.Gateways.Link;

/// <summary>
/// A read buffer that adapts as nats-server's read loop does (client.go readLoop): it starts at
/// <see cref="MinSize"/>, doubles after a read that filled it (up to <see cref="MaxSize"/>) and halves after a run
/// of short reads. A busy direction then makes fewer, larger reads and writes (ws-pub-128: recv was half of the
/// websocket gateway's CPU at a fixed 32 KiB), while a quiet connection holds the small buffer, of which only the
/// pages its reads wrote are resident (<see cref="PinnedBuffers"/>). One owner.
/// </summary>
public sealed class AdaptiveReadBuffer : IDisposable
{
    public const int MinSize = PinnedBuffers.MinSize, MaxSize = PinnedBuffers.MaxSize;
    private const int ShortReadsBeforeShrink = 16;

    private byte[] _array = PinnedBuffers.Rent(MinSize);
    private int _size = MinSize, _shortReads;

    /// <summary>Where the next read goes (valid until the next <see cref="Read"/>).</summary>
    public Memory<byte> Memory => _array.AsMemory(0, _size);

    /// <summary>The bytes of the last read.</summary>
    public Memory<byte> Filled(int n) => _array.AsMemory(0, n);

    /// <summary>After the bytes of a read of <paramref name="n"/> bytes were used: resizes for the next read.</summary>
    public void Read(int n)
    {
        int next = _size;
        if (n == _size) next = Math.Min(_size * 2, MaxSize);
        else if (n >= _size / 4 || _size == MinSize) _shortReads = 0;
        else if (++_shortReads >= ShortReadsBeforeShrink) next = _size / 2;
        if (next == _size) return;
        _shortReads = 0;
        PinnedBuffers.Return(_array);
        _array = PinnedBuffers.Rent(next);
        _size = next;
    }

    public void Dispose()
    {
        var array = Interlocked.Exchange(ref _array, []);
        if (array.Length > 0) PinnedBuffers.Return(array);
    }
}
