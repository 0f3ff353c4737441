using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Consumer state persisted to obs/NAME.cs, replaced whole: NAME.cs.tmp is written and fsynced, then renamed
/// over NAME.cs, so a crash or power cut leaves the old or the new state, never a torn or empty one. With
/// sync-always the directory is fsynced too before the update returns; otherwise the store's flush loop writes
/// dirty states (at most every ConsumerWriteInterval) and its sync tick fsyncs the directory. A failed write
/// is fatal for the whole store (fail-stop).
/// </summary>
internal sealed class FileConsumerStore : MemoryConsumerStore
{
    private readonly string _path;
    private readonly FileStore _store;
    private bool _dirty;
    private bool _deleted;

    public FileConsumerStore(string name, string path, FileStore store, ConsumerState? initial)
        : base(name, store.ForgetFileConsumer)
    {
        _store = store;
        _path = path;
        initial?.CopyTo(State);
        if (initial is null) _dirty = true;
    }

    protected override StoreStatus Persist()
    {
        if (_store.Failure is not null) return StoreStatus.IoError;
        _dirty = true;
        if (_store.SyncAlways) return WriteLocked();
        _store.ArmFlush();
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
        if (_store.Failure is not null) return StoreStatus.IoError;
        try
        {
            DurableFile.Replace(_store.FileSystem, _path, ConsumerStateCodec.Encode(State), syncDirectory: false);
            _store.ConsumerDirectoryChanged();
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            _store.ConsumerWriteFailed(Name, e);
            return FileStore.IsDiskFull(e) ? StoreStatus.DiskFull : StoreStatus.IoError;
        }
        var st = _store.SyncAlways ? _store.SyncConsumerDirectory() : StoreStatus.Ok;
        if (st == StoreStatus.Ok) _dirty = false;
        return st;
    }

    protected override StoreStatus DeleteFiles()
    {
        _deleted = true;
        try
        {
            var fs = _store.FileSystem;
            if (fs.FileExists(_path)) fs.DeleteFile(_path);
            if (fs.FileExists(_path + ".tmp")) fs.DeleteFile(_path + ".tmp");
            _store.ConsumerDirectoryChanged();
            return _store.SyncAlways ? _store.SyncConsumerDirectory() : StoreStatus.Ok;
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
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
