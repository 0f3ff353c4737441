using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Append-only block store. The newest block is written from an in-memory image: appends encode the record
/// (with its crc32c) into the image; bytes reach the file when <see cref="FileStoreOptions.CoalesceBytes"/> are
/// pending, when the flush timer fires (every FlushInterval), or at once with <see cref="SyncPolicy.Always"/>.
/// Indexes (sequence, subject) live in memory and are rebuilt from the blocks at open; a torn tail is
/// truncated, corrupt ranges are skipped and reported. Deletes are tombstone records; a block with no live
/// message left is deleted (its tombstones for still-existing blocks are carried, durably, to the newest block first).
/// <para>
/// Durability is fail-stop: any failed write, fsync, rename or directory fsync of data the store must keep
/// calls <see cref="IndexedStore.FailStop"/>; from then on every write is refused with the reason and nothing
/// more is acknowledged (see <see cref="IStreamStore.Failure"/>). Every file write goes through
/// <see cref="IStoreFileSystem"/>.
/// </para>
/// The class is split by concern: FileStore.cs (open, lifetime, consumers), FileStore.Recovery.cs,
/// FileStore.Write.cs (newest block, records), FileStore.WriteBehind.cs (async persist's bytes written off the
/// appender's thread), FileStore.Durability.cs (fsync bookkeeping, group commit, timers),
/// FileStore.Read.cs (reads, block cache), FileStore.Compaction.cs (removal, block deletion, purge),
/// FileStore.IndexSnapshots.cs (per-block index snapshots), FileStore.FastOpen.cs (open from the index image, lazy
/// index pages), FileStore.ImageCheckpoint.cs (writing index image checkpoints), FileStore.BlockDeletion.cs
/// (deleting emptied blocks outside the lock), FileStore.SpareBlock.cs (the next block prepared in the background).
/// Lock order: the store lock (<see cref="IndexedStore.Sync"/>), then a consumer's gate; the group-commit
/// gate is never held while taking the store lock. fsyncs of the timers, of the group-commit leader, of checkpoints
/// and of the deletion of emptied blocks run outside the store lock.
/// <para>
/// Disk I/O an append still does under the store lock (bench/results/session-2026-11-27-night-fslock.md): the
/// write(2) of the newest block's buffered bytes (every <see cref="FileStoreOptions.CoalesceBytes"/> and at a roll;
/// a copy into the page cache, the data path itself; under async persist the CoalesceBytes writes are a
/// write-behind, FileStore.WriteBehind.cs, unless four times that is pending with the previous one still in
/// flight), the rename of the prepared spare at a roll (or the inline create + fallocate when none is ready), and the first read of an index page still on disk after a fast open that
/// the append touches (once per page; 50 bytes per live entry for a compact page). The flush and sync ticks write the
/// buffered bytes under the lock too, and a checkpoint renames its snapshot or image file under it (the rename must be
/// atomic with the Erase checks).
/// </para>
/// </summary>
internal sealed partial class FileStore : IndexedStore
{
    private readonly string _dir;
    private readonly string _blockDir;
    private readonly string _consumerDir;
    private readonly FileStoreOptions _opt;
    private readonly IStoreFileSystem _fs;
    private readonly SyncPolicy _sync;
    private readonly DirectoryState _blockDirState;
    private readonly DirectoryState _consumerDirState;
    private readonly List<MsgBlock> _blocks = [];
    private readonly Dictionary<uint, MsgBlock> _byId = [];
    private MsgBlock _tail = null!;
    private ulong _persistedFloor;
    private long _diskBytes;
    private bool _recovering;
    private uint _maxBlockId;

    private FileStore(StreamStoreConfig config, string dir, FileStoreOptions opt, bool ignoreImage = false) : base(config)
    {
        _ignoreImage = ignoreImage;
        _dir = dir;
        _blockDir = Path.Combine(dir, Format.BlockDir);
        _consumerDir = Path.Combine(dir, Format.ConsumerDir);
        _opt = opt;
        _fs = opt.FileSystem;
        _sync = config.Sync;
        _blockDirState = new DirectoryState(_blockDir);
        _consumerDirState = new DirectoryState(_consumerDir);
        // Before recovery: recovery may already arm the flush.
        StartTimers();
    }

    public override string EngineName => FileStoreFactory.EngineName;

    /// <summary>
    /// nats-server's file store figure (filestore.go fileStoreMsgSizeRaw), the length of its own message record:
    /// record length (4) + sequence (8) + timestamp (8) + subject length (2) + subject + payload + hash (8), and with
    /// headers also a headers length (4) + headers. Our records are laid out differently (Format.cs: 40 bytes of
    /// framing), but the stream's bytes, max_bytes and the account's max_storage count this figure, as nats-server.
    /// </summary>
    public override long StoredSize(int subjectLength, int headersLength, int payloadLength) =>
        headersLength == 0
            ? 22L + subjectLength + payloadLength + 8
            : 22L + subjectLength + 4 + headersLength + payloadLength + 8;

    internal static bool IsDiskFull(Exception e)
        => (e.HResult & 0xFFFF) is 28 or 0x70 or 0x27 || e.Message.Contains("No space left", StringComparison.OrdinalIgnoreCase);

    private static StoreStatus StatusOf(Exception e) => IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;

    /// <summary>Fail-stop with the reason; returns the status to hand to the caller.</summary>
    private StoreStatus Fail(string what, Exception e)
    {
        FailStop($"file store '{Config.StreamName}': {what} failed ({e.Message}); the store is read-only until it is reopened");
        return StatusOf(e);
    }

    public static StoreOpenResult Open(StreamStoreConfig config, string dir, FileStoreOptions opt)
    {
        var fs = new FileStore(config, dir, opt);
        try
        {
            var (st, err) = fs.OpenDirectory();
            if (fs._restartWithoutImage)
            {
                // The index image passed its checks but the replay showed that it still lists messages of a block
                // deleted since (FileStore.FastOpen.cs): nothing of it is kept, the store is opened again from the blocks.
                fs.StopTimers();
                fs.CloseFiles();
                var report = fs.RecoveryReport;
                fs = new FileStore(config, dir, opt, ignoreImage: true);
                foreach (var line in report) fs.Report(line);
                (st, err) = fs.OpenDirectory();
            }
            if (st != StoreStatus.Ok)
            {
                fs.StopTimers();
                fs.CloseFiles();
                return StoreOpenResult.Fail(st, err!);
            }
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            fs.StopTimers();
            fs.CloseFiles();
            return StoreOpenResult.Fail(StatusOf(e), $"file store '{dir}': {e.Message}");
        }
        fs.StartExpiryTimer();
        return StoreOpenResult.Ok(fs);
    }

    private (StoreStatus, string?) OpenDirectory()
    {
        var (st, err) = CheckOrCreateMeta();
        if (st != StoreStatus.Ok) return (st, err);
        (st, err) = RecoverBlocks();
        if (st != StoreStatus.Ok) return (st, err);
        return LoadConsumers();
    }

    /// <summary>
    /// Validates store.meta, or creates a new store: stream dir (its parent fsynced), store.meta written durably,
    /// msgs/ and obs/ created and the stream dir fsynced, so a new stream reopens after a power cut.
    /// </summary>
    private (StoreStatus, string?) CheckOrCreateMeta()
    {
        var metaPath = Path.Combine(_dir, Format.MetaFile);
        if (_fs.FileExists(metaPath))
        {
            var lines = System.Text.Encoding.UTF8.GetString(_fs.ReadAllBytes(metaPath)).Split('\n');
            var (st, err) = Format.CheckMeta(lines, _dir);
            if (st != StoreStatus.Ok) return (st, err);
        }
        else if (_fs.DirectoryHasEntries(_dir) && !OnlyLeftoverMetaTemp(metaPath))
        {
            return (StoreStatus.NotOurStore, $"'{_dir}' is not empty and has no {Format.MetaFile}: not a natsbroker file store, refusing to use it");
        }
        else
        {
            // Every directory created here (the stream directory and any missing ancestor) becomes durable in
            // its parent: a directory entry survives a power cut only after its parent's fsync, and a lost
            // ancestor loses the whole store with everything acknowledged in it.
            var created = MissingDirectories(Path.GetFullPath(_dir));
            _fs.CreateDirectory(_dir);
            foreach (var d in created) _fs.SyncDirectory(Path.GetDirectoryName(d)!);
            _fs.CreateDirectory(_blockDir);
            _fs.CreateDirectory(_consumerDir);
            DurableFile.Replace(_fs, metaPath, System.Text.Encoding.UTF8.GetBytes($"{Format.MetaMagic}\nversion={Format.Version}\nstream={Config.StreamName}\n"), syncDirectory: true);
        }
        _fs.CreateDirectory(_blockDir);
        _fs.CreateDirectory(_consumerDir);
        return (StoreStatus.Ok, null);
    }

    /// <summary>The directories that <see cref="IStoreFileSystem.CreateDirectory"/> of <paramref name="dir"/> will create, innermost first.</summary>
    private List<string> MissingDirectories(string dir)
    {
        var missing = new List<string>();
        for (string? d = dir; d is not null && Path.GetDirectoryName(d) is not null && !_fs.DirectoryExists(d); d = Path.GetDirectoryName(d))
            missing.Add(d);
        return missing;
    }

    /// <summary>A creation cut short by a crash leaves only store.meta.tmp (and maybe empty msgs/ obs/): start again.</summary>
    private bool OnlyLeftoverMetaTemp(string metaPath)
    {
        var files = _fs.ListFiles(_dir);
        if (files.Any(f => f != Format.MetaFile + ".tmp")) return false;
        foreach (var sub in new[] { _blockDir, _consumerDir })
            if (_fs.DirectoryExists(sub) && _fs.DirectoryHasEntries(sub)) return false;
        if (files.Count > 0) _fs.DeleteFile(metaPath + ".tmp");
        return true;
    }

    private (StoreStatus, string?) LoadConsumers()
    {
        foreach (var file in _fs.ListFiles(_consumerDir))
        {
            var f = Path.Combine(_consumerDir, file);
            if (file.EndsWith(".cs.tmp", StringComparison.Ordinal))
            {
                // An interrupted replace: the previous file (if any) is intact.
                _fs.DeleteFile(f);
                _consumerDirState.Touch();
                continue;
            }
            if (!file.EndsWith(".cs", StringComparison.Ordinal)) continue;
            var name = file[..^3];
            var cs = new ConsumerState();
            var st = ConsumerStateCodec.Decode(_fs.ReadAllBytes(f), cs, out var err);
            if (st == StoreStatus.UnsupportedVersion) return (st, $"consumer '{name}': {err}");
            if (st != StoreStatus.Ok)
            {
                Report($"consumer '{name}': {err}; its state starts empty");
                cs = null;
            }
            var fc = new FileConsumerStore(name, f, this, cs);
            lock (Sync)
            {
                // The flush timer may already run (recovery arms it).
                _fileConsumers.Add(fc);
                RegisterConsumer(name, fc);
            }
        }
        return (StoreStatus.Ok, null);
    }

    // ================= consumers / lifetime =================

    private readonly List<FileConsumerStore> _fileConsumers = [];

    internal IStoreFileSystem FileSystem => _fs;
    internal bool SyncAlways => _sync == SyncPolicy.Always;

    /// <summary>
    /// A consumer file was created, replaced or deleted: the obs/ directory needs an fsync, and that fsync is
    /// scheduled here. A consumer acking a backlog writes nothing to the blocks, so nothing else would arm the
    /// sync tick: its renames would stay in the page cache until the next publish, and a power cut would take
    /// the consumer back to an older state, or lose a new consumer, however long ago it was acknowledged.
    /// Periodic and async persist: the sync tick (SyncInterval); sync always: the caller
    /// fsyncs the directory itself before it returns.
    /// </summary>
    internal void ConsumerDirectoryChanged()
    {
        _consumerDirState.Touch();
        if (_sync != SyncPolicy.Always) ArmSync();
    }

    /// <summary>Sync-always consumer writes make their directory entry durable before they return.</summary>
    internal StoreStatus SyncConsumerDirectory()
    {
        long gen = Interlocked.Read(ref _consumerDirState.Gen);
        try
        {
            _fs.SyncDirectory(_consumerDir);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return Fail($"fsync of directory {_consumerDir}", e);
        }
        _consumerDirState.MarkSynced(gen);
        return StoreStatus.Ok;
    }

    internal void ConsumerWriteFailed(string consumer, Exception e) => Fail($"writing the state of consumer '{consumer}'", e);

    protected override IConsumerStore CreateConsumerStore(string name)
    {
        var c = new FileConsumerStore(name, Path.Combine(_consumerDir, name + ".cs"), this, null);
        _fileConsumers.Add(c);
        ArmFlush();
        return c;
    }

    internal void ForgetFileConsumer(string name)
    {
        lock (Sync)
        {
            _fileConsumers.RemoveAll(c => c.Name == name);
            ForgetConsumer(name);
        }
    }

    protected override void CloseEngine()
    {
        StopTimers();
        if (Failure is null)
        {
            if (_persistedFloor < First) WriteFloorRecord();
            // A clean close is a checkpoint: every sealed block gets its index snapshot, so the next open reads
            // the snapshots and scans only the newest block.
            // The index image (FileStore.FastOpen.cs) lets the next open skip rebuilding the index altogether.
            if (FlushTailLocked() == StoreStatus.Ok && SyncAllLocked() == StoreStatus.Ok)
            {
                // Emptied blocks the background deleter did not get to (it stopped before the close took the lock).
                DeleteDoomedLocked();
                WriteSnapshotsLocked();
                WriteImageAtClose();
            }
        }
        CloseFiles();
    }

    private void CloseFiles()
    {
        CompleteWriteBehindLocked(); // no write may be in flight when the files close (a failure is already recorded)
        DiscardSpare();
        foreach (var b in _blocks)
        {
            b.Removed = true;
            b.File.Dispose();
        }
        _blocks.Clear();
        _byId.Clear();
        Array.Clear(_readBlocks);
        _cached.Clear();
        CloseImage();
    }

    protected override StoreStatus DeleteEngine()
    {
        StopTimers();
        CloseFiles();
        // A tick's checkpoint may be writing a snapshot temp file in idx/ right now (outside the store lock); it
        // cannot create another one (it installs nothing once the store is closed, and creates idx/ only under
        // the lock), so a second attempt removes what the first one raced with.
        for (int attempt = 0; ; attempt++)
        {
            try
            {
                _fs.DeleteDirectory(_dir);
                return StoreStatus.Ok;
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException)
            {
                if (attempt == 0 && e is IOException) continue;
                LastError = e.Message;
                return StoreStatus.IoError;
            }
        }
    }
}
