using NatsBroker.Contracts;

namespace NatsBroker.Storage.File;

/// <summary>
/// The spare block: the next block file, created and preallocated in the background, so that a block roll under
/// the store lock is a rename and a pointer swap instead of a create + fallocate, which took up to ~700 ms while
/// the disk was busy (bench/results/session-2026-11-27-append-stall.md) with every writer waiting on the lock.
/// Measured (bench/results/session-2026-11-27-fsstall-spare-block.md): a roll that takes the spare costs 0.06 ms on
/// average; the rename is still a directory change, and waited up to ~100 ms on a saturated journal in rare cases.
/// A roll that comes while the spare is still being created creates its block inline, as before.
/// <para>
/// On disk (FORMAT.md, "Spare block"): at most one file <c>msgs/spare.tmp</c>, empty (its space reserved by
/// fallocate, length 0) and never written. It gets a block's name only when it becomes the newest block: under the
/// store lock it is renamed to <c>msgs/NNNNNNNNNN.blk</c> before anything is written to it, and that rename is made
/// durable like a block creation (the block directory's fsync before anything in the block is acknowledged as
/// durable). So the set of <c>.blk</c> files, and everything recovery reads, is exactly what it was without a
/// spare. A <c>spare.tmp</c> found at open (a crash or kill while one was prepared) holds nothing and is deleted;
/// an engine without this code reports it as an unexpected file and ignores it.
/// </para>
/// <para>
/// Thread safety: the preparing work item never takes the store lock. It publishes the open file through
/// <see cref="_spareState"/> (Queued, then Creating, then Ready or Failed); the store (under its lock) takes a
/// Ready spare at a roll, and at close claims the state (Closed) and waits for a creation in progress, which then
/// deletes its own file. A spare that cannot be prepared (full disk, any I/O error) only means the next roll
/// creates its block inline, as before, and reports that creation's error if it fails too; nothing acknowledged
/// depends on a spare, so its errors are never fatal to the store.
/// </para>
/// </summary>
internal sealed partial class FileStore
{
    private const int SpareNone = 0, SpareQueued = 1, SpareCreating = 2, SpareReady = 3, SpareFailed = 4, SpareClosed = 5;

    private int _spareState;
    /// <summary>The prepared file (valid when the state is Ready; written before the state by the work item).</summary>
    private IStoreFile? _spareFile;
    /// <summary>Set when no preparation is running; close waits on it.</summary>
    private readonly ManualResetEventSlim _spareIdle = new(initialState: true);
    private SparePreparer? _sparePreparer;

    /// <summary>Why the last spare could not be prepared (diagnostics and tests; the roll then creates the block inline).</summary>
    internal string? SpareError { get; private set; }

    /// <summary>A spare is prepared now (tests: the next roll takes it).</summary>
    internal bool SpareReadyForTests => Volatile.Read(ref _spareState) == SpareReady;

    private string SparePath => Path.Combine(_blockDir, Format.SpareBlockName);

    /// <summary>
    /// A block filled up since the open (set at the roll in EnsureTailRoom): from then on the next block is
    /// prepared as soon as the newest block takes its first append, not at half of it. At a high append rate a
    /// block lasts milliseconds (4 MiB at 500 MB/s: 8 ms) while a create + fallocate can take 100 ms and more on a
    /// busy disk, so half a block of lead was too little (measured: most rolls found no spare ready). A store that
    /// never filled a block waits for half of one, so small streams do not hold a second preallocated block.
    /// </summary>
    private bool _fillsBlocks;

    /// <summary>
    /// Called under the store lock after an append: once the newest block is far enough along (see
    /// <see cref="_fillsBlocks"/>), the next block's file is prepared in the background. One int compare per
    /// append when there is nothing to do.
    /// </summary>
    private void MaybePrepareSpare(MsgBlock tail)
    {
        if (Volatile.Read(ref _spareState) != SpareNone || _recovering || (!_fillsBlocks && tail.Size < _opt.BlockSize / 2)) return;
        // The spare's space is not accounted until it becomes a block (NewTailBlock), where the disk limit is
        // checked as before; it is only prepared while the limit leaves room for it besides the next block, so
        // it never takes space a limit-checked write would need.
        if (_opt.DiskLimitBytes > 0 && _diskBytes + 2L * _opt.BlockSize > _opt.DiskLimitBytes) return;
        _spareState = SpareQueued;
        _spareIdle.Reset();
        _sparePreparer ??= new SparePreparer(this);
        ThreadPool.UnsafeQueueUserWorkItem(_sparePreparer, preferLocal: false);
    }

    /// <summary>The work item (outside the store lock): create and preallocate the spare file.</summary>
    private void PrepareSpare()
    {
        try
        {
            if (Interlocked.CompareExchange(ref _spareState, SpareCreating, SpareQueued) != SpareQueued) return; // closed meanwhile
            var path = SparePath;
            IStoreFile file;
            try
            {
                file = _fs.OpenFile(path, create: true, _opt.BlockSize);
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                SpareError = $"cannot prepare the next block ({path}): {e.Message}";
                DeleteSpareFile(path);
                // Failed unless closed meanwhile (then it stays closed).
                Interlocked.CompareExchange(ref _spareState, SpareFailed, SpareCreating);
                return;
            }
            Volatile.Write(ref _spareFile, file);
            if (Interlocked.CompareExchange(ref _spareState, SpareReady, SpareCreating) == SpareCreating) return;
            // Closed while the file was created: the store will not take it.
            _spareFile = null;
            file.Dispose();
            DeleteSpareFile(path);
        }
        finally
        {
            _spareIdle.Set();
        }
    }

    /// <summary>
    /// Under the store lock, at a roll: the prepared spare renamed to <paramref name="path"/> (the new block's
    /// name), or null when none is ready or the rename failed (the caller creates the block inline).
    /// </summary>
    private IStoreFile? TakeSpare(string path)
    {
        int st = Volatile.Read(ref _spareState);
        if (st == SpareFailed)
        {
            _spareState = SpareNone; // try again for the next block
            return null;
        }
        if (st != SpareReady) return null; // still being prepared: it will serve the next roll
        var file = _spareFile!;
        _spareFile = null;
        _spareState = SpareNone;
        var spare = SparePath;
        try
        {
            _fs.Rename(spare, path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            // Nothing is written to it yet: the spare is dropped and the block created inline instead.
            SpareError = $"cannot rename the prepared block {spare} to {path}: {e.Message}";
            file.Dispose();
            DeleteSpareFile(spare);
            return null;
        }
        return file;
    }

    /// <summary>At close or delete: no spare is prepared any more, and the one prepared (or in progress) is removed.</summary>
    private void DiscardSpare()
    {
        int st = Interlocked.Exchange(ref _spareState, SpareClosed);
        if (st == SpareCreating) _spareIdle.Wait(); // the work item sees Closed and deletes its own file
        if (st == SpareReady && _spareFile is { } file)
        {
            _spareFile = null;
            file.Dispose();
            DeleteSpareFile(SparePath);
        }
    }

    /// <summary>
    /// Removes a spare file that is not (or no longer) a block. A failure leaves an empty file that the next open
    /// deletes (RecoverBlocks), so it is only recorded.
    /// </summary>
    private void DeleteSpareFile(string path)
    {
        try
        {
            if (_fs.FileExists(path)) _fs.DeleteFile(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            SpareError = $"cannot delete {path}: {e.Message} (the next open deletes it)";
        }
    }

    /// <summary>Queues <see cref="PrepareSpare"/> without a closure or a per-roll allocation.</summary>
    private sealed class SparePreparer(FileStore store) : IThreadPoolWorkItem
    {
        public void Execute() => store.PrepareSpare();
    }
}
