using System.Globalization;
using NatsBroker.Contracts;

[assembly: NatsBroker.Contracts.StreamStoreEngine(typeof(NatsBroker.Storage.File.FileStoreFactory))]

namespace NatsBroker.Storage.File;

/// <summary>
/// The "file" engine factory. Engine options: <c>block_size</c> (bytes, default 4 MiB), <c>cache_blocks</c>
/// (recent full blocks kept in memory besides the newest, default 1), <c>coalesce_bytes</c> (buffered bytes
/// that trigger an inline write, default 256 KiB), <c>disk_limit_bytes</c> (refuse writes past this many bytes
/// on disk, exactly as a full disk; 0 = none), <c>image_interval_bytes</c> (bytes written between two index image
/// checkpoints, default 128 MiB: bounds what an open after a crash replays).
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
        var (o, error) = FileStoreOptions.Parse(config.EngineOptions);
        if (o is null) return StoreOpenResult.Fail(StoreStatus.InvalidArgument, error!);
        return FileStore.Open(config, directory, o);
    }
}

internal sealed class FileStoreOptions
{
    public int BlockSize = 4 << 20;
    public int CacheBlocks = 1;
    public int CoalesceBytes = 256 << 10;
    public long DiskLimitBytes;
    /// <summary>An index image checkpoint is written after this many bytes were written to the blocks (FileStore.ImageCheckpoint.cs).</summary>
    public long ImageIntervalBytes = 128L << 20;
    /// <summary>Periodic sync mode: consumer state files are rewritten (tmp + fsync + rename) at most this often.</summary>
    public TimeSpan ConsumerWriteInterval = TimeSpan.FromSeconds(1);
    /// <summary>The file system the engine writes through; tests substitute a fault-injecting one.</summary>
    public IStoreFileSystem FileSystem = OsFileSystem.Instance;

    public static (FileStoreOptions?, string?) Parse(IReadOnlyDictionary<string, string> options)
    {
        var o = new FileStoreOptions();
        foreach (var (k, v) in options)
        {
            bool ok = long.TryParse(v, NumberStyles.Integer, CultureInfo.InvariantCulture, out long n) && n >= 0;
            switch (k)
            {
                case "block_size": ok &= n is >= 4096 and <= int.MaxValue / 2; o.BlockSize = (int)n; break;
                case "cache_blocks": ok &= n <= 64; o.CacheBlocks = (int)n; break;
                case "coalesce_bytes": ok &= n <= 64 << 20; o.CoalesceBytes = (int)n; break;
                case "disk_limit_bytes": o.DiskLimitBytes = n; break;
                case "image_interval_bytes": ok &= n >= 4096; o.ImageIntervalBytes = n; break;
                default: continue;
            }
            if (!ok) return (null, $"file engine: bad {k} '{v}'");
        }
        return (o, null);
    }
}
