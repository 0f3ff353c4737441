using NatsBroker.Contracts;
using NatsBroker.Storage.Internal;

namespace NatsBroker.Storage.File;

/// <summary>
/// Consumer state persisted to obs/NAME.cs, replaced whole: NAME.cs.tmp is written and fsynced, then renamed
/// over NAME.cs, so a crash or power cut leaves the old or the new state, never a torn or empty one. The store's
/// flush loop writes dirty states (at most every ConsumerWriteInterval; every 100 ms under sync-always, as nats-server's
/// consumer flusher), fsyncing the directory too under sync-always; otherwise its sync tick fsyncs the directory.
/// So an update is durable within that interval, not when it returns: a crash can redeliver what was acked in it, as
/// with nats-server. A failed write is fatal for the whole store (fail-stop).
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
        // Never written on the caller's thread, sync-always included: the store's flush loop writes dirty states, as
        // nats-server's consumer flusher does in every sync mode (filestore.go consumerFileStore.flushLoop, about 10
        // writes a second per consumer, each fsynced under sync always). Writing (and fsyncing) the file on each
        // delivery and ack held a sync-always consumer to ~180 messages/s against nats-server's ~14,000 (issue 38).
        _dirty = true;
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
