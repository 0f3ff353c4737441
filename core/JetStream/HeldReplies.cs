using NatsBroker.Routing;

namespace NatsBroker.JetStream;

/// <summary>
/// The answers of one ingest drain (PubAcks, duplicate acks, refusals, batch acks), held back until the stream's store
/// has committed the appends they answer (<see cref="NatsBroker.Contracts.IStreamStore.Commit"/>). A reply routed
/// into a destination's outbound buffer can leave with any later flush of that connection (another publisher's
/// batch, the poller's pass end), so the only way to keep a PubAck behind the write is not to route it before.
/// Every answer is held, not only PubAcks: a duplicate's ack names a sequence that may be in the same uncommitted
/// run, and holding all of them keeps each publisher's answers in order.
/// <para>
/// Owned by the ingest gate's holder (one thread at a time). The reply subjects and payloads are copied into one
/// reused byte buffer, so a drain allocates nothing once the buffer has grown to the largest drain seen.
/// </para>
/// </summary>
internal sealed class HeldReplies
{
    private byte[] _bytes = new byte[4096];
    private int _used;
    private (int Offset, int ReplyLength, int PayloadLength)[] _entries = new (int, int, int)[64];

    public int Count { get; private set; }

    public void Add(ReadOnlySpan<byte> reply, ReadOnlySpan<byte> payload)
    {
        int need = reply.Length + payload.Length;
        if (_used + need > _bytes.Length) Array.Resize(ref _bytes, Math.Max(_bytes.Length * 2, _used + need));
        if (Count == _entries.Length) Array.Resize(ref _entries, _entries.Length * 2);
        reply.CopyTo(_bytes.AsSpan(_used));
        payload.CopyTo(_bytes.AsSpan(_used + reply.Length));
        _entries[Count++] = (_used, reply.Length, payload.Length);
        _used += need;
    }

    /// <summary>Routes every held answer into <paramref name="batch"/>, in the order held, and forgets them.</summary>
    public void Release(Router router, DeliveryBatch batch)
    {
        for (int i = 0; i < Count; i++)
        {
            var (off, rl, pl) = _entries[i];
            var reply = _bytes.AsSpan(off, rl);
            router.PublishInternal(reply, reply, default, default, _bytes.AsSpan(off + rl, pl), batch);
        }
        Clear();
    }

    /// <summary>
    /// The commit failed: each held answer is replaced by <paramref name="error"/> (an acknowledgement of an append
    /// that may not have reached the disk must not be sent), then forgotten.
    /// </summary>
    public void ReleaseAsError(Router router, DeliveryBatch batch, ReadOnlySpan<byte> error)
    {
        for (int i = 0; i < Count; i++)
        {
            var (off, rl, _) = _entries[i];
            var reply = _bytes.AsSpan(off, rl);
            router.PublishInternal(reply, reply, default, default, error, batch);
        }
        Clear();
    }

    private void Clear()
    {
        Count = 0;
        _used = 0;
        // A burst's buffer is not kept for ever: an idle stream goes back to the small one.
        if (_bytes.Length > 1 << 20) _bytes = new byte[4096];
        if (_entries.Length > 1 << 14) _entries = new (int, int, int)[64];
    }
}
