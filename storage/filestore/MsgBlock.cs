namespace NatsBroker.Storage.File;

/// <summary>One message block file and its in-memory bookkeeping (owned by <see cref="FileStore"/>, under its lock).</summary>
internal sealed class MsgBlock
{
    public required uint Id;
    public required string Path;
    public required IStoreFile File;
    public ulong StartSeq;
    public ulong Floor;
    /// <summary>Highest message sequence written to the block (0 = none): the block holds messages in [StartSeq, LastMsgSeq].</summary>
    public ulong LastMsgSeq;
    /// <summary>Logical size: bytes in the block, including bytes not yet handed to the OS.</summary>
    public long Size;
    /// <summary>Bytes written to the file (handed to the OS).</summary>
    public long Flushed;
    /// <summary>Bumped (under the store lock) by every write to the file.</summary>
    public long WriteGen;
    /// <summary>Highest <see cref="WriteGen"/> known durable: set after an fsync that started at or after it succeeded.</summary>
    public long SyncedGen;
    /// <summary>The block was deleted (its file closed); an fsync racing with that has nothing left to make durable.</summary>
    public volatile bool Removed;
    /// <summary>Whole-block image (always present for the newest block, which is written from it); null when evicted.</summary>
    public byte[]? Cache;
    /// <summary>Disk space accounted to the block (its preallocation, or its size if larger).</summary>
    public long Reserved;
    /// <summary>Bumped (under the store lock) before an Erase rewrites bytes of the block: a checkpoint that read the block before must not install its snapshot.</summary>
    public int EraseGen;
    public int Live;
    public int Tombstones;
    /// <summary>
    /// Under the store lock: the block holds no live message and is to be deleted (FileStore.BlockDeletion.cs). It stays
    /// in the store's block list, so tombstones elsewhere that refer to it are still carried, until its file is gone.
    /// </summary>
    public bool Doomed;
    /// <summary>Under the store lock: the background deleter is deleting this doomed block (nobody else may).</summary>
    public bool Claimed;

    public bool NeedsSync => Interlocked.Read(ref SyncedGen) < WriteGen;

    public void MarkSynced(long gen)
    {
        long cur;
        while ((cur = Interlocked.Read(ref SyncedGen)) < gen && Interlocked.CompareExchange(ref SyncedGen, gen, cur) != cur)
        {
        }
    }
}

/// <summary>Pending directory operations (create, rename, delete) of one directory, made durable by its fsync.</summary>
internal sealed class DirectoryState(string path)
{
    public readonly string Path = path;
    /// <summary>Bumped (under the store lock) by every create, rename or delete in the directory.</summary>
    public long Gen;
    public long SyncedGen;

    public bool NeedsSync => Interlocked.Read(ref SyncedGen) < Interlocked.Read(ref Gen);
    public void Touch() => Interlocked.Increment(ref Gen);

    public void MarkSynced(long gen)
    {
        long cur;
        while ((cur = Interlocked.Read(ref SyncedGen)) < gen && Interlocked.CompareExchange(ref SyncedGen, gen, cur) != cur)
        {
        }
    }
}
