using Microsoft.Win32.SafeHandles;

namespace NatsBroker.Storage.File;

/// <summary>One message block file and its in-memory bookkeeping.</summary>
internal sealed class MsgBlock
{
    public required uint Id;
    public required string Path;
    public required FileStream File;
    public SafeFileHandle Handle => File.SafeFileHandle;
    public ulong StartSeq;
    public ulong Floor;
    /// <summary>Logical size: bytes in the block, including bytes not yet handed to the OS.</summary>
    public long Size;
    /// <summary>Bytes written to the file (handed to the OS).</summary>
    public long Flushed;
    /// <summary>Written since the last fsync.</summary>
    public bool NeedsSync;
    /// <summary>Whole-block image (always present for the newest block, which is written from it); null when evicted.</summary>
    public byte[]? Cache;
    /// <summary>Disk space accounted to the block (its preallocation, or its size if larger).</summary>
    public long Reserved;
    public int Live;
    public int Tombstones;
}
