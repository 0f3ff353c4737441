using System.Buffers;

namespace NatsBroker.Server;

/// <summary>
/// A connection's bounded outbound buffer: producers (any reader thread delivering to this client) append
/// under <see cref="Lock"/>; the connection's single writer swaps the filled buffer for its spare and writes it
/// outside the lock, so a socket write never blocks producers and one write carries a whole batch.
/// Buffers come from <see cref="ArrayPool{T}.Shared"/> and are reused: nothing is allocated per message.
/// Lock order: a producer holds at most one destination's Lock at a time and never takes a server lock inside it.
/// </summary>
internal sealed class OutboundBuffer
{
    private const int InitialSize = 32 * 1024;
    // Above this, an idle buffer is handed back to the pool instead of being kept for the next burst.
    private const int RetainSize = 1024 * 1024;

    public readonly Lock Lock = new();
    private byte[] _fill = ArrayPool<byte>.Shared.Rent(InitialSize);
    private int _fillLength;
    private byte[] _spare = ArrayPool<byte>.Shared.Rent(InitialSize);
    private bool _released;

    /// <summary>Bytes queued and not yet written (fill + in-flight write). Guarded by Lock.</summary>
    public long Pending;

    /// <summary>Reserve <paramref name="length"/> bytes at the end of the fill buffer. Caller holds Lock.</summary>
    public Span<byte> Reserve(int length)
    {
        int needed = _fillLength + length;
        if (needed > _fill.Length) Grow(needed);
        var span = _fill.AsSpan(_fillLength, length);
        _fillLength = needed;
        Pending += length;
        return span;
    }

    private void Grow(int needed)
    {
        int size = Math.Max(needed, _fill.Length * 2);
        var bigger = ArrayPool<byte>.Shared.Rent(size);
        _fill.AsSpan(0, _fillLength).CopyTo(bigger);
        ArrayPool<byte>.Shared.Return(_fill);
        _fill = bigger;
    }

    /// <summary>Swap out what is queued for writing. Caller holds Lock. Returns an empty memory when nothing is queued.</summary>
    public ReadOnlyMemory<byte> TakeForWrite()
    {
        if (_fillLength == 0 || _released) return ReadOnlyMemory<byte>.Empty;
        var full = _fill;
        int length = _fillLength;
        _fill = _spare;
        _fillLength = 0;
        _spare = full;
        return new ReadOnlyMemory<byte>(full, 0, length);
    }

    /// <summary>After a write completed. Caller holds Lock.</summary>
    public void Written(int length)
    {
        Pending -= length;
        if (_spare.Length > RetainSize && !_released)
        {
            ArrayPool<byte>.Shared.Return(_spare);
            _spare = ArrayPool<byte>.Shared.Rent(InitialSize);
        }
        if (_fillLength == 0 && _fill.Length > RetainSize && !_released)
        {
            ArrayPool<byte>.Shared.Return(_fill);
            _fill = ArrayPool<byte>.Shared.Rent(InitialSize);
        }
    }

    /// <summary>Drop everything queued (slow consumer, close). Caller holds Lock.</summary>
    public void Discard()
    {
        Pending -= _fillLength;
        _fillLength = 0;
    }

    /// <summary>Return the buffers to the pool once the writer has stopped. Caller holds Lock.</summary>
    public void Release()
    {
        if (_released) return;
        _released = true;
        ArrayPool<byte>.Shared.Return(_fill);
        ArrayPool<byte>.Shared.Return(_spare);
        _fill = _spare = [];
        _fillLength = 0;
    }
}
