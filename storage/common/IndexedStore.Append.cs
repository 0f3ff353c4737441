using NatsBroker.Contracts;

namespace NatsBroker.Storage.Internal;

/// <summary>
/// Appends: one message, at a given sequence (a gap is skipped), and a batch checked whole before it is
/// written; the engine hooks around a batch and the durability wait done outside the lock.
/// </summary>
internal abstract partial class IndexedStore
{
    public AppendResult Append(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long timestamp = 0, long ttl = 0)
    {
        ulong seq;
        StoreStatus st;
        long ticket;
        lock (Sync)
        {
            // One clock read per append at most: a caller's timestamp (JetStream passes one) saves it, and expiry
            // reads the clock itself when it has anything to expire (AppendLocked).
            long now = 0;
            if (timestamp == 0) timestamp = now = NowNanos();
            seq = Last + 1;
            st = AppendLocked(seq, timestamp, now, subject, headers, payload, ttl);
            ticket = TakeDurabilityTicket();
        }
        // Durability waits happen outside the lock, so concurrent appenders share one fsync (group commit).
        if (ticket != 0 && st == StoreStatus.Ok) st = WaitDurable(ticket);
        RunDeferredWork();
        return new AppendResult(st, st == StoreStatus.Ok ? seq : 0, timestamp);
    }

    /// <summary>Returns (and clears) the durability ticket of the write just made under the lock; 0 = none needed.</summary>
    protected virtual long TakeDurabilityTicket() => 0;

    /// <summary>Blocks, outside the lock, until the write with <paramref name="ticket"/> is durable.</summary>
    protected virtual StoreStatus WaitDurable(long ticket) => StoreStatus.Ok;

    /// <summary>
    /// Called without the lock after an append (and the expiry timer) released it: engine work the write made necessary
    /// that may wait on the disk, done here so that other writers are not held up by it (the file engine deletes
    /// emptied blocks here). Must be cheap when there is nothing to do.
    /// </summary>
    protected virtual void RunDeferredWork()
    {
    }

    public StoreStatus AppendAt(ulong sequence, long timestamp, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl = 0)
    {
        StoreStatus st;
        long ticket;
        lock (Sync)
        {
            var refused = WriteRefusal();
            if (refused != StoreStatus.Ok) return refused;
            if (sequence <= Last) return StoreStatus.SequenceMismatch;
            long now = 0;
            if (timestamp == 0) timestamp = now = NowNanos();
            if (sequence > Last + 1)
            {
                var sk = SkipLocked(sequence - 1, persist: false);
                if (sk != StoreStatus.Ok) return sk;
            }
            st = AppendLocked(sequence, timestamp, now, subject, headers, payload, ttl);
            ticket = TakeDurabilityTicket();
        }
        if (ticket != 0 && st == StoreStatus.Ok) st = WaitDurable(ticket);
        RunDeferredWork();
        return st;
    }

    public AppendResult AppendBatch(IAppendBatch batch, long timestamp = 0)
    {
        ArgumentNullException.ThrowIfNull(batch);
        int n = batch.Count;
        if (n == 0) return new(StoreStatus.InvalidArgument, 0, 0);
        ulong last;
        StoreStatus st;
        long ticket;
        lock (Sync)
        {
            long now = NowNanos();
            if (timestamp == 0) timestamp = now;
            st = AppendBatchLocked(batch, timestamp, now);
            last = Last;
            ticket = TakeDurabilityTicket();
        }
        if (ticket != 0 && st == StoreStatus.Ok) st = WaitDurable(ticket);
        RunDeferredWork();
        return new AppendResult(st, st == StoreStatus.Ok ? last : 0, timestamp);
    }

    /// <summary>
    /// The batch is checked whole before anything is written (so a refusal leaves the store untouched), written
    /// between <see cref="BeginBatch"/> and <see cref="EndBatch"/> with no expiry or limit removal in between (an
    /// engine can then mark its records as one unit), and the limits are enforced once after it.
    /// </summary>
    private StoreStatus AppendBatchLocked(IAppendBatch batch, long ts, long now)
    {
        var refused = WriteRefusal();
        if (refused != StoreStatus.Ok) return refused;
        int n = batch.Count;
        var lim = Limits;
        if (lim.MaxAge > TimeSpan.Zero || _ttl.Count > 0) ExpireLocked(now);
        ulong bytes = 0;
        Dictionary<string, ulong>? perSubject = null;
        bool perSubjectNew = lim.Discard == DiscardPolicy.New && lim.DiscardNewPerSubject && lim.MaxMessagesPerSubject > 0;
        for (int i = 0; i < n; i++)
        {
            var subject = batch.Subject(i);
            if (subject.IsEmpty || !SubjectMatch.IsLiteral(subject)) return StoreStatus.InvalidArgument;
            int hl = batch.Headers(i).Length, pl = batch.Payload(i).Length;
            if (TooLarge(hl, pl, lim)) return StoreStatus.MessageTooLarge;
            long size = StoredSize(subject.Length, hl, pl);
            if (size > int.MaxValue / 2) return StoreStatus.MessageTooLarge;
            bytes += (ulong)size;
            if (perSubjectNew)
            {
                perSubject ??= new(StringComparer.Ordinal);
                var key = System.Text.Encoding.UTF8.GetString(subject);
                if (!perSubject.TryGetValue(key, out ulong count)) count = Subjects.Find(subject)?.Count ?? 0;
                if (++count > (ulong)lim.MaxMessagesPerSubject) return StoreStatus.MaxMessagesPerSubjectExceeded;
                perSubject[key] = count;
            }
        }
        if (lim.Discard == DiscardPolicy.New)
        {
            if (lim.MaxMessages > 0 && Msgs + (ulong)n > (ulong)lim.MaxMessages) return StoreStatus.MaxMessagesExceeded;
            if (lim.MaxBytes > 0 && Bytes + bytes > (ulong)lim.MaxBytes) return StoreStatus.MaxBytesExceeded;
        }
        var st = BeginBatch(batch);
        if (st != StoreStatus.Ok) return st;
        for (int i = 0; i < n; i++)
        {
            MarkBatchRecord(more: i < n - 1);
            st = AppendLocked(Last + 1, ts, now, batch.Subject(i), batch.Headers(i), batch.Payload(i), batch.Ttl(i), inBatch: true);
            if (st != StoreStatus.Ok)
            {
                // Checked above, so only an engine failure gets here; part of the batch is in the indexes. The
                // store stops accepting writes (its incomplete batch is discarded when it is reopened).
                if (i > 0) FailStop($"store '{Config.StreamName}': batch append failed after {i} of {n} messages ({st}: {LastError}); the store is read-only until it is reopened");
                EndBatch();
                return i > 0 ? StoreStatus.IoError : st;
            }
        }
        EndBatch();
        for (int i = 0; i < n; i++)
        {
            var subj = Subjects.Find(batch.Subject(i));
            if (subj is not null) EnforceLimitsAfterAppend(subj);
        }
        return StoreStatus.Ok;
    }

    /// <summary>Called before the records of a batch are written (under the lock): room, pending writes.</summary>
    protected virtual StoreStatus BeginBatch(IAppendBatch batch) => StoreStatus.Ok;

    /// <summary>Tells the engine whether the next message written continues the current batch.</summary>
    protected virtual void MarkBatchRecord(bool more) { }

    /// <summary>Called after the records of a batch (or on failure).</summary>
    protected virtual void EndBatch() { }

    /// <param name="now">The clock read by the caller, or 0 when it did not read it (read here if expiry needs it).</param>
    private StoreStatus AppendLocked(ulong seq, long ts, long now, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, long ttl, bool inBatch = false)
    {
        var refused = WriteRefusal();
        if (refused != StoreStatus.Ok) return refused;
        if (subject.IsEmpty || !SubjectMatch.IsLiteral(subject)) return StoreStatus.InvalidArgument;
        var lim = Limits;
        if (TooLarge(headers.Length, payload.Length, lim)) return StoreStatus.MessageTooLarge;
        long size = StoredSize(subject.Length, headers.Length, payload.Length);
        if (size > int.MaxValue / 2) return StoreStatus.MessageTooLarge;
        bool ageOrTtl = lim.MaxAge > TimeSpan.Zero || _ttl.Count > 0;
        if (ageOrTtl && !inBatch) ExpireLocked(now != 0 ? now : NowNanos());

        SubjectInfo? existing = null;
        if (lim.Discard == DiscardPolicy.New && !inBatch)
        {
            var refusal = DiscardNewRefusal(subject, headers, size, lim, out existing);
            if (refusal != StoreStatus.Ok) return refusal;
        }

        var subj = existing ?? Subjects.GetOrAdd(subject);
        // Index entry first: the engine fills Location/Aux; on failure the sequence is not consumed.
        if (Index.End != seq && Msgs == 0) Index.Reset(seq);
        ref var e = ref Index.Add();
        e.SubjectId = -1;
        e.Location = -1;
        var st = WriteMessage(seq, ts, ttl, subject, headers, payload, ref e);
        if (st != StoreStatus.Ok)
        {
            // The sequence is not consumed: forget the entry (and a subject created for it).
            Index.RemoveLast();
            if (subj.Count == 0) Subjects.Remove(subj);
            return st;
        }
        e.Timestamp = ts;
        e.Size = (int)size;
        e.Next = 0;
        if (ttl > 0) e.Flags |= IndexEntry.FlagTtl;
        Index.MarkLive(seq);
        LinkLive(ref e, subj, seq);
        Last = seq;
        LastTs = ts;
        if (ttl > 0)
        {
            _ttl.Enqueue(seq, ts + ttl);
            if (_expiryTimer is null) StartExpiryTimer();
        }
        if (!inBatch) EnforceLimitsAfterAppend(subj);
        return StoreStatus.Ok;
    }
}
