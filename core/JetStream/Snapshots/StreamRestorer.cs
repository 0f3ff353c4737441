using System.Buffers.Binary;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>
/// Rebuilds a stream from a snapshot (nats-server stream.go RestoreStream), with the config of the restore request
/// (its storage may differ from the snapshot's: the format is the same for every engine). A file stream is written
/// under &lt;account&gt;/restores/&lt;id&gt;/ and moved into streams/&lt;name&gt;/ only when the whole snapshot was read
/// and checked, so a failed or interrupted restore leaves no stream behind; a memory stream is filled before it is
/// added. Every message's bytes count against the account's and the server's limits as they are read.
/// </summary>
internal sealed class StreamRestorer
{
    /// <summary>Characters a consumer name may not hold (path separators, subject tokens and wildcards).</summary>
    private static readonly System.Buffers.SearchValues<char> BadNameChars = System.Buffers.SearchValues.Create("/\\.\0 *>");
    private readonly JsAccount _js;
    private readonly StreamConfig _config;
    private readonly bool _memory;
    private readonly List<(ConsumerMeta Meta, ConsumerState State)> _consumers = [];
    private IStreamStore? _store;
    private string? _staging;
    /// <summary>Whether this restore holds its stream's name (JsAccount.ClaimRestore) and must release it on failure.</summary>
    private bool _claimed;

    public StreamRestorer(JsAccount js, StreamConfig config)
    {
        _js = js;
        _config = config;
        _memory = config.Storage == StorageType.Memory;
    }

    /// <summary>Messages restored so far, and their subject + headers + payload bytes (what the end record counts).</summary>
    public ulong Messages { get; private set; }
    public long Bytes { get; private set; }

    /// <summary>
    /// The restored messages' stored sizes in the target store (IStreamStore.StoredSize), what the account's limits
    /// are checked with: nats-server counts the sizes of the restored files (RestoreStream: the file store's records,
    /// fileStoreMsgSize each), and the stream's usage afterwards is its store's bytes.
    /// </summary>
    private long _storedBytes;

    /// <summary>Reads the snapshot to its end and adds the stream; throws <see cref="SnapshotFormatException"/> or <see cref="RestoreRefusedException"/>.</summary>
    public async Task<JsStream> RestoreAsync(Stream source, CancellationToken ct)
    {
        try
        {
            var meta = await ReadAsync(new SnapshotReader(source), ct).ConfigureAwait(false);
            return await AddAsync(meta, ct).ConfigureAwait(false);
        }
        catch
        {
            Discard();
            throw;
        }
    }

    private async Task<StreamMeta> ReadAsync(SnapshotReader r, CancellationToken ct)
    {
        ushort flags = await r.ReadHeaderAsync(ct).ConfigureAwait(false);
        if (!await r.NextAsync(ct).ConfigureAwait(false) || r.Kind != SnapshotFormat.KindStream) throw new SnapshotFormatException("snapshot does not start with the stream's config");
        StreamMeta? meta;
        try
        {
            meta = JsonSerializer.Deserialize(r.Body, JsJsonContext.Default.StreamMeta);
        }
        catch (JsonException ex)
        {
            throw new SnapshotFormatException($"bad stream config in snapshot: {ex.Message}");
        }
        if (meta is null) throw new SnapshotFormatException("bad stream config in snapshot");
        // nats-server: "The cfg passed in will be the new identity for the stream", but names must match.
        if (meta.Config.Name != _config.Name) throw new SnapshotFormatException("stream names do not match");
        OpenStore();
        bool ranged = false;
        ulong last = 0, prev = 0;
        while (true)
        {
            if (!await r.NextAsync(ct).ConfigureAwait(false)) throw new SnapshotFormatException("snapshot truncated (no end record)");
            var body = r.Body;
            switch (r.Kind)
            {
                case SnapshotFormat.KindConsumer when !ranged && (flags & SnapshotFormat.FlagConsumers) != 0:
                    _consumers.Add(DecodeConsumer(body));
                    break;
                case SnapshotFormat.KindRange when !ranged && body.Length == 16:
                {
                    ranged = true;
                    ulong first = BinaryPrimitives.ReadUInt64LittleEndian(body);
                    last = BinaryPrimitives.ReadUInt64LittleEndian(body[8..]);
                    if (first > 1) Check(_store!.SkipTo(first - 1), "setting the first sequence");
                    break;
                }
                case SnapshotFormat.KindMessage when ranged && body.Length >= SnapshotFormat.MessageFixed:
                    prev = RestoreMessage(body, prev, last);
                    break;
                case SnapshotFormat.KindEnd when ranged && body.Length == 20:
                {
                    ulong count = BinaryPrimitives.ReadUInt64LittleEndian(body);
                    ulong bytes = BinaryPrimitives.ReadUInt64LittleEndian(body[8..]);
                    uint consumers = BinaryPrimitives.ReadUInt32LittleEndian(body[16..]);
                    if (count != Messages || bytes != (ulong)Bytes || consumers != (uint)_consumers.Count) throw new SnapshotFormatException("snapshot counts do not match its content");
                    Check(_store!.SkipTo(last), "setting the last sequence");
                    if (await r.NextAsync(ct).ConfigureAwait(false)) throw new SnapshotFormatException("unexpected data after the end of the snapshot");
                    return meta;
                }
                default:
                    throw new SnapshotFormatException($"unexpected snapshot record (kind {r.Kind}, {body.Length} bytes)");
            }
        }
    }

    private static (ConsumerMeta, ConsumerState) DecodeConsumer(ReadOnlySpan<byte> body)
    {
        if (body.Length < 4) throw new SnapshotFormatException("bad consumer record");
        uint metaLength = BinaryPrimitives.ReadUInt32LittleEndian(body);
        if (metaLength > body.Length - 4) throw new SnapshotFormatException("bad consumer record");
        ConsumerMeta? meta;
        try
        {
            meta = JsonSerializer.Deserialize(body.Slice(4, (int)metaLength), JsJsonContext.Default.ConsumerMeta);
        }
        catch (JsonException ex)
        {
            throw new SnapshotFormatException($"bad consumer config in snapshot: {ex.Message}");
        }
        if (meta is null || string.IsNullOrEmpty(meta.Name) || meta.Name.AsSpan().IndexOfAny(BadNameChars) >= 0) throw new SnapshotFormatException("bad consumer config in snapshot");
        var state = new ConsumerState();
        if (ConsumerStateCodec.Decode(body[(4 + (int)metaLength)..], state, out var error) != StoreStatus.Ok)
            throw new SnapshotFormatException($"bad state of consumer '{meta.Name}' in snapshot: {error}");
        return (meta, state);
    }

    private ulong RestoreMessage(ReadOnlySpan<byte> body, ulong prev, ulong last)
    {
        ulong seq = BinaryPrimitives.ReadUInt64LittleEndian(body);
        long ts = BinaryPrimitives.ReadInt64LittleEndian(body[8..]);
        long ttl = BinaryPrimitives.ReadInt64LittleEndian(body[16..]);
        uint subjectLength = BinaryPrimitives.ReadUInt32LittleEndian(body[24..]);
        uint headersLength = BinaryPrimitives.ReadUInt32LittleEndian(body[28..]);
        var rest = body[SnapshotFormat.MessageFixed..];
        if (seq <= prev || seq > last || subjectLength == 0 || (ulong)subjectLength + headersLength > (ulong)rest.Length)
            throw new SnapshotFormatException($"bad message record in snapshot (sequence {seq})");
        int s = (int)subjectLength, h = (int)headersLength;
        Bytes += rest.Length;
        _storedBytes += _store!.StoredSize(s, h, rest.Length - s - h);
        if (_js.CheckRestoreUsage(_memory, _storedBytes) is { } exceeded) throw new RestoreRefusedException(exceeded);
        Check(_store!.AppendAt(seq, ts, rest[..s], rest.Slice(s, h), rest[(s + h)..], ttl), $"storing sequence {seq}");
        Messages++;
        return seq;
    }

    private void Check(StoreStatus status, string what)
    {
        if (status == StoreStatus.Ok) return;
        throw new RestoreRefusedException(SnapshotErrors.StreamRestore($"{what}: {_store?.LastError ?? status.ToString()}"));
    }

    private void OpenStore()
    {
        // No fsync per message while restoring (sync_always would make that one per message): the store is flushed
        // once at the end, before the stream exists; the reopened file store then runs with the stream's policy.
        var storeConfig = JsStream.StoreConfigFor(_js, _config) with { Sync = SyncPolicy.Periodic };
        string engine = _memory ? "memory" : _js.Engines.PersistentEngine;
        if (!_memory)
        {
            _staging = Path.Combine(_js.RestoresDir, Nuid.Next());
            DurableFiles.CreateDirectory(_staging);
        }
        var opened = _js.Engines.Registry.Open(engine, storeConfig, _staging is null ? null : Path.Combine(_staging, "store"));
        if (!opened.IsOk) throw new RestoreRefusedException(SnapshotErrors.StreamRestore(opened.Error ?? opened.Status.ToString()));
        _store = opened.Store!;
    }

    /// <summary>Makes the restored store the stream: file streams are closed, moved into place and reopened.</summary>
    private async Task<JsStream> AddAsync(StreamMeta meta, CancellationToken ct)
    {
        var store = _store!;
        Check(await store.FlushAsync(ct).ConfigureAwait(false), "flushing the restored messages");
        // nats-server RestoreStream: "See if this stream already exists" once the snapshot is read (a create or
        // another restore of the name may have finished meanwhile).
        if (!_js.ClaimRestore(_config.Name)) throw new RestoreRefusedException(SnapshotErrors.StreamNameExistRestoreFailed);
        _claimed = true;
        IStreamStore? memoryStore = null;
        if (_staging is not null)
        {
            DurableFiles.Replace(Path.Combine(_staging, JsStream.MetaFile), JsonSerializer.SerializeToUtf8Bytes(new StreamMeta { Config = _config, Created = meta.Created }, JsJsonContext.Default.StreamMeta));
            await store.DisposeAsync().ConfigureAwait(false);
            _store = null;
            var target = Path.Combine(_js.StreamsDir, _config.Name);
            // Left by an earlier restore or delete that did not finish (the name is reserved, so no stream uses it).
            if (Directory.Exists(target)) Directory.Delete(target, recursive: true);
            DurableFiles.CreateDirectory(_js.StreamsDir);
            Directory.Move(_staging, target);
            DurableFiles.SyncDirectory(_js.StreamsDir);
            DurableFiles.SyncDirectory(_js.RestoresDir);
            _staging = target; // removed again if the add below fails
        }
        else memoryStore = store;
        var err = _js.AddRestored(_config, meta.Created, memoryStore, out var stream);
        if (err is not null) throw new RestoreRefusedException(err);
        _claimed = false; // AddRestored ended the claim
        _staging = null;
        _store = null;
        foreach (var (cmeta, state) in _consumers)
        {
            var cerr = JsConsumer.Create(stream!, cmeta.Name, cmeta.Config, cmeta.Created, recovering: false, out var consumer, fromSnapshot: state);
            if (cerr is not null || consumer is null)
            {
                // nats-server stops the stream and fails the restore ("error restoring consumer [%q]: %v").
                _js.Logger.LogError("JetStream: restore of stream {Stream}: consumer {Consumer} not restored: {Error}", _config.Name, cmeta.Name, cerr?.Description);
                await _js.DeleteAsync(_config.Name).ConfigureAwait(false);
                throw new RestoreRefusedException(SnapshotErrors.StreamRestore($"error restoring consumer [\"{cmeta.Name}\"]: {cerr?.Description}"));
            }
            stream!.AddConsumer(consumer);
            consumer.Start();
        }
        return stream!;
    }

    /// <summary>Removes what a failed restore wrote.</summary>
    private void Discard()
    {
        if (_store is not null)
        {
            _store.Delete();
            _store.Dispose();
            _store = null;
        }
        if (_staging is not null && Directory.Exists(_staging))
        {
            try { Directory.Delete(_staging, recursive: true); }
            catch (IOException ex) { _js.Logger.LogWarning("JetStream: could not remove {Dir} of a failed restore: {Error}", _staging, ex.Message); }
        }
        _staging = null;
        if (_claimed) _js.ReleaseRestore(_config.Name);
        _claimed = false;
    }
}
