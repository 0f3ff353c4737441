using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Index image checkpoints (FORMAT.md "Index image"): every <c>image_interval_bytes</c> written (default 128 MiB),
/// at an explicit flush and at a clean close, the store's state is captured under the store lock in
/// O(blocks + subjects + index chunks changed since the last checkpoint), plus one pass over the per-chunk
/// counters, without copying index entries: the changed chunks are frozen (<see cref="SequenceIndex.Freeze"/>,
/// copy-on-write for a writer that touches one first). The rest runs WITHOUT the store lock: the page list is
/// built (<see cref="SequenceIndex.IndexFreeze.Classify"/>), each frozen chunk is encoded into its page (taken and released under the lock), the
/// pages and the head are appended to <c>idx/index.img</c> and fsynced, the blocks the image covers are fsynced,
/// and only then is the superblock written and fsynced (the commit). Unchanged pages are not written again: the
/// new head points at their previous copy. When the file holds more than twice its live pages (plus 64 MiB), or
/// when there is no usable file, the checkpoint writes a whole new file (<c>index.img.tmp</c>, fsync, rename,
/// fsync of idx/) instead, still outside the lock.
/// <para>
/// Crash safety: an append never overwrites anything a committed superblock references, and a superblock is
/// written only after what it references is durable, so a crash at any point leaves the previous checkpoint (or
/// none) readable; open then replays whatever was written after it. An fsync error fail-stops the store (as for
/// the blocks: a failed fsync is never retried). A write error or an Erase meanwhile (the epoch changed) abandons
/// the checkpoint; the next one writes a whole new file.
/// </para>
/// </summary>
internal sealed partial class FileStore
{
    /// <summary>Bumped (under the store lock) whenever the image on disk is deleted: a running checkpoint must not commit.</summary>
    private long _imageEpoch;

    /// <summary>The next checkpoint writes a whole new image file (no usable file, or the last checkpoint was abandoned).</summary>
    private bool _imageFull = true;

    /// <summary>Bytes handed to the OS since the last checkpoint's capture (under the store lock; read without it).</summary>
    private long _bytesSinceImage;

    /// <summary>What the callback of <see cref="IndexImage.WriteCheckpoint"/> returns for a page it wrote (of <paramref name="length"/> bytes).</summary>
    private static IndexImage.PageRef PageWritten(int length) => new(-1, 0, length);

    /// <summary>Tests: called right after a checkpoint's capture, without the store lock (a test stalls the checkpoint there).</summary>
    internal Action? AfterImageCapture { get; set; }

    /// <summary>From the flush/sync tick (after the snapshots): is an image checkpoint due?</summary>
    /// <remarks>
    /// Not while the whole store takes no more than <c>image_interval_bytes</c> on disk: what an open after a crash
    /// reads beyond the last checkpoint is bounded by the blocks on disk, so it stays within the interval's bound
    /// without one. Such a store (a stream at a limit, a KV bucket) otherwise paid a checkpoint every interval for
    /// nothing: the capture, the image write, an fsync of every live block and a snapshot of each afterwards cost
    /// the file store's steady-state append 0.60-0.68x of the rate without checkpoints (bench/StorageBench
    /// steady-only, A/B against image_interval_bytes of 1 TiB).
    /// </remarks>
    private bool ImageCheckpointDue(bool explicitFlush)
    {
        long since = Volatile.Read(ref _bytesSinceImage);
        if (explicitFlush) return since > 0 || _image is null || _imageFull;
        return since >= _opt.ImageIntervalBytes && Volatile.Read(ref _diskBytes) > _opt.ImageIntervalBytes;
    }

    /// <summary>Set before a close takes the store lock: no new checkpoint starts (a running one finishes first).</summary>
    private volatile bool _closing;

    /// <summary>
    /// Before a close takes the store lock: waits for a running checkpoint (it needs the lock to copy pages and to
    /// commit, so the close cannot wait for it while holding the lock), and keeps new ones from starting, so the
    /// close's own checkpoint below always runs.
    /// </summary>
    protected override void BeforeClose()
    {
        _closing = true;
        WaitForDeleter(); // FileStore.BlockDeletion.cs: it stops at its next step now
        var spin = new SpinWait();
        while (Volatile.Read(ref _checkpointing) != 0) spin.SpinOnce();
    }

    /// <summary>At a clean close (under the store lock, nothing is appended any more).</summary>
    private void WriteImageAtClose()
    {
        var spin = new SpinWait();
        // Only a tick that saw _closing and is about to leave can hold it now.
        while (Interlocked.CompareExchange(ref _checkpointing, 1, 0) != 0) spin.SpinOnce();
        try
        {
            if (_bytesSinceImage > 0 || _image is null || _imageFull || !_imageOnDisk) WriteImageCheckpoint(atClose: true);
        }
        finally
        {
            Volatile.Write(ref _checkpointing, 0);
        }
    }

    /// <summary>
    /// Writes one checkpoint of the index image (see the class comment). The caller holds <see cref="_checkpointing"/>;
    /// at close it also holds the store lock (which is re-entrant), otherwise it must not.
    /// </summary>
    private void WriteImageCheckpoint(bool atClose)
    {
        IndexImage.Capture cap;
        SequenceIndex.IndexFreeze freeze;
        bool full;
        long epoch, gen;
        IndexImage? current;
        List<PendingSync> toSync;
        lock (Sync)
        {
            if ((IsClosed && !atClose) || Failure is not null || _recovering || _tail is null || _tail.Cache is null || _blocks.Count == 0 || _blocks[^1] != _tail) return;
            // The image must describe exactly what the blocks hold: the floor record of front removals is written
            // and everything handed to the OS first, so the captured state is the state a replay of the blocks gives.
            if (_persistedFloor < First) WriteFloorRecord();
            if (FlushTailLocked() != StoreStatus.Ok) return;
            var blocks = new IndexImage.BlockSummary[_blocks.Count];
            for (int i = 0; i < _blocks.Count; i++)
            {
                var b = _blocks[i];
                blocks[i] = new IndexImage.BlockSummary(b.Id, b.StartSeq, b.Floor, b.LastMsgSeq, b.Size, b.Live, b.Tombstones);
            }
            current = _image;
            full = current is null || _imageFull || !_imageOnDisk
                || current.AppendAt - IndexImage.DataStart > 2 * current.LiveBytes + (64L << 20);
            try
            {
                // Its entry is made durable below, without the lock; once it is (this open), it exists: no syscall under the lock.
                if (!_indexDirDurable) _fs.CreateDirectory(IndexDir);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                LastError = $"cannot create {IndexDir}: {e.Message}";
                return;
            }
            freeze = Index.Freeze(full);
            cap = new IndexImage.Capture
            {
                State = new IndexImage.Counters(First, Last, LastTs, Msgs, Bytes, Index.Low / SequenceIndex.EntriesPerChunk, Index.End),
                Blocks = blocks,
                TailCrc = Crc32C.Compute(_tail.Cache.AsSpan(0, (int)_tail.Size)),
                Subjects = [.. Subjects.All.Select(s => new IndexImage.SubjectRecord(s.Id, s.Key, s.Count, s.First, s.Last))],
                Ttls = [.. PendingTtls()],
                Freeze = freeze,
            };
            epoch = _imageEpoch;
            gen = full ? 1 : current!.Generation + 1;
            _bytesSinceImage = 0;
            // The blocks the image covers are made durable before it is committed, so that after a power cut the
            // image still matches them (otherwise it would be refused and the open would rebuild).
            toSync = CollectUnsyncedLocked(includeConsumerDir: false);
        }

        bool committed = false;
        var tmp = ImagePath + ".tmp";
        IStoreFile? file = null;
        try
        {
            AfterImageCapture?.Invoke();
            MakeIndexDirectoryDurable();
            // Which unchanged chunks the previous checkpoint already holds is worked out here, without the lock.
            freeze.Classify(chunk => current is not null && current.TryGetPage(chunk, out _));
            if (freeze.Late.Count > 0)
            {
                lock (Sync)
                {
                    if (!Index.FreezeLate(freeze)) return;
                }
            }
            file = full ? _fs.OpenFile(tmp, create: true) : current!.File;
            long appendAt = full ? IndexImage.DataStart : current!.AppendAt;
            var written = IndexImage.WriteCheckpoint(file, appendAt, gen, cap, (k, page) => ProducePage(freeze, k, page, full, current, atClose));
            if (written is not { } w) return;
            if (full) IndexImage.WriteSuperblock(file, gen, w.HeadOffset, w.HeadBytes);
            if (!SyncImageFile(file)) return;
            if (SyncCollected(toSync) != StoreStatus.Ok) return;
            if (full)
            {
                IndexImage? old;
                var adopted = IndexImage.Adopt(file, PageFailed, w.Head, w.End); // its page table is built here, not under the lock
                lock (Sync)
                {
                    if (epoch != _imageEpoch || (IsClosed && !atClose) || Failure is not null) return;
                    _fs.Rename(tmp, ImagePath);
                    old = _image;
                    _image = adopted;
                    file = null; // owned by _image now
                    Index.SetPager(_image);
                    _imageOnDisk = true;
                    _imageFull = false;
                    committed = true;
                }
                // A reader paging in from the old file right now fails its read and retries under the lock.
                old?.Dispose();
                try
                {
                    _fs.SyncDirectory(IndexDir);
                }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException)
                {
                    Fail($"fsync of directory {IndexDir}", e);
                }
            }
            else
            {
                var table = IndexImage.PageTable.From(w.Head); // built here, not under the lock
                lock (Sync)
                {
                    if (epoch != _imageEpoch || (IsClosed && !atClose) || Failure is not null) return;
                }
                // Outside the lock: an Erase from here on deletes the file durably first, so this superblock can
                // only land in a file that is already unlinked (and the commit below is skipped).
                IndexImage.WriteSuperblock(file, gen, w.HeadOffset, w.HeadBytes);
                if (!SyncImageFile(file)) return;
                lock (Sync)
                {
                    if (epoch != _imageEpoch || Failure is not null) return;
                    current!.Commit(table, w.Head, w.End);
                    committed = true;
                }
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
        {
            // A failed write (not an fsync): nothing was committed, the previous checkpoint stands. Not fatal.
            if (!IsClosed) LastError = $"cannot write the index image: {e.Message}";
        }
        finally
        {
            lock (Sync)
            {
                Index.EndFreeze(freeze);
                if (!committed) _imageFull = true;
            }
            if (full && file is not null)
            {
                file.Dispose();
                try { if (_fs.FileExists(tmp)) _fs.DeleteFile(tmp); }
                catch (Exception e) when (e is IOException or UnauthorizedAccessException) { LastError = $"cannot delete {tmp}: {e.Message}"; }
            }
        }
    }

    /// <summary>
    /// The content of page <paramref name="k"/> of a checkpoint: a frozen chunk is copied under the lock (as it was
    /// at the capture); an unchanged chunk reuses the previous checkpoint's page; a chunk still on disk is reused, or
    /// copied from the old file when a whole new file is written. Null = cannot be produced (checkpoint abandoned).
    /// </summary>
    private IndexImage.PageRef? ProducePage(SequenceIndex.IndexFreeze freeze, int k, Span<byte> page, bool full, IndexImage? current, bool atClose)
    {
        var (chunk, _, source) = freeze.Chunks[k];
        switch (source)
        {
            case SequenceIndex.ChunkSource.Frozen:
                // The lock only to take the chunk and to release it: the page is encoded without it (writers that
                // touch the chunk meanwhile work on a copy, SequenceIndex.Thaw), so appends are not held up by it.
                object src;
                lock (Sync)
                {
                    if ((IsClosed && !atClose) || Failure is not null) return null;
                    src = Index.TakeFrozen(freeze, k);
                }
                int length = SequenceIndex.EncodeFrozen(freeze, k, src, page);
                lock (Sync) Index.ReleaseFrozen(freeze, k);
                return PageWritten(length);
            case SequenceIndex.ChunkSource.Clean:
                return current is not null && current.TryGetPage(chunk, out var r) ? r : null;
            default:
                if (current is null) return null;
                if (!full) return current.TryGetPage(chunk, out var d) ? d : null;
                return current.ReadPage(chunk, page, out int copied, out _) ? PageWritten(copied) : null;
        }
    }

    /// <summary>fsync of the image file; a failure is fatal (fail-stop), like any fsync the store depends on.</summary>
    private bool SyncImageFile(IStoreFile file)
    {
        try
        {
            file.Sync();
            return true;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            Fail($"fsync of {ImagePath}", e);
            return false;
        }
    }
}
