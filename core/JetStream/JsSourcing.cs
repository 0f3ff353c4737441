using System.Buffers;
using System.Text;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>
/// The mirror or sources of one stream (nats-server stream.go setupMirrorConsumer / setupSourceConsumers and
/// processInboundMirrorMsg / processInboundSourceMsg). Origins in the same account are read straight from their
/// stores by one task per sourcing stream (no internal consumer and no flow-control round trips: both ends are in
/// this process); copies go through the target's ingest channel, so they are ordered with its own publishes and
/// stored by its worker. A mirror keeps the origin's sequences and timestamps; a source stores new sequences and
/// adds the Nats-Stream-Source header ("&lt;origin&gt; &lt;seq&gt; &lt;filter&gt; &lt;destination&gt; &lt;subject&gt;"),
/// by which a restarted stream finds where to resume. The task is woken by the origin after each stored batch and
/// polls once a second (origins created or recreated later are picked up then). An external origin (another
/// account, through an imported <c>$JS.API</c>) is read the same way once the import resolves it (OriginAccount).
/// </summary>
internal sealed class JsSourcing : IAsyncDisposable
{
    public const string SourceHeader = "Nats-Stream-Source";
    private const int BatchPerReader = 256;

    private readonly JsStream _target;
    private readonly Reader[] _readers;
    private readonly SemaphoreSlim _wake = new(0, 1);
    private readonly CancellationTokenSource _stop = new();
    private readonly Action _kick;
    private readonly StoredMessage _msg = new(1024);
    private readonly ArrayBufferWriter<byte> _headers = new(512);
    private Task? _loop;
    private int _kicked;

    private sealed class Reader
    {
        public required StreamSourceConfig Config { get; init; }
        public required bool IsMirror { get; init; }
        public required string IndexName { get; init; }
        /// <summary>Filters in order, each with its transform (null: subject unchanged). Empty: everything.</summary>
        public required (byte[] Filter, JsSubjectTransform? Transform)[] Filters { get; init; }
        public ulong Next;
        public bool StartResolved;
        /// <summary>When the origin was last heard from (0: never; nats-server's sourceInfo answers active -1).</summary>
        public long LastActiveTicks;
        /// <summary>The origin was looked up at least once.</summary>
        public bool Tried;
        public ulong Lag;
        public ApiError? Error;
        public JsStream? Origin;
    }

    public JsSourcing(JsStream target, StreamConfig cfg)
    {
        _target = target;
        _kick = Kick;
        var readers = new List<Reader>();
        if (cfg.Mirror is { } m) readers.Add(CreateReader(m, isMirror: true));
        foreach (var s in cfg.Sources ?? []) readers.Add(CreateReader(s, isMirror: false));
        _readers = [.. readers];
    }

    private Reader CreateReader(StreamSourceConfig s, bool isMirror)
    {
        (byte[], JsSubjectTransform?)[] filters;
        if (s.SubjectTransforms is { Length: > 0 } trs)
            filters = [.. trs.Select(t => (Encoding.UTF8.GetBytes(string.IsNullOrEmpty(t.Src) ? ">" : t.Src), JsSubjectTransform.Create(t.Src, t.Dest, out _)))];
        else if (!string.IsNullOrEmpty(s.FilterSubject) && s.FilterSubject != ">")
            filters = [(Encoding.UTF8.GetBytes(s.FilterSubject), null)];
        else
            filters = [];
        return new Reader { Config = s, IsMirror = isMirror, IndexName = JsStream.SourceIndexName(s), Filters = filters };
    }

    public void Start()
    {
        foreach (var r in _readers)
        {
            // Where to resume: a mirror after its last sequence, a source after the last origin sequence it holds.
            if (r.IsMirror)
            {
                ulong last = _target.Store.GetState().LastSequence;
                if (last > 0) { r.Next = last + 1; r.StartResolved = true; }
            }
            else
            {
                ulong last = _target.LastSourcedSequence(r.IndexName);
                if (last > 0) { r.Next = last + 1; r.StartResolved = true; }
            }
        }
        _loop = Task.Run(LoopAsync);
    }

    private void Kick()
    {
        if (Interlocked.Exchange(ref _kicked, 1) != 0) return;
        try { _wake.Release(); }
        catch (SemaphoreFullException) { }
        catch (ObjectDisposedException) { }
    }

    private async Task LoopAsync()
    {
        var token = _stop.Token;
        while (!token.IsCancellationRequested)
        {
            Volatile.Write(ref _kicked, 0);
            bool more = false;
            foreach (var r in _readers)
            {
                try
                {
                    if (await PumpAsync(r, token).ConfigureAwait(false)) more = true;
                }
                catch (OperationCanceledException)
                {
                    return;
                }
                catch (Exception ex) when (r.Origin?.IsDeleted == true || _target.IsDeleted)
                {
                    // The origin (or this stream) went away while being read: re-resolved on the next pass.
                    _target.Js.Logger.LogDebug("JetStream stream {Stream}: origin {Origin} went away: {Error}", _target.Name, r.Config.Name, ex.Message);
                }
                catch (Exception ex)
                {
                    r.Error = JsErrors.StreamGeneral(ex.Message);
                    _target.Js.Logger.LogError(ex, "JetStream stream {Stream}: sourcing from {Origin} failed", _target.Name, r.Config.Name);
                }
            }
            if (more) continue;
            try
            {
                await _wake.WaitAsync(1000, token).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }
        }
    }

    /// <summary>Copies up to a batch from one origin; true when it stopped with more to copy.</summary>
    private async Task<bool> PumpAsync(Reader r, CancellationToken token)
    {
        var origin = r.Origin;
        if (origin is null || origin.IsDeleted)
        {
            origin?.RemoveWatcher(_kick);
            r.Origin = null;
            if (OriginAccount(r.Config) is not { } account) return false;
            if (!account.TryGet(r.Config.Name, out var found) || found == _target)
            {
                // What nats-server's mirror / source consumer create gets back from the origin's account. Not on the
                // first pass: there that answer comes after the stream create's (a round trip later), so a create
                // response never shows it; from the next pass (within a second) on, STREAM.INFO does.
                if (r.Tried) r.Error = JsErrors.StreamNotFound;
                r.Tried = true;
                return false;
            }
            origin = found;
            r.Origin = origin;
            r.Error = null;
            // nats-server marks the source active once its consumer is set up (stream.go processMirrorMsgs).
            r.LastActiveTicks = Environment.TickCount64;
            origin.AddWatcher(_kick);
        }
        var store = origin.Store;
        if (!r.StartResolved)
        {
            r.Next = StartSequence(r.Config, store);
            r.StartResolved = true;
        }
        int copied = 0;
        while (copied < BatchPerReader)
        {
            token.ThrowIfCancellationRequested();
            if (!LoadNextMatching(store, r, out var transform)) break;
            ulong seq = _msg.Sequence;
            byte[] subject = transform is null ? _msg.Subject.ToArray() : Encoding.UTF8.GetBytes(transform.Match(_msg.SubjectString) ?? _msg.SubjectString);
            if (r.IsMirror)
            {
                await _target.QueueCopyAsync(subject, _msg.Headers, _msg.Payload, seq, _msg.Timestamp, token).ConfigureAwait(false);
            }
            else
            {
                SourceHeaders(r, _msg, seq);
                await _target.QueueCopyAsync(subject, _headers.WrittenSpan, _msg.Payload, 0, 0, token).ConfigureAwait(false);
            }
            r.Next = seq + 1;
            r.LastActiveTicks = Environment.TickCount64;
            copied++;
        }
        ulong originLast = store.GetState().LastSequence;
        r.Lag = originLast >= r.Next ? originLast - r.Next + 1 : 0;
        if (copied > 0) r.LastActiveTicks = Environment.TickCount64;
        return copied >= BatchPerReader;
    }

    /// <summary>
    /// The JetStream account the origin lives in: this stream's own, or, for an external origin, the account whose
    /// <c>$JS.API</c> this account imports under the API prefix (nats-server reaches it by sending its consumer
    /// requests to <c>&lt;api&gt;.CONSUMER.CREATE...</c>; in one process the import itself names the account, and
    /// without such an import there is nothing to read, as there would be no responder). Null when unresolved:
    /// retried on the next pass, so an import added by a reload is picked up.
    /// </summary>
    private JsAccount? OriginAccount(StreamSourceConfig c)
    {
        if (c.External is not { Api.Length: > 0 } ext) return _target.Account;
        string api = ext.Api;
        if (api == "$JS.API" || (_target.Account.Domain is { Length: > 0 } domain && api == "$JS." + domain + ".API")) return _target.Account;
        string probe = api + ".STREAM.INFO." + c.Name;
        var exporter = _target.Account.Account.ResolveServiceImport(probe, out var remote);
        if (exporter is null || remote != "$JS.API.STREAM.INFO." + c.Name) return null;
        return _target.Account.Service.Find(exporter.Name);
    }

    /// <summary>opt_start_seq, else the first message at or after opt_start_time, else the origin's beginning.</summary>
    private ulong StartSequence(StreamSourceConfig c, IStreamStore store)
    {
        if (c.OptStartSeq is > 0) return c.OptStartSeq.Value;
        if (c.OptStartTime is { } t)
        {
            long at = GoTime.ToUnixNanos(t);
            var st = store.GetState();
            for (ulong s = st.FirstSequence; s <= st.LastSequence && s > 0;)
            {
                if (store.LoadNext(default, s, _msg) != StoreStatus.Ok) break;
                if (_msg.Timestamp >= at) return _msg.Sequence;
                s = _msg.Sequence + 1;
            }
            return st.LastSequence + 1;
        }
        return 1;
    }

    /// <summary>Loads into _msg the next origin message at or after r.Next matching one of the reader's filters.</summary>
    private bool LoadNextMatching(IStreamStore store, Reader r, out JsSubjectTransform? transform)
    {
        transform = null;
        if (r.Filters.Length == 0) return store.LoadNext(default, r.Next, _msg) == StoreStatus.Ok;
        if (r.Filters.Length == 1)
        {
            transform = r.Filters[0].Transform;
            return store.LoadNext(r.Filters[0].Filter, r.Next, _msg) == StoreStatus.Ok;
        }
        ulong best = ulong.MaxValue;
        foreach (var (f, tr) in r.Filters)
        {
            if (store.LoadNext(f, r.Next, _msg) == StoreStatus.Ok && _msg.Sequence < best)
            {
                best = _msg.Sequence;
                transform = tr;
            }
        }
        return best != ulong.MaxValue && store.Load(best, _msg) == StoreStatus.Ok;
    }

    /// <summary>
    /// The origin's headers without an earlier Nats-Stream-Source and Nats-Expected-* (they were checked at the
    /// origin), plus this hop's Nats-Stream-Source (nats-server processInboundSourceMsg).
    /// </summary>
    private void SourceHeaders(Reader r, StoredMessage m, ulong seq)
    {
        _headers.ResetWrittenCount();
        var parts = r.IndexName.Split(' ');
        string value = $"{parts[0]} {seq} {parts[1]} {parts[2]} {m.SubjectString}";
        var kept = StripHeaders(m.Headers);
        NatsHeaders.AppendHeaders(kept, [(SourceHeader, value)], _headers);
    }

    private static byte[] StripHeaders(ReadOnlySpan<byte> block)
    {
        if (block.IsEmpty) return [];
        var text = Encoding.UTF8.GetString(block);
        var lines = text.Split("\r\n");
        var sb = new StringBuilder(text.Length);
        for (int i = 0; i < lines.Length; i++)
        {
            var line = lines[i];
            if (i > 0 && (line.StartsWith(SourceHeader + ":", StringComparison.Ordinal) || line.StartsWith("Nats-Expected-", StringComparison.Ordinal))) continue;
            if (i == lines.Length - 1 && line.Length == 0) break;
            sb.Append(line).Append("\r\n");
        }
        return Encoding.UTF8.GetBytes(sb.ToString());
    }

    public void ReportStoreError(StoreStatus status, string? detail)
    {
        var err = JsErrors.StreamStoreFailed(detail ?? status.ToString());
        foreach (var r in _readers) if (r.IsMirror) r.Error = err;
    }

    /// <summary>The mirror / sources entries of STREAM.INFO (nats-server StreamSourceInfo).</summary>
    public void Describe(StreamInfo info)
    {
        long now = Environment.TickCount64;
        foreach (var r in _readers)
        {
            var si = new StreamSourceInfo
            {
                Name = r.Config.Name,
                External = r.Config.External,
                Lag = r.Lag,
                Active = ActiveNanos(r, now),
                Error = r.Error,
                FilterSubject = string.IsNullOrEmpty(r.Config.FilterSubject) ? null : r.Config.FilterSubject,
                SubjectTransforms = r.Config.SubjectTransforms is { Length: > 0 } t ? t : null,
            };
            if (r.IsMirror) info.Mirror = si;
            else (info.Sources ??= []).Add(si);
        }
    }

    /// <summary>
    /// StreamSourceInfo.active: -1 before the origin was ever reached; otherwise the time since it was last heard
    /// from. nats-server's source consumers send an idle heartbeat every second (stream.go sourceHealthHB) that
    /// counts as activity, so while the origin is there the figure stays under a second, as it does there.
    /// </summary>
    private static long ActiveNanos(Reader r, long now)
    {
        if (r.LastActiveTicks == 0) return -1;
        long ms = now - r.LastActiveTicks;
        if (r.Origin is { IsDeleted: false }) ms %= 1000;
        return ms * 1_000_000;
    }

    public async ValueTask DisposeAsync()
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        if (_loop is not null)
        {
            try { await _loop.ConfigureAwait(false); }
            catch (OperationCanceledException) { }
        }
        foreach (var r in _readers) r.Origin?.RemoveWatcher(_kick);
        _stop.Dispose();
    }
}
