using System.Runtime.CompilerServices;
using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>Reads: from a block's in-memory image when it has one, else one positional read; and the small block cache.</summary>
internal sealed partial class FileStore
{
    private readonly List<MsgBlock> _cached = [];
    private byte[] _scratch = new byte[4096];
    private byte[]? _spareReadBuffer = new byte[4096];
    private uint _coldBlock;
    private long _coldNext;
    private int _seqRun;
    /// <summary>
    /// Blocks recently read, by id modulo the length (a slot is cleared when its block is detached or its id re-added):
    /// loads mostly hit the few newest blocks, and this skips the dictionary lookup, which the read path's fully
    /// optimised code calls and does not inline. Written only on a miss (a reference store costs a write barrier).
    /// </summary>
    private readonly MsgBlock?[] _readBlocks = new MsgBlock?[ReadBlockSlots];
    private const int ReadBlockSlots = 16;

    /// <summary>Forgets a block in <see cref="_readBlocks"/> (detached, or replaced under its id).</summary>
    private void ForgetReadBlock(uint id) => _readBlocks[id & (ReadBlockSlots - 1)] = null;

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    protected override StoreStatus ReadMessage(ulong seq, in IndexEntry entry, SubjectInfo subject, StoredMessage into, ref DeferredRead deferred)
    {
        uint id = (uint)(entry.Location >> 32);
        ref var slot = ref _readBlocks[id & (ReadBlockSlots - 1)];
        var b = slot;
        if (b is null || b.Id != id)
        {
            if (!_byId.TryGetValue(id, out b)) return StoreStatus.Corrupt;
            slot = b;
        }
        int off = (int)(entry.Location & 0xFFFFFFFF);
        int len = entry.Aux;
        ReadOnlySpan<byte> rec;
        if (b.Cache is null)
        {
            if (deferred.CachedOnly)
            {
                // The caller may not wait on the disk (LoadLastCached): report the read as deferred and do nothing,
                // not even the sequential-run bookkeeping of real reads.
                deferred.Pending = true;
                return StoreStatus.Ok;
            }
            // Sequential cold reads (each starting where the previous one ended) load the whole block once.
            _seqRun = b.Id == _coldBlock && off == _coldNext ? _seqRun + 1 : 0;
            _coldBlock = b.Id;
            _coldNext = off + len;
            // A whole block (up to block_size, 4 MiB by default) is loaded only by a deferred read, outside the lock.
            // A load retried under the lock (deferred.Allowed false: the cache it installed was evicted meanwhile,
            // e.g. by another reader replaying the same blocks, or a record failed its check) reads one record.
            bool loadBlock = deferred.Allowed && _seqRun >= 2 && _opt.CacheBlocks > 0 && b.Size <= _opt.BlockSize;
            if (deferred.Allowed)
            {
                // Disk I/O happens after the store lock is released (CompleteRead): appends go on meanwhile.
                deferred.Pending = true;
                deferred.Source = b;
                deferred.Sequence = seq;
                deferred.Offset = loadBlock ? -1 : off;
                deferred.Length = loadBlock ? (int)b.Size : len;
                deferred.Buffer = loadBlock ? RentBuffer((int)b.Size) : null;
                return StoreStatus.Ok;
            }
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
                int n = b.File.Read(_scratch.AsSpan(0, len), off);
                if (n < len)
                {
                    LastError = $"block {Format.BlockName(b.Id)}: sequence {seq} at offset {off} is truncated on disk";
                    return StoreStatus.Corrupt;
                }
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
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
        CopyOut(rec, seq, into);
        return StoreStatus.Ok;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static void CopyOut(ReadOnlySpan<byte> rec, ulong seq, StoredMessage into)
    {
        var r = new Format.Rec(rec);
        var dst = into.Prepare(seq, r.Timestamp, r.Ttl, r.SubjectLength, r.HeadersLength, r.PayloadLength);
        rec.Slice(Format.RecordHeaderSize, rec.Length - Format.RecordOverhead).CopyTo(dst);
    }

    /// <summary>
    /// Runs without the store lock: one positional read of a record (checked), or the load of a whole block
    /// that is then installed as its cache under the lock (briefly). Anything unexpected (the block was deleted
    /// meanwhile, a checksum that fails, possibly because an erase rewrote the record) is retried under the
    /// lock, which reports it exactly.
    /// </summary>
    protected override StoreStatus CompleteRead(ref DeferredRead d, StoredMessage into, out bool retry)
    {
        retry = true;
        var b = (MsgBlock)d.Source!;
        if (d.Offset < 0)
        {
            var buf = d.Buffer!;
            bool ok;
            try
            {
                ok = b.File.Read(buf.AsSpan(0, d.Length), 0) == d.Length;
            }
            catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
            {
                ok = false;
            }
            lock (Sync)
            {
                if (ok && !b.Removed && b.Cache is null && b.Size == d.Length && !IsClosed)
                {
                    b.Cache = buf;
                    KeepCached(b);
                }
                else
                {
                    ReturnBuffer(buf);
                }
            }
            return StoreStatus.Ok; // retry: the load now finds the cache (or reads under the lock)
        }
        // One spare buffer serves the usual single reader without allocating; concurrent readers allocate their own.
        var rent = Interlocked.Exchange(ref _spareReadBuffer, null);
        if (rent is null || rent.Length < d.Length) rent = new byte[Math.Max(d.Length, 4096)];
        try
        {
            var rec = rent.AsSpan(0, d.Length);
            if (b.File.Read(rec, d.Offset) < d.Length) return StoreStatus.Ok;
            if (!Format.TryRecord(rec, out var chk) || chk.Seq != d.Sequence || chk.Type != Format.TypeMessage) return StoreStatus.Ok;
            CopyOut(rec, d.Sequence, into);
            retry = false;
            return StoreStatus.Ok;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or ObjectDisposedException)
        {
            return StoreStatus.Ok; // retried under the lock
        }
        finally
        {
            Interlocked.CompareExchange(ref _spareReadBuffer, rent, null);
        }
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
}
