using NatsBroker.Storage.File;

namespace NatsBroker.Storage.Tests.Faults;

/// <summary>
/// An in-memory file system that can fail any operation on demand and can "lose power". It keeps, for every
/// file, the bytes a reader sees and the bytes that are durable, and for every directory the entries a reader
/// sees and the durable ones, following the POSIX rules the engine must obey: file data becomes durable only
/// by that file's fsync, a create/rename/delete only by an fsync of its directory.
/// <para>
/// <see cref="PowerCut"/> keeps, file by file and directory by directory, the durable state plus a random
/// prefix of the operations issued since the last fsync (the last kept write possibly torn), as a kernel that
/// wrote back some of its dirty pages may leave it (or, with <see cref="OutOfOrderWriteback"/>, any subset of a
/// file's pages); everything else is discarded. A failed fsync drops the
/// pending writes from the durable side for good while readers still see them, as Linux does ("fsyncgate"):
/// a later fsync that succeeds does not bring them back.
/// </para>
/// Each engine instance gets a <see cref="Session"/>; a power cut kills every session opened before it, so a
/// store object left over from before the cut can no longer touch the "disk".
/// </summary>
internal sealed class FaultFileSystem
{
    /// <summary>A file system holding one durable (created and directory-synced) empty directory, <paramref name="root"/>.</summary>
    public static FaultFileSystem WithDirectory(string root)
    {
        var fs = new FaultFileSystem();
        var s = fs.Session();
        s.CreateDirectory(root);
        s.SyncDirectory("/");
        return fs;
    }

    private readonly object _gate = new();
    private readonly Dir _root = new();
    private int _epoch;

    /// <summary>Decides whether an operation ("write", "sync", "syncdir", "rename", "create", "delete", "truncate") on a path fails.</summary>
    public Func<string, string, bool>? ShouldFail { get; set; }

    public int InjectedFailures { get; private set; }

    /// <summary>Called with the path before a file read, outside the file system's lock (tests stall a reader here).</summary>
    public Action<string>? BeforeRead { get; set; }

    /// <summary>Called with the path and length of a file write after its bytes were taken and before they land, outside the file system's lock (tests stall a write-behind here).</summary>
    public Action<string, int>? BeforeWrite { get; set; }

    /// <summary>Called with the path before a file fsync, outside the file system's lock (tests stall a checkpoint here).</summary>
    public Action<string>? BeforeSync { get; set; }

    /// <summary>Called with the path before a file is deleted, outside the file system's lock (tests stall a block deletion here).</summary>
    public Action<string>? BeforeDelete { get; set; }

    /// <summary>Bytes read from block files (*.blk) and from all files, through every session (open-cost tests).</summary>
    public long BlockBytesRead => Interlocked.Read(ref _blockBytesRead);
    public long BytesRead => Interlocked.Read(ref _bytesRead);
    private long _blockBytesRead, _bytesRead;

    public void ResetReadCounters()
    {
        Interlocked.Exchange(ref _blockBytesRead, 0);
        Interlocked.Exchange(ref _bytesRead, 0);
    }

    private void CountRead(string path, int n)
    {
        Interlocked.Add(ref _bytesRead, n);
        if (path.EndsWith(".blk", StringComparison.Ordinal)) Interlocked.Add(ref _blockBytesRead, n);
    }

    public IStoreFileSystem Session() => new View(this, _epoch);

    /// <summary>
    /// When set, a power cut keeps a random subset of each file's un-fsynced data, in pages of
    /// <see cref="WritebackPage"/> bytes, instead of a prefix of its writes: the kernel writes dirty pages back in
    /// any order (a later page can reach the disk before an earlier one, leaving a hole of old or zero bytes), and
    /// a page can be torn at a 512-byte sector. Directory entries still keep a prefix (file systems journal them
    /// in order).
    /// </summary>
    public bool OutOfOrderWriteback { get; set; }

    /// <summary>The page size of <see cref="OutOfOrderWriteback"/>.</summary>
    public const int WritebackPage = 4096;

    /// <summary>
    /// Loses power: discards every un-fsynced change except a random prefix per directory and, per file, a random
    /// prefix of its writes or (<see cref="OutOfOrderWriteback"/>) a random subset of its pages.
    /// </summary>
    public void PowerCut(Random rng)
    {
        lock (_gate)
        {
            _epoch++;
            var seen = new HashSet<object>(ReferenceEqualityComparer.Instance);
            CutDir(_root, rng, seen);
        }
    }

    private void CutDir(Dir d, Random rng, HashSet<object> seen)
    {
        if (!seen.Add(d)) return;
        int keep = d.Pending.Count == 0 ? 0 : rng.Next(d.Pending.Count + 1);
        var entries = new Dictionary<string, object>(d.Durable, StringComparer.Ordinal);
        for (int i = 0; i < keep; i++) d.Pending[i].Apply(entries);
        // Nodes reachable only through discarded entries are garbage now; the rest are cut in turn.
        d.Entries = entries;
        d.Durable = new Dictionary<string, object>(entries, StringComparer.Ordinal);
        d.Pending.Clear();
        foreach (var node in entries.Values)
        {
            if (node is Dir sub) CutDir(sub, rng, seen);
            else if (node is Inode f && seen.Add(f))
            {
                if (OutOfOrderWriteback) CutFileOutOfOrder(f, rng);
                else CutFile(f, rng);
            }
        }
    }

    /// <summary>
    /// <see cref="OutOfOrderWriteback"/>: every pending write is split at page boundaries; each piece reaches the
    /// disk or not, independently (a kept piece possibly cut at a sector boundary); kept pieces and length changes
    /// are applied in issue order, so a page written twice ends with the newer of the kept versions. A length change
    /// is a barrier (see below).
    /// </summary>
    private static void CutFileOutOfOrder(Inode f, Random rng)
    {
        var data = f.Durable.ToList();
        // Each file gets its own odds, so some files lose almost everything and some almost nothing.
        double keepOdds = rng.NextDouble();
        foreach (var op in f.Pending)
        {
            if (op.Truncate)
            {
                // A length change is journaled metadata: a write issued after it reaches the disk only in a later
                // (or the same) journal transaction, so if the truncate is lost, so is everything after it. (Keeping
                // later writes without it would resurrect bytes the engine had cut off, which no journaling file
                // system does.)
                if (rng.NextDouble() >= keepOdds) break;
                op.Apply(data, 0);
                continue;
            }
            long at = op.Offset;
            long end = op.Offset + op.Bytes.Length;
            while (at < end)
            {
                long pageEnd = Math.Min(end, (at / WritebackPage + 1) * WritebackPage);
                if (rng.NextDouble() < keepOdds)
                {
                    int len = (int)(pageEnd - at);
                    // A torn page: only its first sectors were written.
                    if (len > 512 && rng.Next(8) == 0) len = 512 * rng.Next(1, (len + 511) / 512);
                    var piece = new FileOp(at, op.Bytes.AsSpan((int)(at - op.Offset), Math.Min(len, (int)(pageEnd - at))).ToArray(), Truncate: false);
                    piece.Apply(data, piece.Bytes.Length);
                }
                at = pageEnd;
            }
        }
        f.Data = data;
        f.Durable = [.. data];
        f.Pending.Clear();
    }

    private static void CutFile(Inode f, Random rng)
    {
        var data = f.Durable.ToList();
        int keep = f.Pending.Count == 0 ? 0 : rng.Next(f.Pending.Count + 1);
        for (int i = 0; i < keep; i++) f.Pending[i].Apply(data, f.Pending[i].Bytes.Length);
        if (keep < f.Pending.Count && f.Pending[keep].Bytes.Length > 1 && rng.Next(2) == 0)
            f.Pending[keep].Apply(data, rng.Next(1, f.Pending[keep].Bytes.Length)); // a torn write
        f.Data = data;
        f.Durable = [.. data];
        f.Pending.Clear();
    }

    /// <summary>
    /// The content <paramref name="path"/> would have after a power cut that keeps nothing pending: reached through
    /// durable directory entries only, with the file's durable bytes; null if the durable tree has no such file.
    /// </summary>
    public byte[]? DurableContent(string path)
    {
        lock (_gate)
        {
            object node = _root;
            foreach (var p in Parts(path))
            {
                if (node is not Dir d || !d.Durable.TryGetValue(p, out var next)) return null;
                node = next;
            }
            return node is Inode f ? [.. f.Durable] : null;
        }
    }

    /// <summary>Changes under <paramref name="path"/> (its directory tree and the files in it) not yet made durable by an fsync.</summary>
    public int PendingUnder(string path)
    {
        lock (_gate)
        {
            var d = FindDir(path);
            return d is null ? 0 : CountPending(d, new HashSet<object>(ReferenceEqualityComparer.Instance));
        }
    }

    private static int CountPending(Dir d, HashSet<object> seen)
    {
        if (!seen.Add(d)) return 0;
        int n = d.Pending.Count;
        foreach (var node in d.Entries.Values)
        {
            if (node is Dir sub) n += CountPending(sub, seen);
            else if (node is Inode f && seen.Add(f)) n += f.Pending.Count;
        }
        return n;
    }

    private void Check(int epoch, string op, string path)
    {
        if (epoch != _epoch) throw new IOException($"power lost: {op} {path} after the cut");
        if (ShouldFail?.Invoke(op, path) == true)
        {
            InjectedFailures++;
            throw new IOException($"injected {op} failure on {path}");
        }
    }

    private static string[] Parts(string path) => Path.GetFullPath(path).Split('/', StringSplitOptions.RemoveEmptyEntries);

    private Dir? FindDir(string path)
    {
        Dir d = _root;
        foreach (var p in Parts(path))
        {
            if (!d.Entries.TryGetValue(p, out var n) || n is not Dir sub) return null;
            d = sub;
        }
        return d;
    }

    private (Dir, string) Parent(string path)
    {
        var full = Path.GetFullPath(path);
        var dir = FindDir(Path.GetDirectoryName(full)!) ?? throw new DirectoryNotFoundException($"no directory for {full}");
        return (dir, Path.GetFileName(full));
    }

    private sealed class Dir
    {
        public Dictionary<string, object> Entries = new(StringComparer.Ordinal);
        public Dictionary<string, object> Durable = new(StringComparer.Ordinal);
        public readonly List<DirOp> Pending = [];

        public void Do(DirOp op)
        {
            op.Apply(Entries);
            Pending.Add(op);
        }
    }

    /// <summary>One directory change: remove <see cref="Remove"/> and/or add <see cref="Add"/> (a rename does both, atomically).</summary>
    private sealed record DirOp(string? Remove, string? Add, object? Node)
    {
        public void Apply(Dictionary<string, object> entries)
        {
            if (Remove is not null) entries.Remove(Remove);
            if (Add is not null) entries[Add] = Node!;
        }
    }

    private sealed class Inode
    {
        public List<byte> Data = [];
        public byte[] Durable = [];
        public readonly List<FileOp> Pending = [];
    }

    /// <summary>A write of <see cref="Bytes"/> at <see cref="Offset"/>, or (Truncate) a change of length to <see cref="Offset"/>.</summary>
    private sealed record FileOp(long Offset, byte[] Bytes, bool Truncate)
    {
        public void Apply(List<byte> data, int count)
        {
            if (Truncate)
            {
                if (data.Count > Offset) data.RemoveRange((int)Offset, data.Count - (int)Offset);
                while (data.Count < Offset) data.Add(0);
                return;
            }
            while (data.Count < Offset) data.Add(0);
            for (int i = 0; i < count; i++)
            {
                long p = Offset + i;
                if (p < data.Count) data[(int)p] = Bytes[i];
                else data.Add(Bytes[i]);
            }
        }
    }

    /// <summary>The file system as one engine instance sees it; dead after the next power cut.</summary>
    private sealed class View(FaultFileSystem fs, int epoch) : IStoreFileSystem
    {
        public bool FileExists(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "stat", path);
                var full = Path.GetFullPath(path);
                var d = fs.FindDir(Path.GetDirectoryName(full)!);
                return d is not null && d.Entries.TryGetValue(Path.GetFileName(full), out var n) && n is Inode;
            }
        }

        public bool DirectoryExists(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "stat", path);
                return fs.FindDir(path) is not null;
            }
        }

        public bool DirectoryHasEntries(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "stat", path);
                return fs.FindDir(path) is { } d && d.Entries.Count > 0;
            }
        }

        public void CreateDirectory(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "mkdir", path);
                Dir d = fs._root;
                foreach (var p in Parts(path))
                {
                    if (!d.Entries.TryGetValue(p, out var n))
                    {
                        n = new Dir();
                        d.Do(new DirOp(null, p, n));
                    }
                    d = n as Dir ?? throw new IOException($"{p} is a file");
                }
            }
        }

        public IReadOnlyList<string> ListFiles(string directory)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "list", directory);
                var d = fs.FindDir(directory) ?? throw new DirectoryNotFoundException(directory);
                return [.. d.Entries.Where(e => e.Value is Inode).Select(e => e.Key)];
            }
        }

        public IStoreFile OpenFile(string path, bool create, long preallocate = 0)
        {
            lock (fs._gate)
            {
                var (d, name) = fs.Parent(path);
                d.Entries.TryGetValue(name, out var n);
                if (!create)
                {
                    fs.Check(epoch, "open", path);
                    return new FaultFile(fs, epoch, path, n as Inode ?? throw new FileNotFoundException(path));
                }
                fs.Check(epoch, "create", path);
                if (n is Inode existing)
                {
                    // O_TRUNC on the same inode.
                    existing.Data.Clear();
                    existing.Pending.Add(new FileOp(0, [], Truncate: true));
                    return new FaultFile(fs, epoch, path, existing);
                }
                var f = new Inode();
                d.Do(new DirOp(null, name, f));
                return new FaultFile(fs, epoch, path, f);
            }
        }

        public byte[] ReadAllBytes(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "read", path);
                var (d, name) = fs.Parent(path);
                byte[] data = d.Entries.TryGetValue(name, out var n) && n is Inode f ? [.. f.Data] : throw new FileNotFoundException(path);
                fs.CountRead(path, data.Length);
                return data;
            }
        }

        public void Rename(string from, string to)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "rename", to);
                var (d, a) = fs.Parent(from);
                var (d2, b) = fs.Parent(to);
                if (d != d2) throw new IOException("cross-directory rename is not modelled");
                if (!d.Entries.TryGetValue(a, out var n)) throw new FileNotFoundException(from);
                d.Do(new DirOp(a, b, n));
            }
        }

        public void DeleteFile(string path)
        {
            fs.BeforeDelete?.Invoke(path);
            lock (fs._gate)
            {
                fs.Check(epoch, "delete", path);
                var (d, name) = fs.Parent(path);
                if (d.Entries.ContainsKey(name)) d.Do(new DirOp(name, null, null));
            }
        }

        public void DeleteDirectory(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "delete", path);
                var (d, name) = fs.Parent(path);
                if (d.Entries.ContainsKey(name)) d.Do(new DirOp(name, null, null));
            }
        }

        public void SyncDirectory(string path)
        {
            lock (fs._gate)
            {
                fs.Check(epoch, "syncdir", path);
                var d = fs.FindDir(path) ?? throw new DirectoryNotFoundException(path);
                foreach (var op in d.Pending) op.Apply(d.Durable);
                d.Pending.Clear();
            }
        }
    }

    private sealed class FaultFile(FaultFileSystem fs, int epoch, string path, Inode f) : IStoreFile
    {
        private bool _disposed;

        private void Alive()
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
        }

        public long Length
        {
            get
            {
                lock (fs._gate)
                {
                    Alive();
                    fs.Check(epoch, "stat", path);
                    return f.Data.Count;
                }
            }
        }

        public int Read(Span<byte> into, long offset)
        {
            fs.BeforeRead?.Invoke(path);
            lock (fs._gate)
            {
                Alive();
                fs.Check(epoch, "read", path);
                int n = (int)Math.Clamp(f.Data.Count - offset, 0, into.Length);
                for (int i = 0; i < n; i++) into[i] = f.Data[(int)offset + i];
                fs.CountRead(path, n);
                return n;
            }
        }

        public void Write(ReadOnlySpan<byte> data, long offset)
        {
            // The bytes are taken before the hook: a write stalled there lands what the caller's buffer held when it
            // was issued (as write(2) copies them at once), not what the buffer holds when the stall ends.
            var bytes = data.ToArray();
            fs.BeforeWrite?.Invoke(path, bytes.Length);
            lock (fs._gate)
            {
                Alive();
                fs.Check(epoch, "write", path);
                var op = new FileOp(offset, bytes, Truncate: false);
                op.Apply(f.Data, op.Bytes.Length);
                f.Pending.Add(op);
            }
        }

        public void SetLength(long length)
        {
            lock (fs._gate)
            {
                Alive();
                fs.Check(epoch, "truncate", path);
                var op = new FileOp(length, [], Truncate: true);
                op.Apply(f.Data, 0);
                f.Pending.Add(op);
            }
        }

        public void Sync()
        {
            fs.BeforeSync?.Invoke(path);
            lock (fs._gate)
            {
                Alive();
                try
                {
                    fs.Check(epoch, "sync", path);
                }
                catch (IOException) when (epoch == fs._epoch)
                {
                    // fsyncgate: the kernel marks the failed pages clean; they never reach the disk now.
                    f.Pending.Clear();
                    throw;
                }
                var durable = f.Durable.ToList();
                foreach (var op in f.Pending) op.Apply(durable, op.Bytes.Length);
                f.Durable = [.. durable];
                f.Pending.Clear();
            }
        }

        public void Dispose() => _disposed = true;
    }
}
