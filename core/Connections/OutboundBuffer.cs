using System.Buffers;
using System.Runtime.CompilerServices;

namespace NatsBroker.Connections;

/// <summary>
/// A connection's bounded outbound buffer, as a list of fixed-size pooled chunks.
/// <para>
/// Producers (any reader thread delivering to this client) append under <see cref="Lock"/>; the connection's
/// single writer swaps the whole chunk list for an empty one and writes it outside the lock, so a socket write
/// never blocks producers and one wake-up drains a whole batch. Chunks are <see cref="ChunkSize"/> arrays from
/// <see cref="ChunkPool"/>, so bursts never copy or allocate: a
/// message that does not fit the current chunk's tail spills into the next.
/// </para>
/// Lock order: a producer holds at most one destination's Lock at a time and never takes another lock inside it.
/// </summary>
internal sealed class OutboundBuffer
{
    public const int ChunkSize = ChunkPool.ChunkSize;

    public readonly Lock Lock = new();
    private List<ArraySegment<byte>> _fill = new(4);
    private List<ArraySegment<byte>> _spare = new(4);
    private byte[]? _current;
    private int _currentLength;
    private bool _released;

    /// <summary>Bytes queued and not yet written (queued + in-flight write). Guarded by Lock.</summary>
    public long Pending;

    /// <summary>Contiguous space for <paramref name="length"/> bytes in the current chunk, if it fits there. Caller holds Lock.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public bool TryReserve(int length, out Span<byte> span)
    {
        if (_current is { } c && _currentLength + length <= c.Length)
        {
            span = c.AsSpan(_currentLength, length);
            _currentLength += length;
            Pending += length;
            return true;
        }
        if (length <= ChunkSize && !_released)
        {
            SealCurrent();
            _current = ChunkPool.Rent();
            span = _current.AsSpan(0, length);
            _currentLength = length;
            Pending += length;
            return true;
        }
        span = default;
        return false;
    }

    /// <summary>Appends bytes, spilling across chunks. Caller holds Lock.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void Write(ReadOnlySpan<byte> data)
    {
        if (_released) return;
        Pending += data.Length;
        while (!data.IsEmpty)
        {
            if (_current is null || _currentLength == _current.Length)
            {
                SealCurrent();
                _current = ChunkPool.Rent();
            }
            int n = Math.Min(data.Length, _current.Length - _currentLength);
            data[..n].CopyTo(_current.AsSpan(_currentLength));
            _currentLength += n;
            data = data[n..];
        }
    }

    public void Write(in ReadOnlySequence<byte> data)
    {
        foreach (var segment in data) Write(segment.Span);
    }

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void SealCurrent()
    {
        if (_current is null) return;
        if (_currentLength > 0) _fill.Add(new ArraySegment<byte>(_current, 0, _currentLength));
        else ChunkPool.Return(_current);
        _current = null;
        _currentLength = 0;
    }

    /// <summary>Takes everything queued for the writer. Caller holds Lock. Empty list = nothing to write.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public List<ArraySegment<byte>> TakeForWrite()
    {
        SealCurrent();
        var taken = _fill;
        _fill = _spare;
        _spare = taken;
        return taken;
    }

    /// <summary>After the writer wrote (or dropped) a taken list: returns its chunks. Caller holds Lock.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void Written(List<ArraySegment<byte>> taken)
    {
        foreach (var seg in taken)
        {
            Pending -= seg.Count;
            ChunkPool.Return(seg.Array!);
        }
        taken.Clear();
    }

    /// <summary>Drops everything queued (slow consumer, abrupt close). Caller holds Lock.</summary>
    public void Discard()
    {
        SealCurrent();
        foreach (var seg in _fill)
        {
            Pending -= seg.Count;
            ChunkPool.Return(seg.Array!);
        }
        _fill.Clear();
    }

    /// <summary>Once the writer has stopped: no more appends, all chunks back to the pool. Caller holds Lock.</summary>
    public void Release()
    {
        if (_released) return;
        Discard();
        _released = true;
    }

    public bool IsReleased => _released;
}
