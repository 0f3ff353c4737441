namespace NatsBroker.Storage.Internal;

/// <summary>
/// One item made ahead (on the <see cref="MakeAheadThread"/>) for a growing store: the memory engine's next huge-page slab and a sequence
/// index's next chunk. Fresh memory's first touch is a page fault per 4 KiB (~17 µs each on the paravirtualised VMs
/// we measure on); making the item ahead moves those faults off the appending thread. <see cref="Take"/> is called
/// by the owner (under its lock); the item is handed over with Interlocked.Exchange, and one maker runs at a time.
/// </summary>
internal sealed class PreparedAhead<T>(Func<T?> make, Action<T>? discard = null) : IMakeAhead where T : class
{
    private T? _ready;
    private int _making;
    private volatile bool _closed;

    /// <summary>The item made ahead, if one is ready; with <paramref name="makeNext"/>, the next one is asked for.</summary>
    public T? Take(bool makeNext)
    {
        var ready = Interlocked.Exchange(ref _ready, null);
        if (makeNext && !_closed && Interlocked.CompareExchange(ref _making, 1, 0) == 0)
            MakeAheadThread.Queue(this);
        return ready;
    }

    /// <summary>No more items; one already made is discarded (now, or by a maker that finishes later).</summary>
    public void Close()
    {
        _closed = true;
        Discard(Interlocked.Exchange(ref _ready, null));
    }

    void IMakeAhead.MakeAhead()
    {
        try
        {
            if (_closed || make() is not { } item) return;
            Discard(Interlocked.Exchange(ref _ready, item));
            // Close discards after setting _closed; an item published after that is discarded here. Both sides have
            // a full fence (Interlocked) between their write and their read, so at least one sees the other.
            if (_closed) Discard(Interlocked.Exchange(ref _ready, null));
        }
        finally
        {
            Volatile.Write(ref _making, 0);
        }
    }

    private void Discard(T? item)
    {
        if (item is not null) discard?.Invoke(item);
    }
}
