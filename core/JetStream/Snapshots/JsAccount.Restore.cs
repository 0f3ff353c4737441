using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.JetStream.Snapshots;

namespace NatsBroker.JetStream;

// Restores (nats-server stream.go RestoreStream): the name of a restored stream is claimed only once its snapshot
// was read, from the move into streams/<name>/ until the stream is added, so no create opens that directory meanwhile.
internal sealed partial class JsAccount
{
    private readonly HashSet<string> _restoring = new(StringComparer.Ordinal);

    /// <summary>Directory for restores in progress (file streams are rebuilt there, then moved into streams/).</summary>
    public string RestoresDir => Path.Combine(Dir, "restores");

    /// <summary>
    /// Removes what restores left when the server stopped during them (recovery, before any restore can start): an
    /// unfinished restore never made a stream, so nothing there is kept.
    /// </summary>
    private void DiscardUnfinishedRestores()
    {
        if (!Directory.Exists(RestoresDir)) return;
        foreach (var dir in Directory.GetDirectories(RestoresDir))
        {
            try
            {
                Directory.Delete(dir, recursive: true);
                Logger.LogWarning("JetStream: removed the unfinished restore {Dir}", dir);
            }
            catch (IOException ex)
            {
                Logger.LogWarning("JetStream: could not remove the unfinished restore {Dir}: {Error}", dir, ex.Message);
            }
        }
    }

    /// <summary>
    /// The checks a restore request makes after those of a create (name, limits): nats-server's
    /// jsStreamRestoreRequest refuses an existing stream (10130) but not a name another restore is still reading,
    /// nor does it hold the name meanwhile (a second restore, or a create, of that name is answered as usual; the
    /// restore that finishes later fails with 10130, RestoreStream's lookupStream before the move).
    /// </summary>
    public ApiError? CheckRestoreRequest(StreamConfig config)
    {
        lock (_lock)
        {
            if (_streams.ContainsKey(config.Name)) return SnapshotErrors.StreamNameExistRestoreFailed;
            return CheckStreamLimitsLocked(config);
        }
    }

    /// <summary>
    /// Claims <paramref name="name"/> for a restore whose snapshot was read in full, before its files move into
    /// streams/&lt;name&gt;/ (nats-server RestoreStream: "See if this stream already exists"): false (10130) when a
    /// stream of that name exists or another restore is moving into place. The claim ends when the stream is added
    /// (AddRestored) or the restore gives up (<see cref="ReleaseRestore"/>).
    /// </summary>
    public bool ClaimRestore(string name)
    {
        lock (_lock)
        {
            if (_streams.ContainsKey(name)) return false;
            return _restoring.Add(name);
        }
    }

    public void ReleaseRestore(string name)
    {
        lock (_lock) _restoring.Remove(name);
    }

    /// <summary>
    /// Whether <paramref name="restoredBytes"/> more bytes of a kind fit this account's and the server's limits
    /// (nats-server RestoreStream's checkAllLimits as the snapshot is read): the error to refuse with, or null.
    /// </summary>
    public ApiError? CheckRestoreUsage(bool memory, long restoredBytes)
    {
        var l = Limits;
        var exceeded = memory ? JsErrors.MemoryResourcesExceeded : JsErrors.StorageResourcesExceeded;
        long max = memory ? l.MaxMemory : l.MaxStore;
        if (max >= 0 && (memory ? MemoryUsed : StoreUsed) + restoredBytes > max) return exceeded;
        long serverMax = memory ? Options.JetStreamMaxMemory : Options.JetStreamMaxStore;
        if (serverMax >= 0 && Service.Used(memory) + restoredBytes > serverMax) return exceeded;
        return null;
    }

    /// <summary>
    /// Adds a restored stream, ending its reservation: a file stream opens its store from streams/&lt;name&gt;/
    /// (already moved there); a memory stream takes <paramref name="memoryStore"/>. Checks subjects and limits again
    /// under the account lock, as a create does, and rebuilds the duplicate window as a recovery does.
    /// </summary>
    public ApiError? AddRestored(StreamConfig config, DateTime created, IStreamStore? memoryStore, out JsStream? stream)
    {
        stream = null;
        lock (_lock)
        {
            // The reservation stays until the stream is added: after a failure the restore removes what it moved
            // into streams/<name>/ first, and no create may open that directory meanwhile.
            if (_streams.ContainsKey(config.Name)) return SnapshotErrors.StreamNameExistRestoreFailed;
            if (OverlapsLocked(config.Name, config.Subjects)) return JsErrors.StreamSubjectOverlap;
            if (CheckStreamLimitsLocked(config) is { } limitError) return limitError;
            if (memoryStore is not null) stream = JsStream.FromRestoredStore(this, config, created, memoryStore);
            else if (JsStream.Open(this, config, created, recovering: true, out stream) is { } openError) return openError;
            stream!.RebuildDedupe();
            _restoring.Remove(config.Name);
            _streams[config.Name] = stream;
            _snapshot = [.. _streams.Values];
        }
        stream.Start();
        SyncUsage(stream);
        return null;
    }
}
