using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>Consumer state persisted to obs/NAME.cs: at once with sync-always, else by the store's flush loop.</summary>
internal sealed class FileConsumerStore : MemoryConsumerStore
{
    private readonly string _path;
    private readonly bool _syncAlways;
    private bool _dirty;
    private bool _deleted;

    private readonly Action _onDirty;

    public FileConsumerStore(string name, string path, bool syncAlways, Action<string> onDelete, Action onDirty, ConsumerState? initial)
        : base(name, onDelete)
    {
        _onDirty = onDirty;
        _path = path;
        _syncAlways = syncAlways;
        initial?.CopyTo(State);
        if (initial is null) _dirty = true;
    }

    protected override StoreStatus Persist()
    {
        _dirty = true;
        if (_syncAlways) return WriteLocked();
        _onDirty();
        return StoreStatus.Ok;
    }

    /// <summary>Writes the state if it changed (called by the store's flush loop and at close).</summary>
    public StoreStatus FlushIfDirty()
    {
        lock (Gate) return _dirty ? WriteLocked() : StoreStatus.Ok;
    }

    private StoreStatus WriteLocked()
    {
        if (_deleted) return StoreStatus.Ok;
        var bytes = ConsumerStateCodec.Encode(State);
        var tmp = _path + ".tmp";
        try
        {
            using (var fs = new FileStream(tmp, FileMode.Create, FileAccess.Write, FileShare.None, 0))
            {
                fs.Write(bytes);
                fs.Flush(_syncAlways);
            }
            System.IO.File.Move(tmp, _path, overwrite: true);
            _dirty = false;
            return StoreStatus.Ok;
        }
        catch (IOException e)
        {
            return FileStore.IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;
        }
        catch (UnauthorizedAccessException)
        {
            return StoreStatus.IoError;
        }
    }

    protected override StoreStatus DeleteFiles()
    {
        _deleted = true;
        try
        {
            System.IO.File.Delete(_path);
            System.IO.File.Delete(_path + ".tmp");
            return StoreStatus.Ok;
        }
        catch (IOException)
        {
            return StoreStatus.IoError;
        }
    }

    public override void Dispose()
    {
        FlushIfDirty();
        base.Dispose();
    }
}
