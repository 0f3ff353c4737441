using System.Buffers.Binary;
using System.Globalization;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

[assembly: NatsBroker.Contracts.StreamStoreEngine(typeof(NatsBroker.Storage.File.FileStoreFactory))]

namespace NatsBroker.Storage.File;

/// <summary>
/// The "file" engine factory. Engine options: <c>block_size</c> (bytes, default 4 MiB), <c>cache_blocks</c>
/// (recent full blocks kept in memory besides the newest, default 1), <c>coalesce_bytes</c> (buffered bytes
/// that trigger an inline write, default 256 KiB), <c>disk_limit_bytes</c> (refuse writes past this many bytes
/// on disk, exactly as a full disk; 0 = none).
/// </summary>
public sealed class FileStoreFactory : IStreamStoreFactory
{
    public const string EngineName = "file";
    public string Name => EngineName;
    public bool IsPersistent => true;

    public StoreOpenResult Open(StreamStoreConfig config, string? directory)
    {
        ArgumentNullException.ThrowIfNull(config);
        if (string.IsNullOrEmpty(directory)) return StoreOpenResult.Fail(StoreStatus.InvalidArgument, "file engine needs a directory");
        var o = new FileStoreOptions();
        foreach (var (k, v) in config.EngineOptions)
        {
            bool ok = long.TryParse(v, NumberStyles.Integer, CultureInfo.InvariantCulture, out long n) && n >= 0;
            switch (k)
            {
                case "block_size": ok &= n is >= 4096 and <= int.MaxValue / 2; o.BlockSize = (int)n; break;
                case "cache_blocks": ok &= n <= 64; o.CacheBlocks = (int)n; break;
                case "coalesce_bytes": ok &= n <= 64 << 20; o.CoalesceBytes = (int)n; break;
                case "disk_limit_bytes": o.DiskLimitBytes = n; break;
                default: continue;
            }
            if (!ok) return StoreOpenResult.Fail(StoreStatus.InvalidArgument, $"file engine: bad {k} '{v}'");
        }
        return FileStore.Open(config, directory, o);
    }
}

internal sealed class FileStoreOptions
{
    public int BlockSize = 4 << 20;
    public int CacheBlocks = 1;
    public int CoalesceBytes = 256 << 10;
    public long DiskLimitBytes;
}

/// <summary>
/// Append-only block store. The newest block is written from an in-memory image: appends encode the record
/// (with its crc32c) into the image; bytes reach the file when <see cref="FileStoreOptions.CoalesceBytes"/> are
/// pending, when the flush timer fires (every FlushInterval), or at once with <see cref="SyncPolicy.Always"/>.
/// Indexes (sequence, subject) live in memory and are rebuilt from the blocks at open; a torn tail is
/// truncated, corrupt ranges are skipped and reported. Deletes are tombstone records; a block with no live
/// message left is deleted (its tombstones for still-existing blocks are carried to the newest block first).
/// </summary>
internal sealed class FileStore : IndexedStore
{
    private readonly string _dir;
    private readonly string _blockDir;
    private readonly string _consumerDir;
    private readonly FileStoreOptions _opt;
    private readonly List<MsgBlock> _blocks = [];
    private readonly Dictionary<uint, MsgBlock> _byId = [];
    private readonly List<MsgBlock> _cached = [];
    private readonly Stack<byte[]> _pool = new();
    private MsgBlock _tail = null!;
    private byte[] _scratch = new byte[4096];
    private ulong _persistedFloor;
    private long _diskBytes;
    private bool _recovering;
    private bool _writeFailed;
    private Timer? _flushTimer;
    private int _flushing;
    private Timer? _syncTimer;
    private TimeSpan _flushPeriod;
    private int _flushArmed;
    private int _syncArmed;
    private readonly SyncPolicy _sync;
    private uint _maxBlockId;

    private FileStore(StreamStoreConfig config, string dir, FileStoreOptions opt) : base(config)
    {
        _dir = dir;
        _blockDir = Path.Combine(dir, Format.BlockDir);
        _consumerDir = Path.Combine(dir, Format.ConsumerDir);
        _opt = opt;
        _sync = config.Sync;
    }

    public override string EngineName => FileStoreFactory.EngineName;

    internal static bool IsDiskFull(IOException e)
        => (e.HResult & 0xFFFF) is 28 or 0x70 or 0x27 || e.Message.Contains("No space left", StringComparison.OrdinalIgnoreCase);

    // ================= open / recovery =================

    public static StoreOpenResult Open(StreamStoreConfig config, string dir, FileStoreOptions opt)
    {
        var fs = new FileStore(config, dir, opt);
        try
        {
            var (st, err) = fs.OpenDirectory();
            if (st != StoreStatus.Ok)
            {
                fs.CloseFiles();
                return StoreOpenResult.Fail(st, err!);
            }
        }
        catch (IOException e)
        {
            fs.CloseFiles();
            return StoreOpenResult.Fail(IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError, $"file store '{dir}': {e.Message}");
        }
        catch (UnauthorizedAccessException e)
        {
            fs.CloseFiles();
            return StoreOpenResult.Fail(StoreStatus.IoError, $"file store '{dir}': {e.Message}");
        }
        fs.StartExpiryTimer();
        var period = config.FlushInterval > TimeSpan.Zero ? config.FlushInterval : TimeSpan.FromMilliseconds(10);
        fs._flushPeriod = period;
        // One-shot timers, armed only when there is something to do: an idle store costs nothing.
        fs._flushTimer = new Timer(static s => ((FileStore)s!).FlushTick(), fs, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        fs._syncTimer = new Timer(static s => ((FileStore)s!).SyncTick(), fs, Timeout.InfiniteTimeSpan, Timeout.InfiniteTimeSpan);
        return StoreOpenResult.Ok(fs);
    }

    private (StoreStatus, string?) OpenDirectory()
    {
        var metaPath = Path.Combine(_dir, Format.MetaFile);
        if (System.IO.File.Exists(metaPath))
        {
            var lines = System.IO.File.ReadAllLines(metaPath);
            if (lines.Length == 0 || lines[0] != Format.MetaMagic)
                return (StoreStatus.NotOurStore, $"'{_dir}' has a {Format.MetaFile} that is not a natsbroker file store");
            var ver = lines.FirstOrDefault(l => l.StartsWith("version=", StringComparison.Ordinal));
            if (ver is null || !int.TryParse(ver.AsSpan(8), NumberStyles.Integer, CultureInfo.InvariantCulture, out int v))
                return (StoreStatus.Corrupt, $"'{metaPath}' has no valid version line");
            if (v > Format.Version)
                return (StoreStatus.UnsupportedVersion, $"'{_dir}' is file store format version {v}; this engine reads versions up to {Format.Version}");
        }
        else if (Directory.Exists(_dir) && Directory.EnumerateFileSystemEntries(_dir).Any())
        {
            return (StoreStatus.NotOurStore, $"'{_dir}' is not empty and has no {Format.MetaFile}: not a natsbroker file store, refusing to use it");
        }
        else
        {
            Directory.CreateDirectory(_dir);
            var tmp = metaPath + ".tmp";
            System.IO.File.WriteAllText(tmp, $"{Format.MetaMagic}\nversion={Format.Version}\nstream={Config.StreamName}\n");
            System.IO.File.Move(tmp, metaPath, overwrite: true);
            DirectorySync.Sync(_dir);
        }
        Directory.CreateDirectory(_blockDir);
        Directory.CreateDirectory(_consumerDir);

        var ids = new List<uint>();
        foreach (var f in Directory.EnumerateFiles(_blockDir))
        {
            var name = Path.GetFileName(f);
            if (name.EndsWith(".blk", StringComparison.Ordinal) && uint.TryParse(name.AsSpan(0, name.Length - 4), NumberStyles.None, CultureInfo.InvariantCulture, out uint id))
                ids.Add(id);
            else
                Report($"ignored unexpected file '{name}' in {Format.BlockDir}/");
        }
        ids.Sort();
        if (ids.Count > 0) _maxBlockId = ids[^1];

        _recovering = true;
        ulong last = 0, floor = 0;
        lock (Sync)
        {
            for (int i = 0; i < ids.Count; i++)
            {
                var (st, err) = RecoverBlock(ids[i], i == ids.Count - 1, ref last, ref floor);
                if (st != StoreStatus.Ok) return (st, err);
            }
            RecoverLast(last, floor);
            _persistedFloor = First;
            if (_blocks.Count == 0 || _tail is null || _tail.Cache is null)
            {
                NewTailBlock(Last + 1);
            }
            _recovering = false;
            // Blocks emptied by tombstones/floors (not the newest) are compacted away now.
            foreach (var b in _blocks.ToArray())
            {
                if (b.Live == 0 && b != _tail) RemoveBlock(b);
            }
            EnforceAllLimitsLocked();
            FlushTailLocked();
        }

        foreach (var f in Directory.EnumerateFiles(_consumerDir, "*.cs"))
        {
            var name = Path.GetFileNameWithoutExtension(f);
            var cs = new ConsumerState();
            var st = ConsumerStateCodec.Decode(System.IO.File.ReadAllBytes(f), cs, out var err);
            if (st == StoreStatus.UnsupportedVersion) return (st, $"consumer '{name}': {err}");
            if (st != StoreStatus.Ok)
            {
                Report($"consumer '{name}': {err}; its state starts empty");
                cs = null;
            }
            var fc = new FileConsumerStore(name, f, _sync == SyncPolicy.Always, ForgetFileConsumer, ArmFlush, cs);
            _fileConsumers.Add(fc);
            RegisterConsumer(name, fc);
        }
        return (StoreStatus.Ok, null);
    }

    private (StoreStatus, string?) RecoverBlock(uint id, bool isLast, ref ulong last, ref ulong floor)
    {
        var path = Path.Combine(_blockDir, Format.BlockName(id));
        var file = new FileStream(path, FileMode.Open, FileAccess.ReadWrite, FileShare.Read, 0);
        long len = file.Length;
        if (len > int.MaxValue - 64)
        {
            file.Dispose();
            return (StoreStatus.Corrupt, $"block {Format.BlockName(id)} is too large ({len} bytes)");
        }
        var data = RentBuffer((int)Math.Max(len, _opt.BlockSize));
        RandomAccess.Read(file.SafeFileHandle, data.AsSpan(0, (int)len), 0);
        var span = data.AsSpan(0, (int)len);
        string bn = Format.BlockName(id);
        if (len < Format.BlockHeaderSize || !span[..4].SequenceEqual(Format.BlockMagic))
        {
            if (isLast && len < Format.BlockHeaderSize)
            {
                // A crash right after creating the newest block: nothing in it was ever acknowledged.
                Report($"block {bn}: incomplete header ({len} bytes), removed");
                file.Dispose();
                System.IO.File.Delete(path);
                ReturnBuffer(data);
                return (StoreStatus.Ok, null);
            }
            Report($"block {bn}: bad header magic, block skipped (left on disk)");
            file.Dispose();
            ReturnBuffer(data);
            return (StoreStatus.Ok, null);
        }
        ushort ver = BinaryPrimitives.ReadUInt16LittleEndian(span[4..]);
        if (ver > Format.Version)
        {
            file.Dispose();
            ReturnBuffer(data);
            return (StoreStatus.UnsupportedVersion, $"block {bn} has format version {ver}; this engine reads versions up to {Format.Version}");
        }
        if (Crc32C.Compute(span[..36]) != BinaryPrimitives.ReadUInt32LittleEndian(span[36..]))
        {
            Report($"block {bn}: header checksum mismatch, block skipped (left on disk)");
            file.Dispose();
            ReturnBuffer(data);
            return (StoreStatus.Ok, null);
        }
        var blk = new MsgBlock
        {
            Id = id,
            Path = path,
            File = file,
            StartSeq = BinaryPrimitives.ReadUInt64LittleEndian(span[16..]),
            Floor = BinaryPrimitives.ReadUInt64LittleEndian(span[24..]),
            Size = len,
            Flushed = len,
            Cache = data,
        };
        AddBlock(blk);
        if (blk.StartSeq > 0 && blk.StartSeq - 1 > last) last = blk.StartSeq - 1;
        if (blk.Floor > floor) floor = blk.Floor;

        int off = Format.BlockHeaderSize;
        ulong maxMsgSeq = Last;
        while (off < len)
        {
            if (Format.TryRecord(span[off..], out var rec))
            {
                ApplyRecord(blk, off, rec, span.Slice(off, rec.Length), ref last, ref floor, ref maxMsgSeq);
                off += rec.Length;
                continue;
            }
            int next = Resync(span, off + 1, maxMsgSeq);
            if (next < 0)
            {
                if (isLast)
                {
                    Report($"block {bn}: torn tail at offset {off} ({len - off} bytes) truncated");
                    file.SetLength(off);
                    blk.Size = blk.Flushed = off;
                }
                else
                {
                    Report($"block {bn}: corrupt or truncated data from offset {off} to the end ({len - off} bytes); messages after sequence {maxMsgSeq} in this block are lost");
                }
                break;
            }
            var nr = new Format.Rec(span[next..]);
            Report($"block {bn}: corrupt data at offset {off}..{next} ({next - off} bytes, checksum mismatch); sequences {maxMsgSeq + 1}..{nr.Seq - 1} may be lost");
            off = next;
        }
        _diskBytes += blk.Size;
        blk.Reserved = isLast ? Math.Max(_opt.BlockSize, blk.Size) : blk.Size;
        _diskBytes += blk.Reserved - blk.Size;
        if (isLast)
        {
            _tail = blk;
        }
        else
        {
            blk.Cache = null;
            ReturnBuffer(data);
        }
        return (StoreStatus.Ok, null);
    }

    private void ApplyRecord(MsgBlock blk, int off, Format.Rec rec, ReadOnlySpan<byte> raw, ref ulong last, ref ulong floor, ref ulong maxMsgSeq)
    {
        switch (rec.Type)
        {
            case Format.TypeMessage:
                if (rec.Seq <= maxMsgSeq || rec.Seq == 0)
                {
                    Report($"block {Format.BlockName(blk.Id)}: message sequence {rec.Seq} at offset {off} is not above {maxMsgSeq}; ignored");
                    return;
                }
                maxMsgSeq = rec.Seq;
                var subject = raw.Slice(Format.RecordHeaderSize, rec.SubjectLength);
                ref var e = ref RecoverAdd(rec.Seq, subject, rec.Timestamp, rec.Length - Format.RecordOverhead);
                e.Location = ((long)blk.Id << 32) | (uint)off;
                e.Aux = rec.Length;
                if (rec.Ttl > 0)
                {
                    e.Flags |= IndexEntry.FlagTtl;
                    TrackTtl(rec.Seq, rec.Timestamp + rec.Ttl);
                }
                blk.Live++;
                break;
            case Format.TypeErased:
                if (rec.Seq > maxMsgSeq) maxMsgSeq = rec.Seq;
                if (rec.Seq > last) last = rec.Seq;
                break;
            case Format.TypeTombstone:
                blk.Tombstones++;
                RemoveLocked(rec.Seq, RemoveKind.Lazy);
                break;
            case Format.TypeFloor:
                if (rec.Seq > floor) floor = rec.Seq;
                if (rec.Seq > 0 && rec.Seq - 1 > last) last = rec.Seq - 1;
                break;
            case Format.TypeSkip:
                if (rec.Seq > last) last = rec.Seq;
                break;
        }
    }

    /// <summary>Finds the next offset holding a valid record with a plausible sequence, or -1.</summary>
    private static int Resync(ReadOnlySpan<byte> span, int from, ulong afterSeq)
    {
        for (int p = from; p + Format.RecordOverhead <= span.Length; p++)
        {
            uint len = BinaryPrimitives.ReadUInt32LittleEndian(span[p..]);
            if (len < Format.RecordOverhead || len > span.Length - p) continue;
            byte t = span[p + 4];
            if (t is < Format.TypeMessage or > Format.TypeErased) continue;
            if (t == Format.TypeMessage && BinaryPrimitives.ReadUInt64LittleEndian(span[(p + 8)..]) <= afterSeq) continue;
            if (Format.TryRecord(span[p..], out _)) return p;
        }
        return -1;
    }

    private void AddBlock(MsgBlock b)
    {
        _blocks.Add(b);
        _byId[b.Id] = b;
    }

    private byte[] RentBuffer(int size)
    {
        if (size <= _opt.BlockSize && _pool.Count > 0) return _pool.Pop();
        return GC.AllocateUninitializedArray<byte>(Math.Max(size, _opt.BlockSize));
    }

    private void ReturnBuffer(byte[] b)
    {
        if (b.Length == _opt.BlockSize && _pool.Count < 4) _pool.Push(b);
    }

    // ================= writing =================

    private void NewTailBlock(ulong startSeq)
    {
        // Each block reserves its full size up front (fallocate through PreallocationSize), so a full disk shows
        // up here, when a block is created, and never as a failed write of bytes already acknowledged.
        if (_opt.DiskLimitBytes > 0 && _diskBytes + _opt.BlockSize > _opt.DiskLimitBytes)
            throw new IOException($"No space left on device (disk_limit_bytes {_opt.DiskLimitBytes} reached)", 28);
        uint id = _maxBlockId + 1;
        var path = Path.Combine(_blockDir, Format.BlockName(id));
        var file = new FileStream(path, new FileStreamOptions
        {
            Mode = FileMode.Create,
            Access = FileAccess.ReadWrite,
            Share = FileShare.Read,
            BufferSize = 0,
            PreallocationSize = _opt.BlockSize,
        });
        _maxBlockId = id;
        var cache = RentBuffer(_opt.BlockSize);
        Format.WriteBlockHeader(cache, id, startSeq, Msgs > 0 ? First : startSeq);
        var b = new MsgBlock { Id = id, Path = path, File = file, StartSeq = startSeq, Floor = Msgs > 0 ? First : startSeq, Size = Format.BlockHeaderSize, Cache = cache, Reserved = _opt.BlockSize };
        AddBlock(b);
        _diskBytes += b.Reserved;
        if (_sync != SyncPolicy.Periodic) DirectorySync.Sync(_blockDir);
        if (_tail is not null && _tail != b) KeepCached(_tail);
        _tail = b;
    }

    private void KeepCached(MsgBlock b)
    {
        if (b.Cache is null) return;
        if (_opt.CacheBlocks <= 0)
        {
            ReturnBuffer(b.Cache);
            b.Cache = null;
            return;
        }
        _cached.Add(b);
        while (_cached.Count > _opt.CacheBlocks)
        {
            var old = _cached[0];
            _cached.RemoveAt(0);
            if (old.Cache is not null && old != _tail)
            {
                ReturnBuffer(old.Cache);
                old.Cache = null;
            }
        }
    }

    /// <summary>Ensures the tail can take <paramref name="len"/> more bytes, rolling to a new block if needed.</summary>
    private StoreStatus EnsureTailRoom(int len, ulong nextSeq)
    {
        var t = _tail;
        if (t.Size + len <= t.Cache!.Length) return StoreStatus.Ok;
        if (t.Size > Format.BlockHeaderSize)
        {
            var st = FlushTailLocked();
            if (st != StoreStatus.Ok) return st;
            if (_sync != SyncPolicy.Periodic) SyncBlock(t);
            try
            {
                NewTailBlock(nextSeq);
            }
            catch (IOException e)
            {
                LastError = $"cannot create a new block: {e.Message}";
                return IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;
            }
            catch (UnauthorizedAccessException e)
            {
                LastError = $"cannot create a new block: {e.Message}";
                return StoreStatus.IoError;
            }
            t = _tail;
            _emptyBlocks = true;
            CompactEmptyBlocks();
            t = _tail; // carried tombstones may have rolled the newest block again
        }
        if (t.Size + len > t.Cache!.Length)
        {
            var bigger = new byte[t.Size + len];
            t.Cache.AsSpan(0, (int)t.Size).CopyTo(bigger);
            ReturnBuffer(t.Cache);
            t.Cache = bigger;
        }
        return StoreStatus.Ok;
    }

    protected override StoreStatus WriteMessage(ulong seq, long ts, long ttl, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, ref IndexEntry entry)
    {
        int len = Format.RecordLength(subject.Length, headers.Length, payload.Length);
        if (len > Format.MaxRecord) return StoreStatus.MessageTooLarge;
        if (_writeFailed)
        {
            // Earlier acknowledged bytes are still buffered: they must reach the disk before anything new is accepted.
            var fst = FlushTailLocked();
            if (fst != StoreStatus.Ok) return fst;
        }
        var st = EnsureTailRoom(len, seq);
        if (st != StoreStatus.Ok) return st;
        var t = _tail;
        int off = (int)t.Size;
        Format.WriteRecord(t.Cache.AsSpan(off, len), Format.TypeMessage, seq, ts, ttl, subject, headers, payload);
        t.Size += len;
        // Sync-always appends are written and fsynced by the group-commit leader (WaitDurable), outside the lock.
        if (_sync != SyncPolicy.Always && t.Size - t.Flushed >= _opt.CoalesceBytes)
        {
            st = FlushTailLocked();
            if (st != StoreStatus.Ok)
            {
                // Not acknowledged: forget the record (the file is cut back to the last good length).
                t.Size = off;
                if (t.Flushed > off) TruncateTail(off);
                return st;
            }
        }
        t.Live++;
        entry.Location = ((long)t.Id << 32) | (uint)off;
        entry.Aux = len;
        if (_sync == SyncPolicy.Always) _ticket = ++_written;
        else if (t.Flushed < t.Size) ArmFlush();
        return StoreStatus.Ok;
    }

    private void TruncateTail(long len)
    {
        try
        {
            _tail.File.SetLength(len);
            _tail.Flushed = len;
        }
        catch (IOException)
        {
        }
    }

    private void AppendControl(byte type, ulong seq)
    {
        int len = Format.RecordOverhead;
        if (EnsureTailRoom(len, Last + 1) != StoreStatus.Ok) return;
        var t = _tail;
        Format.WriteRecord(t.Cache.AsSpan((int)t.Size, len), type, seq, 0, 0, default, default, default);
        t.Size += len;
        if (type == Format.TypeTombstone) t.Tombstones++;
        ArmFlush();
    }

    private void WriteFloorRecord()
    {
        ulong f = Msgs > 0 ? First : Last + 1;
        AppendControl(Format.TypeFloor, f);
        _persistedFloor = f;
    }

    /// <summary>Hands the tail's pending bytes to the OS.</summary>
    private StoreStatus FlushTailLocked()
    {
        var t = _tail;
        if (t is null || t.Cache is null || t.Flushed >= t.Size) return _writeFailed ? StoreStatus.Ok : StoreStatus.Ok;
        long n = t.Size - t.Flushed;
        try
        {
            long grow = Math.Max(0, t.Size - Math.Max(t.Reserved, t.Flushed));
            if (grow > 0 && _opt.DiskLimitBytes > 0 && _diskBytes + grow > _opt.DiskLimitBytes)
                throw new IOException($"No space left on device (disk_limit_bytes {_opt.DiskLimitBytes} reached)", 28);
            RandomAccess.Write(t.Handle, t.Cache.AsSpan((int)t.Flushed, (int)n), t.Flushed);
            _diskBytes += grow;
            t.Flushed = t.Size;
            t.NeedsSync = true;
            ArmSync();
            if (_writeFailed)
            {
                _writeFailed = false;
                LastError = null;
            }
            return StoreStatus.Ok;
        }
        catch (IOException e)
        {
            _writeFailed = true;
            LastError = $"write to {t.Path} failed: {e.Message}";
            return IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;
        }
    }

    private StoreStatus SyncBlock(MsgBlock b, bool force = false)
    {
        if (!force && !Volatile.Read(ref b.NeedsSync)) return StoreStatus.Ok;
        // Cleared before the fsync: a write that lands after this sets it again; one before is covered.
        Volatile.Write(ref b.NeedsSync, false);
        try
        {
            b.File.Flush(flushToDisk: true);
            Interlocked.Increment(ref _fsyncs);
            return StoreStatus.Ok;
        }
        catch (IOException e)
        {
            Volatile.Write(ref b.NeedsSync, true);
            LastError = $"fsync of {b.Path} failed: {e.Message}";
            return IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;
        }
        catch (ObjectDisposedException)
        {
            // A block deleted meanwhile held no live message; a forced sync (an acknowledgement) must not pass.
            return force ? StoreStatus.Closed : StoreStatus.Ok;
        }
    }

    // ---- group commit (sync always) ----
    private long _written;   // tickets handed out (under Sync)
    private long _ticket;    // ticket of the write just made (under Sync)
    private long _durable;   // highest ticket known durable (under _commitGate)
    private long _fsyncs;
    private bool _leaderActive;    // under _commitGate
    private readonly object _commitGate = new();

    /// <summary>Number of fsyncs issued (tests check that concurrent sync-always appends share them).</summary>
    internal long FsyncCount => Interlocked.Read(ref _fsyncs);

    protected override long TakeDurabilityTicket()
    {
        long t = _ticket;
        _ticket = 0;
        return t;
    }

    /// <summary>
    /// Sync-always durability with group commit: the first waiter becomes the leader (followers wait on a
    /// monitor, not on a lock held across the fsync, which measured no batching), takes the newest ticket,
    /// writes every pending byte of the newest block in one write and fsyncs it once for all of them; waiters
    /// whose ticket is covered return without a write or fsync of their own. Older blocks were written and
    /// fsynced when the newest block rolled past them.
    /// </summary>
    protected override StoreStatus WaitDurable(long ticket)
    {
        lock (_commitGate)
        {
            while (true)
            {
                if (_durable >= ticket) return StoreStatus.Ok;
                if (!_leaderActive)
                {
                    _leaderActive = true;
                    break;
                }
                Monitor.Wait(_commitGate);
            }
        }
        long target = 0;
        var st = StoreStatus.Ok;
        try
        {
            MsgBlock tail;
            lock (Sync)
            {
                if (IsClosed) return StoreStatus.Ok; // closing wrote and fsynced everything
                target = _written;
                tail = _tail;
                // One write for every record appended since the last leader; appenders meanwhile only touch memory.
                st = FlushTailLocked();
            }
            if (st == StoreStatus.Ok) st = SyncBlock(tail, force: true);
            return st;
        }
        finally
        {
            lock (_commitGate)
            {
                if (st == StoreStatus.Ok && target > _durable) _durable = target;
                _leaderActive = false;
                Monitor.PulseAll(_commitGate);
            }
        }
    }

    /// <summary>Schedules the background flush (once per flush interval at most). Thread-safe, lock-free.</summary>
    internal void ArmFlush()
    {
        if (Volatile.Read(ref _flushArmed) == 0 && Interlocked.Exchange(ref _flushArmed, 1) == 0)
            _flushTimer?.Change(_flushPeriod, Timeout.InfiniteTimeSpan);
    }

    private void ArmSync()
    {
        if (_sync == SyncPolicy.Periodic && Volatile.Read(ref _syncArmed) == 0 && Interlocked.Exchange(ref _syncArmed, 1) == 0)
            _syncTimer?.Change(Config.SyncInterval, Timeout.InfiniteTimeSpan);
    }

    private void FlushTick()
    {
        Volatile.Write(ref _flushArmed, 0); // writes from here on arm the next tick
        if (Interlocked.Exchange(ref _flushing, 1) == 1)
        {
            ArmFlush();
            return;
        }
        try
        {
            List<MsgBlock>? toSync = null;
            List<FileConsumerStore>? consumers = null;
            lock (Sync)
            {
                if (IsClosed) return;
                if (_persistedFloor < First) WriteFloorRecord();
                if (FlushTailLocked() != StoreStatus.Ok) ArmFlush(); // retry (a full disk may clear)
                if (_sync == SyncPolicy.AsyncPersist)
                {
                    foreach (var b in _blocks) if (b.NeedsSync) (toSync ??= []).Add(b);
                }
                foreach (var c in _fileConsumers) (consumers ??= []).Add(c);
            }
            // fsync outside the lock: appends go on meanwhile.
            if (toSync is not null) foreach (var b in toSync) SyncBlock(b);
            if (consumers is not null) foreach (var c in consumers) c.FlushIfDirty();
        }
        finally
        {
            Volatile.Write(ref _flushing, 0);
        }
    }

    /// <summary>Periodic fsync: SyncInterval after the first unsynced write.</summary>
    private void SyncTick()
    {
        Volatile.Write(ref _syncArmed, 0);
        List<MsgBlock>? toSync = null;
        lock (Sync)
        {
            if (IsClosed) return;
            FlushTailLocked();
            foreach (var b in _blocks) if (b.NeedsSync) (toSync ??= []).Add(b);
        }
        if (toSync is not null) foreach (var b in toSync) SyncBlock(b);
    }

    public override ValueTask<StoreStatus> FlushAsync(CancellationToken cancellationToken = default)
    {
        List<FileConsumerStore> consumers = [];
        StoreStatus st;
        lock (Sync)
        {
            if (IsClosed) return ValueTask.FromResult(StoreStatus.Closed);
            if (_persistedFloor < First) WriteFloorRecord();
            st = FlushTailLocked();
            foreach (var b in _blocks)
            {
                var s2 = SyncBlock(b);
                if (st == StoreStatus.Ok) st = s2;
            }
            consumers.AddRange(_fileConsumers);
        }
        foreach (var c in consumers)
        {
            var s3 = c.FlushIfDirty();
            if (st == StoreStatus.Ok) st = s3;
        }
        return ValueTask.FromResult(st);
    }

    // ================= reading =================

    protected override StoreStatus ReadMessage(ulong seq, in IndexEntry entry, SubjectInfo subject, StoredMessage into)
    {
        if (!_byId.TryGetValue((uint)(entry.Location >> 32), out var b)) return StoreStatus.Corrupt;
        int off = (int)(entry.Location & 0xFFFFFFFF);
        int len = entry.Aux;
        ReadOnlySpan<byte> rec;
        if (b.Cache is null)
        {
            // Sequential cold reads (each starting where the previous one ended) load the whole block once.
            _seqRun = b.Id == _coldBlock && off == _coldNext ? _seqRun + 1 : 0;
            _coldBlock = b.Id;
            _coldNext = off + len;
            if (_seqRun >= 2 && _opt.CacheBlocks > 0 && b.Size <= _opt.BlockSize) LoadBlockCache(b);
        }
        if (b.Cache is not null && off + len <= b.Size)
        {
            rec = b.Cache.AsSpan(off, len);
            // Blocks loaded from disk are checked record by record; the newest block was written by this process.
            if (b != _tail && (!Format.TryRecord(rec, out var c) || c.Seq != seq || c.Type != Format.TypeMessage))
            {
                LastError = $"block {Format.BlockName(b.Id)}: sequence {seq} at offset {off} failed its checksum";
                return StoreStatus.Corrupt;
            }
        }
        else
        {
            if (_scratch.Length < len) _scratch = new byte[Math.Max(len, _scratch.Length * 2)];
            try
            {
                int n = RandomAccess.Read(b.Handle, _scratch.AsSpan(0, len), off);
                if (n < len)
                {
                    LastError = $"block {Format.BlockName(b.Id)}: sequence {seq} at offset {off} is truncated on disk";
                    return StoreStatus.Corrupt;
                }
            }
            catch (IOException e)
            {
                LastError = $"reading block {Format.BlockName(b.Id)}: {e.Message}";
                return StoreStatus.IoError;
            }
            rec = _scratch.AsSpan(0, len);
            if (!Format.TryRecord(rec, out var chk) || chk.Seq != seq || chk.Type != Format.TypeMessage)
            {
                LastError = $"block {Format.BlockName(b.Id)}: sequence {seq} at offset {off} failed its checksum";
                return StoreStatus.Corrupt;
            }
        }
        var r = new Format.Rec(rec);
        var dst = into.Prepare(seq, r.Timestamp, r.Ttl, r.SubjectLength, r.HeadersLength, r.PayloadLength);
        rec.Slice(Format.RecordHeaderSize, len - Format.RecordOverhead).CopyTo(dst);
        return StoreStatus.Ok;
    }

    private uint _coldBlock;
    private long _coldNext;
    private int _seqRun;

    /// <summary>
    /// Loads a whole block into a pooled cache buffer, for sequential readers (consumers catching up);
    /// random reads stay single preads.
    /// </summary>
    private void LoadBlockCache(MsgBlock b)
    {
        var buf = RentBuffer((int)b.Size);
        try
        {
            int n = RandomAccess.Read(b.Handle, buf.AsSpan(0, (int)b.Size), 0);
            if (n < b.Size)
            {
                ReturnBuffer(buf);
                return;
            }
        }
        catch (IOException)
        {
            ReturnBuffer(buf);
            return;
        }
        b.Cache = buf;
        KeepCached(b);
    }

    // ================= removal / compaction =================

    protected override void OnRemoved(ulong seq, ref IndexEntry entry, RemoveKind kind)
    {
        if (!_byId.TryGetValue((uint)(entry.Location >> 32), out var b)) return;
        b.Live--;
        if (_recovering) return;
        if (kind == RemoveKind.Lazy) ArmFlush(); // the new floor is written by the next flush
        if (kind == RemoveKind.Erase) EraseInPlace(b, (int)(entry.Location & 0xFFFFFFFF), entry.Aux, seq);
        if (kind != RemoveKind.Lazy) AppendControl(Format.TypeTombstone, seq);
        if (b.Live == 0)
        {
            if (b != _tail) RemoveBlock(b);
            else _emptyBlocks = true;
        }
    }

    private void EraseInPlace(MsgBlock b, int off, int len, ulong seq)
    {
        var buf = new byte[len];
        Format.WriteRecord(buf, Format.TypeErased, seq, 0, 0, default, default, new byte[len - Format.RecordOverhead]);
        if (b.Cache is not null && off + len <= b.Size) buf.CopyTo(b.Cache.AsSpan(off));
        if (off < b.Flushed)
        {
            try
            {
                RandomAccess.Write(b.Handle, buf, off);
                b.NeedsSync = true;
                ArmSync();
            }
            catch (IOException e)
            {
                LastError = $"erase of sequence {seq} failed: {e.Message}";
            }
        }
    }

    private bool _compacting;
    /// <summary>Some block may have no live message (set when a block's live count hits 0 or a block rolls).</summary>
    private bool _emptyBlocks;

    /// <summary>
    /// Deletes every older block without a live message, e.g. blocks that only ever held tombstones, once
    /// the tombstones that still matter are carried forward. Runs at block roll and after explicit operations.
    /// </summary>
    private void CompactEmptyBlocks()
    {
        if (_compacting || _recovering || !_emptyBlocks) return;
        _compacting = true;
        _emptyBlocks = false;
        try
        {
            for (int i = 0; i < _blocks.Count; i++)
            {
                var b = _blocks[i];
                if (b.Live == 0 && b != _tail)
                {
                    RemoveBlock(b);
                    if (!_byId.ContainsKey(b.Id)) i--;
                }
            }
        }
        finally
        {
            _compacting = false;
        }
    }

    /// <summary>Deletes a block with no live message. Its tombstones that still matter move to the newest block first.</summary>
    private void RemoveBlock(MsgBlock b)
    {
        if (b == _tail) return;
        if (b.Tombstones > 0)
        {
            var data = b.Cache;
            int size = (int)b.Size;
            if (data is null)
            {
                data = new byte[size];
                try { RandomAccess.Read(b.Handle, data, 0); }
                catch (IOException) { return; }
            }
            int off = Format.BlockHeaderSize;
            bool moved = false;
            while (off < size && Format.TryRecord(data.AsSpan(off, size - off), out var rec))
            {
                if (rec.Type == Format.TypeTombstone && rec.Seq >= First && rec.Seq <= Last && Index.Holds(rec.Seq))
                {
                    ref var e = ref Index.Get(rec.Seq);
                    if (e.Location >= 0 && _byId.TryGetValue((uint)(e.Location >> 32), out var target) && target != b)
                    {
                        AppendControl(Format.TypeTombstone, rec.Seq);
                        moved = true;
                    }
                }
                off += rec.Length;
            }
            if (moved)
            {
                if (FlushTailLocked() != StoreStatus.Ok) return; // keep the block: its tombstones are not safe elsewhere yet
                if (_sync != SyncPolicy.Periodic) SyncBlock(_tail);
            }
        }
        _blocks.Remove(b);
        _byId.Remove(b.Id);
        _cached.Remove(b);
        if (b.Cache is not null) ReturnBuffer(b.Cache);
        b.Cache = null;
        _diskBytes -= Math.Max(b.Reserved, b.Flushed);
        b.File.Dispose();
        try { System.IO.File.Delete(b.Path); }
        catch (IOException e) { LastError = $"cannot delete {b.Path}: {e.Message}"; }
    }

    protected override StoreStatus OnPurgedAll(ulong nextSeq)
    {
        // A new newest block whose header floor says "everything below nextSeq is gone" is made durable
        // first; only then are the old blocks deleted. A crash in between still recovers the purge.
        var old = _blocks.ToArray();
        _tail = null!;
        _cached.Clear();
        try
        {
            NewTailBlock(nextSeq);
        }
        catch (IOException e)
        {
            LastError = $"purge: cannot create a block: {e.Message}";
            _tail = old[^1];
            return IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;
        }
        var st = FlushTailLocked();
        if (st == StoreStatus.Ok) st = SyncBlock(_tail);
        if (st != StoreStatus.Ok) return st;
        DirectorySync.Sync(_blockDir);
        foreach (var b in old)
        {
            b.Live = 0;
            b.Tombstones = 0;
            RemoveBlock(b);
        }
        _persistedFloor = nextSeq;
        return StoreStatus.Ok;
    }

    protected override StoreStatus OnSkipped(ulong last)
    {
        AppendControl(Format.TypeSkip, last);
        return OnOperationDone(false);
    }

    protected override StoreStatus OnOperationDone(bool floorChanged)
    {
        if (_recovering) return StoreStatus.Ok;
        if (_persistedFloor < First) WriteFloorRecord();
        // Explicit operations reach the OS at once (a process crash keeps them); fsync per policy.
        var st = FlushTailLocked();
        if (st == StoreStatus.Ok) CompactEmptyBlocks();
        if (st == StoreStatus.Ok && _sync == SyncPolicy.Always) st = SyncBlock(_tail);
        return st;
    }

    // ================= consumers / lifetime =================

    private readonly List<FileConsumerStore> _fileConsumers = [];

    protected override IConsumerStore CreateConsumerStore(string name)
    {
        var c = new FileConsumerStore(name, Path.Combine(_consumerDir, name + ".cs"), _sync == SyncPolicy.Always, ForgetFileConsumer, ArmFlush, null);
        _fileConsumers.Add(c);
        ArmFlush();
        return c;
    }

    private void ForgetFileConsumer(string name)
    {
        lock (Sync)
        {
            _fileConsumers.RemoveAll(c => c.Name == name);
            ForgetConsumer(name);
        }
    }

    protected override void CloseEngine()
    {
        _flushTimer?.Dispose();
        _syncTimer?.Dispose();
        if (_persistedFloor < First) WriteFloorRecord();
        FlushTailLocked();
        foreach (var b in _blocks) SyncBlock(b);
        CloseFiles();
    }

    private void CloseFiles()
    {
        foreach (var b in _blocks) b.File.Dispose();
        _blocks.Clear();
        _byId.Clear();
        _cached.Clear();
    }

    protected override StoreStatus DeleteEngine()
    {
        _flushTimer?.Dispose();
        _syncTimer?.Dispose();
        CloseFiles();
        try
        {
            Directory.Delete(_dir, recursive: true);
            return StoreStatus.Ok;
        }
        catch (IOException e)
        {
            LastError = e.Message;
            return StoreStatus.IoError;
        }
    }
}
