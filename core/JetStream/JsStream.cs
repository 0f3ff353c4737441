using System.Buffers;
using System.Runtime.CompilerServices;
using System.Text;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream;

/// <summary>
/// One stream: its config, its store, an internal subscription per subject (ingest), the ack subscription of its
/// consumers, and its consumers. Published messages are copied on the publisher's thread into a bounded queue and
/// stored by the stream's own worker task, which answers each with a PubAck and then wakes the consumers (so store
/// I/O never runs on socket threads). Split: JsStream.Ingest.cs (store path), JsStream.Api.cs (info, purge, get).
/// </summary>
/// <remarks>
/// On disk: &lt;streams dir&gt;/&lt;name&gt;/meta.json (our format: <see cref="StreamMeta"/>), the engine's files under
/// store/, and consumers/&lt;consumer&gt;.json for durable consumers (<see cref="ConsumerMeta"/>).
/// </remarks>
internal sealed partial class JsStream : IAsyncDisposable
{
    public const string MetaFile = "meta.json";
    /// <summary>Inbound messages queued per stream before publishers get "too many requests".</summary>
    public const int InboundLimit = 65_536;

    private readonly JsAccount _account;
    private readonly Dictionary<string, JsConsumer> _consumers = new(StringComparer.Ordinal);
    private readonly Lock _consumersLock = new();
    private readonly InboundQueue<Inbound> _inbound;
    private readonly List<Subscription> _subs = [];
    private Subscription? _ackSub;
    private Task? _worker;
    private volatile JsConsumer[] _consumerSnapshot = [];
    private volatile StreamConfig _config;
    private int _deleted;
    private long _accountedBytes;

    private JsStream(JsAccount account, StreamConfig config, DateTime created, IStreamStore store, string? dir)
    {
        _account = account;
        _config = config;
        Name = config.Name;
        Created = created;
        Store = store;
        Dir = dir;
        NameBytes = Encoding.UTF8.GetBytes(Name);
        _inlineIngest = config.Storage == StorageType.Memory;
        _replyBatch = _ackBatch;
        // Full: TryWrite fails (the publisher gets 429; nothing is dropped silently), and mirror/source copies wait
        // for room (WaitToWriteAsync).
        _inbound = new InboundQueue<Inbound>(InboundLimit);
        // nats-server 2.14 formats PubAcks without spaces (stream.go: {"stream":"S",["domain":"D",]"seq":N[,"duplicate": true]});
        // 2.9.10 wrote a space after each comma.
        string quotedName = JsonSerializer.Serialize(Name, JsJsonContextStrings.Default.String);
        string domain = account.Domain is { Length: > 0 } d ? $"\"domain\":{JsonSerializer.Serialize(d, JsJsonContextStrings.Default.String)}," : "";
        _pubAckPrefix = Encoding.UTF8.GetBytes($"{{\"stream\":{quotedName},{domain}\"seq\":");
    }

    public string Name { get; }
    public byte[] NameBytes { get; }
    public DateTime Created { get; }
    public IStreamStore Store { get; }
    /// <summary>The stream's directory (file storage), or null (memory).</summary>
    public string? Dir { get; }
    public StreamConfig Config => _config;
    /// <summary>The JetStream of the stream's account: its router, advisories, limits, and the server's settings.</summary>
    public JsAccount Js => _account;
    public JsAccount Account => _account;

    /// <summary>Sets the bytes this stream last added to its account's usage; returns the previous figure (JsAccount.Limits.cs).</summary>
    internal long ExchangeAccountedBytes(long bytes) => Interlocked.Exchange(ref _accountedBytes, bytes);
    public bool IsDeleted => Volatile.Read(ref _deleted) != 0;

    /// <summary>Opens (or creates) the store for a validated config and writes meta.json for file streams.</summary>
    public static ApiError? Open(JsAccount account, StreamConfig config, DateTime created, bool recovering, out JsStream? stream)
    {
        stream = null;
        var js = account;
        bool memory = config.Storage == StorageType.Memory;
        string engine = memory ? "memory" : js.Engines.PersistentEngine;
        string? dir = memory ? null : Path.Combine(account.StreamsDir, config.Name);
        var storeConfig = StoreConfigFor(js, config);
        // Durable in its parent (and any missing ancestor): a stream directory lost to a power cut loses every
        // acknowledged message in it, whatever the engine's own durability.
        if (dir is not null) DurableFiles.CreateDirectory(dir);
        var opened = js.Engines.Registry.Open(engine, storeConfig, dir is null ? null : Path.Combine(dir, "store"));
        if (!opened.IsOk) return JsErrors.StreamCreate(opened.Error ?? opened.Status.ToString());
        var store = opened.Store!;
        if (!recovering && config.FirstSeq is > 1 && store.GetState().LastSequence == 0) store.SkipTo(config.FirstSeq.Value - 1);
        stream = new JsStream(account, config, created, store, dir);
        if (dir is not null && !recovering) stream.WriteMeta();
        return null;
    }

    internal static StreamStoreConfig StoreConfigFor(JsAccount js, StreamConfig c) => new()
    {
        StreamName = c.Name,
        Limits = LimitsFor(c),
        Sync = SyncFor(js.Options, c),
        SyncInterval = js.Options.JetStreamSyncInterval ?? TimeSpan.FromMinutes(2),
        EngineOptions = js.Options.StorageEngineOptions,
    };

    /// <summary>
    /// A stream's persist_mode async wins over sync_interval: always, as in nats-server (stream.go: async persist
    /// turns SyncAlways off); a stream that leaves persist_mode unset follows <c>jetstream { persist_mode }</c>.
    /// </summary>
    internal static SyncPolicy SyncFor(NatsBroker.Configuration.ServerOptions o, StreamConfig c)
    {
        // An atomic-batch stream never takes the server-wide async default (nats-server refuses the combination).
        bool async = c.PersistMode == "async" || (c.PersistMode is null && o.JetStreamPersistAsync && c.Storage == StorageType.File && c.AllowAtomic != true);
        if (async) return SyncPolicy.AsyncPersist;
        return o.JetStreamSyncAlways ? SyncPolicy.Always : SyncPolicy.Periodic;
    }

    internal static StreamLimits LimitsFor(StreamConfig c) => new()
    {
        MaxMessages = c.MaxMsgs,
        MaxBytes = c.MaxBytes,
        // TTL streams age out in JetStream (JsStream.Ttl.cs: "never" messages and subject delete markers).
        MaxAge = c.MaxAge > 0 && !AgesInJetStream(c) ? TimeSpan.FromTicks(c.MaxAge / 100) : TimeSpan.Zero,
        MaxMessagesPerSubject = c.MaxMsgsPerSubject,
        MaxMessageSize = c.MaxMsgSize,
        Discard = c.Discard == StreamDiscardPolicy.New ? DiscardPolicy.New : DiscardPolicy.Old,
        DiscardNewPerSubject = c.DiscardNewPerSubject == true,
    };

    private void WriteMeta()
    {
        if (Dir is null) return;
        var meta = new StreamMeta { Config = _config, Created = Created };
        DurableFiles.Replace(Path.Combine(Dir, MetaFile), JsonSerializer.SerializeToUtf8Bytes(meta, JsJsonContext.Default.StreamMeta));
    }

    /// <summary>Subscribes the stream's subjects and its consumers' ack subject, and starts the ingest worker.</summary>
    public void Start()
    {
        RecoverSchedules();
        _worker = Task.Run(IngestLoopAsync);
        Subscribe(_config.Subjects);
        StartSourcing();
        ScheduleAgeSweep();
        _ackSub = Js.Router.SubscribeInternal($"$JS.ACK.{Name}.>", null, OnAck);
    }

    private void Subscribe(string[]? subjects)
    {
        foreach (var s in subjects ?? []) _subs.Add(Js.Router.SubscribeInternal(s, null, OnPublished));
    }

    private void Unsubscribe()
    {
        foreach (var s in _subs) Js.Router.Unsubscribe(s);
        _subs.Clear();
    }

    /// <summary>Applies an update (limits, subjects, flags); storage, name and retention were checked unchanged.</summary>
    public ApiError? Update(StreamConfig next)
    {
        var status = Store.UpdateLimits(LimitsFor(next));
        if (status != StoreStatus.Ok) return JsErrors.StreamUpdate(Store.LastError ?? status.ToString());
        bool subjectsChanged = !(next.Subjects ?? []).SequenceEqual(_config.Subjects ?? []);
        var old = _config;
        _config = next;
        if (next.AllowAtomic != true) ClearAtomicBatches(); // nats-server deletes in-progress batches when disabled
        if (next.AllowBatched != true) ClearFastBatches();
        RestartSourcingIfChanged(old, next);
        ScheduleAgeSweep();
        EnableSchedules();
        if (subjectsChanged)
        {
            Unsubscribe();
            Subscribe(next.Subjects);
        }
        WriteMeta();
        return null;
    }

    // ---- consumers ----

    public bool TryGetConsumer(string name, out JsConsumer consumer)
    {
        lock (_consumersLock) return _consumers.TryGetValue(name, out consumer!);
    }

    public JsConsumer[] Consumers => _consumerSnapshot;

    public int ConsumerCount => _consumerSnapshot.Length;

    internal void AddConsumer(JsConsumer c)
    {
        lock (_consumersLock)
        {
            _consumers[c.Name] = c;
            _consumerSnapshot = [.. _consumers.Values.OrderBy(x => x.Name, StringComparer.Ordinal)];
        }
    }

    internal bool RemoveConsumer(JsConsumer c)
    {
        lock (_consumersLock)
        {
            if (!_consumers.TryGetValue(c.Name, out var cur) || cur != c) return false;
            _consumers.Remove(c.Name);
            _consumerSnapshot = [.. _consumers.Values.OrderBy(x => x.Name, StringComparer.Ordinal)];
        }
        return true;
    }

    /// <summary>Holds the consumer-list lock while a create checks and adds (names and work-queue uniqueness).</summary>
    internal Lock ConsumersLock => _consumersLock;

    internal IEnumerable<JsConsumer> ConsumersUnlocked => _consumers.Values;

    internal void AddConsumerLocked(JsConsumer c)
    {
        _consumers[c.Name] = c;
        _consumerSnapshot = [.. _consumers.Values.OrderBy(x => x.Name, StringComparer.Ordinal)];
    }

    public string ConsumersDir => Path.Combine(Dir ?? "", "consumers");

    public void RecoverConsumers()
    {
        if (Dir is null || !Directory.Exists(ConsumersDir)) return;
        foreach (var file in Directory.GetFiles(ConsumersDir, "*.json"))
        {
            try
            {
                var meta = JsonSerializer.Deserialize(File.ReadAllBytes(file), JsJsonContext.Default.ConsumerMeta);
                if (meta is null) continue;
                var err = JsConsumer.Create(this, meta.Name, meta.Config, meta.Created, recovering: true, out var c);
                if (err is not null || c is null)
                {
                    Js.Logger.LogError("JetStream: cannot recover consumer {Consumer} of {Stream}: {Error}", meta.Name, Name, err?.Description);
                    continue;
                }
                AddConsumer(c);
                c.Start();
            }
            catch (Exception ex) when (ex is JsonException or IOException)
            {
                Js.Logger.LogError("JetStream: cannot read consumer metadata {Path}: {Error}", file, ex.Message);
            }
        }
    }

    /// <summary>Wakes every consumer after stored messages (once per ingest batch).</summary>
    private void KickConsumers()
    {
        foreach (var c in _consumerSnapshot) c.Kick();
        NotifyWatchers();
    }

    // ---- acks ($JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>) ----

    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private void OnAck(Subscription sub, in InternalMessage msg)
    {
        // Parse on the publisher's thread (cheap, no allocation past the consumer lookup) and queue to the consumer.
        var subject = msg.Subject["$JS.ACK."u8.Length..];
        if (!subject.StartsWith(NameBytes) || subject.Length <= NameBytes.Length || subject[NameBytes.Length] != (byte)'.') return;
        var rest = subject[(NameBytes.Length + 1)..];
        int dot = rest.IndexOf((byte)'.');
        // No consumer's ack subscription matches (nats-server: $JS.ACK.<stream>.<consumer>.*.*.*.*.*, none for ack
        // policy none): a request gets the no-responders status (JsConsumer.NoAckSubscriber).
        if (dot <= 0 || !AckTokens.TryParse(rest[(dot + 1)..], out var tokens))
        {
            JsConsumer.NoAckSubscriber(Js, msg.Subject, msg.Reply);
            return;
        }
        var consumerName = rest[..dot];
        var consumers = _consumerSnapshot;
        foreach (var c in consumers)
        {
            if (c.NameBytes.AsSpan().SequenceEqual(consumerName))
            {
                var body = msg.Body;
                if (!c.EnqueueAck(tokens, body.IsSingleSegment ? body.FirstSpan : body.ToArray(), msg.Reply)) JsConsumer.NoAckSubscriber(Js, msg.Subject, msg.Reply);
                return;
            }
        }
        JsConsumer.NoAckSubscriber(Js, msg.Subject, msg.Reply);
    }

    // ---- lifecycle ----

    /// <summary>Stops and removes everything (STREAM.DELETE).</summary>
    public async Task DeleteAsync()
    {
        if (Interlocked.Exchange(ref _deleted, 1) != 0) return;
        await StopAsync(deleteConsumers: true).ConfigureAwait(false);
        Store.Delete();
        if (Dir is not null)
        {
            try { Directory.Delete(Dir, recursive: true); }
            catch (IOException ex) { Js.Logger.LogWarning("JetStream: could not remove {Dir}: {Error}", Dir, ex.Message); }
        }
    }

    private async Task StopAsync(bool deleteConsumers)
    {
        await StopSourcingAsync().ConfigureAwait(false);
        StopAgeSweep();
        StopSchedules();
        Unsubscribe();
        if (_ackSub is not null) Js.Router.Unsubscribe(_ackSub);
        _inbound.Complete();
        if (_worker is not null) await _worker.ConfigureAwait(false);
        StopInlineIngest();
        _atomicBatches?.Dispose();
        _fastBatches?.Dispose();
        foreach (var c in _consumerSnapshot) await c.StopAsync(delete: deleteConsumers).ConfigureAwait(false);
    }

    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _deleted, 1) != 0) return;
        await StopAsync(deleteConsumers: false).ConfigureAwait(false);
        await Store.FlushAsync().ConfigureAwait(false);
        await Store.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// One queued inbound message in a pooled buffer: [subject][reply][headers][payload]. A mirrored copy carries
    /// its origin sequence and timestamp (<see cref="OriginSeq"/> &gt; 0). <see cref="Kind"/> marks the scheduler's
    /// tick (no buffer) and the messages it produces (stored without the schedule checks, as nats-server's sourced).
    /// </summary>
    private readonly struct Inbound(byte[] buffer, int subject, int reply, int headers, int payload, ulong originSeq = 0, long timestamp = 0, byte kind = 0)
    {
        public const byte KindTick = 1;
        public const byte KindScheduled = 2;
        /// <summary>A message copied from a source (nats-server processJetStreamMsg's <c>sourced</c>).</summary>
        public const byte KindSourced = 3;
        public static Inbound ScheduleTick => new([], 0, 0, 0, 0, kind: KindTick);

        public readonly byte[] Buffer = buffer;
        public readonly ulong OriginSeq = originSeq;
        public readonly long Timestamp = timestamp;
        public readonly byte Kind = kind;
        public ReadOnlySpan<byte> Subject => Buffer.AsSpan(0, subject);
        public ReadOnlySpan<byte> Reply => Buffer.AsSpan(subject, reply);
        public ReadOnlySpan<byte> Headers => Buffer.AsSpan(subject + reply, headers);
        public ReadOnlySpan<byte> Payload => Buffer.AsSpan(subject + reply + headers, payload);
        public void Return()
        {
            if (Kind != KindTick) InboundBuffers.Return(Buffer);
        }
    }
}

[System.Text.Json.Serialization.JsonSerializable(typeof(string))]
internal sealed partial class JsJsonContextStrings : System.Text.Json.Serialization.JsonSerializerContext;
