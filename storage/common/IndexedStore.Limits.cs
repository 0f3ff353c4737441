using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Stream limits: discard-new refusals (nats-server storeRawMsg), max_msg_size, the stored size they count,
/// enforcement after each append and of every limit after recovery or a limits update.
/// </summary>
internal abstract partial class IndexedStore
{
    /// <summary>
    /// Discard new: whether one more message of <paramref name="size"/> stored bytes is refused, as nats-server's
    /// storeRawMsg decides (memstore.go and filestore.go, the same rules with each engine's size). A subject already
    /// at max_msgs_per_subject is refused outright with discard_new_per_subject; without it the message replaces the
    /// subject's oldest, so max_msgs does not refuse it and max_bytes refuses it only if the oldest is smaller. A
    /// message with a Nats-Rollup header passes the per-subject refusal (its rollup purges the subject after it is
    /// stored, restoring the limit), as storeRawMsg's <c>len(sliceHeader(JSMsgRollup, hdr)) == 0</c>.
    /// </summary>
    private StoreStatus DiscardNewRefusal(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, long size, StreamLimits lim, out SubjectInfo? existing)
    {
        existing = null;
        bool atSubjectLimit = false;
        if (lim.MaxMessagesPerSubject > 0)
        {
            existing = Subjects.Find(subject);
            atSubjectLimit = existing is not null && existing.Count >= (ulong)lim.MaxMessagesPerSubject;
            if (atSubjectLimit && lim.DiscardNewPerSubject && !HasRollupHeader(headers)) return StoreStatus.MaxMessagesPerSubjectExceeded;
        }
        if (lim.MaxMessages > 0 && Msgs >= (ulong)lim.MaxMessages && !atSubjectLimit) return StoreStatus.MaxMessagesExceeded;
        if (lim.MaxBytes > 0 && Bytes + (ulong)size > (ulong)lim.MaxBytes
            && (!atSubjectLimit || Index.Get(existing!.First).Size < size))
            return StoreStatus.MaxBytesExceeded;
        return StoreStatus.Ok;
    }

    /// <summary>
    /// A non-empty Nats-Rollup header (nats-server client.go sliceHeader: the first "\r\nNats-Rollup:", spaces
    /// skipped, the value up to CRLF). The JetStream layer has checked its value before the append.
    /// </summary>
    private static bool HasRollupHeader(ReadOnlySpan<byte> headers)
    {
        int i = headers.IndexOf("\r\nNats-Rollup:"u8);
        if (i < 0) return false;
        var value = headers[(i + "\r\nNats-Rollup:"u8.Length)..].TrimStart((byte)' ');
        return !value.IsEmpty && !value.StartsWith("\r\n"u8);
    }

    /// <summary>
    /// max_msg_size counts headers + payload, not the subject (stream.go processJetStreamMsg; written so that the
    /// sum cannot overflow, as there).
    /// </summary>
    private static bool TooLarge(int headersLength, int payloadLength, StreamLimits lim) =>
        lim.MaxMessageSize > 0 && (headersLength > lim.MaxMessageSize || payloadLength > lim.MaxMessageSize - headersLength);

    /// <summary>
    /// What one message counts toward <see cref="Bytes"/>, max_bytes and the account's limits: the engine's figure
    /// (IStreamStore.StoredSize), kept per message in <see cref="IndexEntry.Size"/> so a removal subtracts exactly
    /// what the append added.
    /// </summary>
    public abstract long StoredSize(int subjectLength, int headersLength, int payloadLength);

    private void EnforceLimitsAfterAppend(SubjectInfo subj)
    {
        var lim = Limits;
        if (lim.MaxMessagesPerSubject > 0)
        {
            // Durable: a per-subject removal in the middle cannot be re-derived at recovery once other deletes happened.
            while (subj.Count > (ulong)lim.MaxMessagesPerSubject) RemoveLocked(subj.First, RemoveKind.Durable);
        }
        if (lim.MaxMessages > 0)
        {
            while (Msgs > (ulong)lim.MaxMessages) RemoveLocked(First, RemoveKind.Lazy);
        }
        if (lim.MaxBytes > 0)
        {
            while (Bytes > (ulong)lim.MaxBytes && Msgs > 0) RemoveLocked(First, RemoveKind.Lazy);
        }
    }

    /// <summary>Re-applies every limit (after recovery or a limits update).</summary>
    protected void EnforceAllLimitsLocked()
    {
        var lim = Limits;
        if (lim.MaxMessagesPerSubject > 0)
        {
            var over = new List<SubjectInfo>();
            foreach (var s in Subjects.All) if (s.Count > (ulong)lim.MaxMessagesPerSubject) over.Add(s);
            foreach (var s in over)
                while (s.Count > (ulong)lim.MaxMessagesPerSubject) RemoveLocked(s.First, RemoveKind.Durable);
        }
        if (lim.MaxMessages > 0) while (Msgs > (ulong)lim.MaxMessages) RemoveLocked(First, RemoveKind.Lazy);
        if (lim.MaxBytes > 0) while (Bytes > (ulong)lim.MaxBytes && Msgs > 0) RemoveLocked(First, RemoveKind.Lazy);
        ExpireLocked(NowNanos());
    }

    public StoreStatus UpdateLimits(StreamLimits limits)
    {
        ArgumentNullException.ThrowIfNull(limits);
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            Limits = limits;
            EnforceAllLimitsLocked();
            StartExpiryTimer();
            return OnOperationDone(FloorDirty);
        }
    }
}
