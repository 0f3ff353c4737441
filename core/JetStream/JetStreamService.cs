using System.Buffers;
using System.Text;
using System.Threading.Channels;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream;

/// <summary>
/// JetStream for one server: every account's JetStream (<see cref="JsAccount"/>), and the <c>$JS.API.&gt;</c>
/// subscription in each account. API requests arrive on the publisher's thread; they are copied, with the account
/// they were published in, into one bounded queue handled by two worker tasks (nats-server dispatches JS API
/// requests to its own queue, jsAPIRoutedReqs, for the same reason: store I/O and JSON must not run on socket
/// threads). When the queue is full the request is dropped and counted, as nats-server drops with "JetStream API
/// queue limit reached".
/// </summary>
/// <remarks>
/// <para>Which accounts have JetStream (nats-server enableJetStreamAccounts / configJetStream): with no account
/// configured besides <c>$G</c> and the system account (and no operator), <c>$G</c>, with unlimited limits; otherwise
/// each account whose config says <c>jetstream: enabled</c> / <c>jetstream { limits }</c> or whose JWT has JetStream
/// limits. The other accounts (<c>$G</c> too then) are answered 503 / 10039 "JetStream not enabled for account",
/// as nats-server's info-only service import; the system account gets no JetStream API.</para>
/// <para>Lock order: the service's account map lock, then an account's lock, then a stream's consumer-list lock,
/// then one consumer's lock. A consumer never calls into the stream or another consumer while holding its own lock
/// (interest-retention checks run after).</para>
/// </remarks>
public sealed partial class JetStreamService : IAsyncDisposable
{
    public const int ApiQueueLimit = 10_000;
    internal const string GlobalAccount = "$G";
    /// <summary>How often every stream's stored bytes are re-read into its account's usage (removals inside stores).</summary>
    private static readonly TimeSpan UsageSyncPeriod = TimeSpan.FromSeconds(1);

    private readonly Channel<ApiRequest> _api;
    private readonly Task[] _workers;
    private readonly CancellationTokenSource _stop = new();
    private readonly Accounts.AccountRegistry _registry;
    private readonly Lock _accountsLock = new();
    private readonly Dictionary<string, JsAccount> _accounts = new(StringComparer.Ordinal);
    private readonly Dictionary<Accounts.Account, Subscription> _apiSubs = [];
    /// <summary>The enabled accounts as an array for allocation-free sums (server usage on ingest); replaced under the lock.</summary>
    private volatile JsAccount[] _snapshot = [];
    private Timer? _usageTimer;
    private bool _globalOnly;
    private long _apiTotal, _apiErrors, _apiDropped;

    internal JetStreamService(Accounts.AccountRegistry registry, ServerOptions options, StorageEngines engines, ILogger logger, string serverName)
    {
        _registry = registry;
        Options = options;
        Engines = engines;
        Logger = logger;
        ServerName = serverName;
        StoreDir = Path.Combine(string.IsNullOrEmpty(options.StoreDir) ? Path.Combine(Path.GetTempPath(), "nats") : options.StoreDir, "jetstream");
        _api = Channel.CreateBounded<ApiRequest>(new BoundedChannelOptions(ApiQueueLimit)
        {
            FullMode = BoundedChannelFullMode.DropWrite,
            SingleReader = false,
            SingleWriter = false,
        });
        _workers = new Task[2];
    }

    internal ServerOptions Options { get; }
    internal StorageEngines Engines { get; }
    internal ILogger Logger { get; }
    internal string ServerName { get; }
    /// <summary>&lt;store_dir&gt;/jetstream, as nats-server lays it out.</summary>
    public string StoreDir { get; }
    internal string? Domain => Options.JetStreamDomain;
    /// <summary>Atomic and fast-ingest batches in flight on this server (ADR-50 server-wide limits).</summary>
    internal Batching.BatchCounters BatchCounters { get; } = new();

    public long ApiTotal => Interlocked.Read(ref _apiTotal);
    public long ApiErrors => Interlocked.Read(ref _apiErrors);
    public long ApiDropped => Interlocked.Read(ref _apiDropped);

    /// <summary>The JetStream of the account named <paramref name="account"/>, when it is enabled and started.</summary>
    internal JsAccount? Find(string account)
    {
        lock (_accountsLock) return _accounts.GetValueOrDefault(account);
    }

    /// <summary>The global account's JetStream (null when accounts are configured and $G has none).</summary>
    internal JsAccount? Account => Find(GlobalAccount);

    /// <summary>Every account whose JetStream runs, by name.</summary>
    internal JsAccount[] EnabledAccounts() => [.. _snapshot.OrderBy(a => a.Name, StringComparer.Ordinal)];

    /// <summary>
    /// An account's JetStream limits, or null when JetStream is not enabled for it: <c>$G</c> has unlimited ones
    /// when it is the only account (besides the system account) outside operator mode; the system account never.
    /// </summary>
    internal JetStreamAccountLimits? LimitsOf(Accounts.Account account)
    {
        if (ReferenceEquals(account, _registry.System)) return null;
        if (ReferenceEquals(account, _registry.Global) && _globalOnly) return JetStreamAccountLimits.Dynamic;
        return account.JetStreamLimits;
    }

    /// <summary>Current totals over every account's streams (reads each store's state; for monitoring).</summary>
    public JetStreamUsage Usage()
    {
        ulong mem = 0, file = 0, msgs = 0;
        int streams = 0, consumers = 0;
        foreach (var a in _snapshot)
        {
            var u = AccountUsage(a);
            mem += u.Memory;
            file += u.Storage;
            msgs += u.Messages;
            streams += u.Streams;
            consumers += u.Consumers;
        }
        return new JetStreamUsage(mem, file, streams, consumers, msgs, mem + file, (ulong)ApiTotal, (ulong)ApiErrors);
    }

    /// <summary>One account's totals (reads each store's state), with the account's API counts.</summary>
    internal static JetStreamUsage AccountUsage(JsAccount account)
    {
        ulong mem = 0, file = 0, msgs = 0;
        int consumers = 0;
        var streams = account.Streams();
        foreach (var s in streams)
        {
            var st = s.Store.GetState();
            if (s.Config.Storage == StorageType.Memory) mem += st.Bytes;
            else file += st.Bytes;
            msgs += st.Messages;
            consumers += s.ConsumerCount;
        }
        return new JetStreamUsage(mem, file, streams.Length, consumers, msgs, mem + file, (ulong)account.ApiTotal, (ulong)account.ApiErrors);
    }

    /// <summary>Bytes stored by every account's memory or file streams as last synced (nats-server js.memUsed / storeUsed).</summary>
    internal long Used(bool memory)
    {
        long total = 0;
        foreach (var a in _snapshot) total += memory ? a.MemoryUsed : a.StoreUsed;
        return total;
    }

    /// <summary>Bytes reserved by max_bytes over all accounts, without <paramref name="stream"/> of <paramref name="account"/> (js.memReserved / storeReserved).</summary>
    internal long Reserved(bool memory, JsAccount account, string stream)
    {
        long total = 0;
        foreach (var a in _snapshot)
        {
            var (mem, store) = a.Reserved(ReferenceEquals(a, account) ? stream : null);
            total += memory ? mem : store;
        }
        return total;
    }

    /// <summary>Bytes reserved by max_bytes of every account's memory and file streams (/jsz reserved_memory / reserved_storage).</summary>
    internal (long Memory, long Store) ReservedTotals()
    {
        long mem = 0, store = 0;
        foreach (var a in _snapshot)
        {
            var r = a.Reserved();
            mem += r.Memory;
            store += r.Store;
        }
        return (mem, store);
    }

    /// <summary>
    /// Streams whose store turned read-only after a write or fsync error (<see cref="IStreamStore.Failure"/>),
    /// with the reason; empty when all is well. Shown in /jsz (streams of accounts other than $G as "account > stream").
    /// </summary>
    public IReadOnlyList<(string Stream, string Failure)> StoreFailures()
    {
        List<(string, string)>? failed = null;
        foreach (var a in _snapshot)
        {
            foreach (var s in a.Streams())
            {
                if (s.Store.Failure is { } f) (failed ??= []).Add((a.Name == GlobalAccount ? s.Name : $"{a.Name} > {s.Name}", f));
            }
        }
        return failed ?? [];
    }

    /// <summary>
    /// Recovers the persisted streams and consumers of every account with JetStream, subscribes the API in every
    /// account (accounts created later, by a reload or a JWT, when they appear), then starts answering.
    /// </summary>
    public void Start()
    {
        // server.go Start: nats-server stops with this when the system account asks for JetStream.
        if (_registry.System?.JetStreamLimits is not null) throw new InvalidOperationException("Not allowed to enable JetStream on the system account");
        Directory.CreateDirectory(StoreDir);
        _globalOnly = !Options.Operator.Enabled
            && _registry.All.All(a => ReferenceEquals(a, _registry.Global) || ReferenceEquals(a, _registry.System));
        for (int i = 0; i < _workers.Length; i++) _workers[i] = Task.Run(ApiWorkerAsync);
        // Added first: an account that appears while the existing ones are attached is not missed (Attach is idempotent).
        _registry.Added += Attach;
        foreach (var account in _registry.All) Attach(account);
        _usageTimer = new Timer(_ => SyncUsage(), null, UsageSyncPeriod, UsageSyncPeriod);
    }

    /// <summary>Subscribes <c>$JS.API.&gt;</c> in an account and starts its JetStream when it has one (runs under the registry's lock for new accounts).</summary>
    private void Attach(Accounts.Account account)
    {
        if (ReferenceEquals(account, _registry.System)) return;
        lock (_accountsLock)
        {
            if (_apiSubs.ContainsKey(account)) return;
            _apiSubs[account] = account.Router.SubscribeInternal("$JS.API.>", null, (Subscription _, in InternalMessage msg) => OnApiRequest(account, msg));
        }
        Enabled(account);
    }

    /// <summary>
    /// The account's JetStream, started (its streams recovered from disk) the first time it is asked for; null when
    /// JetStream is not enabled for the account. An account whose JWT gained JetStream limits starts here on its
    /// first API request.
    /// </summary>
    internal JsAccount? Enabled(Accounts.Account account)
    {
        if (LimitsOf(account) is null) return null;
        lock (_accountsLock)
        {
            if (_accounts.TryGetValue(account.Name, out var existing)) return existing;
            var jsa = new JsAccount(this, account, Path.Combine(StoreDir, account.Name));
            jsa.Recover();
            _accounts[account.Name] = jsa;
            _snapshot = [.. _accounts.Values];
            return jsa;
        }
    }

    private void SyncUsage()
    {
        foreach (var a in _snapshot)
        {
            try
            {
                a.SyncAllUsage();
            }
            catch (ObjectDisposedException)
            {
                // a stream closed under the timer (server stopping or a delete racing): its usage no longer counts
            }
        }
    }

    /// <summary>Runs on the publisher's thread: copy and queue, never block (a plain DIRECT.GET may be answered at once: JetStreamService.DirectInline.cs).</summary>
    private void OnApiRequest(Accounts.Account account, in InternalMessage msg)
    {
        if (TryDirectGetInline(account, msg)) return;
        var req = ApiRequest.Copy(msg.Subject, msg.Reply, msg.HeaderSize, msg.Payload, msg.Origin);
        req.Account = account;
        if (!_api.Writer.TryWrite(req))
        {
            req.Return();
            long n = Interlocked.Increment(ref _apiDropped);
            if (n == 1 || n % 1000 == 0) Logger.LogWarning("JetStream API queue limit reached, dropping {Count} requests so far", n);
        }
    }

    private async Task ApiWorkerAsync()
    {
        var reader = _api.Reader;
        try
        {
            while (await reader.WaitToReadAsync(_stop.Token).ConfigureAwait(false))
            {
                while (reader.TryRead(out var req))
                {
                    try
                    {
                        req.Js = Enabled(req.Account!);
                        await DispatchAsync(req).ConfigureAwait(false);
                    }
                    catch (Exception ex)
                    {
                        Logger.LogError(ex, "JetStream API request on {Subject} failed", req.SubjectString);
                        Reply(req, JsJson.Error("io.nats.jetstream.api.v1.error_response", JsErrors.StreamGeneral(ex.Message)), error: true);
                    }
                    finally
                    {
                        req.Return();
                    }
                }
            }
        }
        catch (OperationCanceledException)
        {
            // shutting down
        }
    }

    /// <summary>
    /// Sends the API audit advisory and the API response to the request's reply subject (if any), in the
    /// requester's account; nats-server sendAPIResponse audits every answered request, with or without a reply.
    /// The audit goes first: with two API workers, a client's next request may be handled before this worker gets
    /// to an audit sent after the reply, and audits would then arrive out of the order of the requests. Requests of
    /// an account without JetStream are not audited (it has no JetStream advisories).
    /// </summary>
    /// <remarks>
    /// This is also where requests are counted (nats-server trackAPI / trackAPIErr in sendAPIResponse /
    /// sendAPIErrResponse): only JSON answers made here count, in the account and the server totals, and only for an
    /// account with JetStream. Unknown subjects, MSG.NEXT, DIRECT.GET, CONSUMER.RESET and a successful STREAM.MSG.GET
    /// (answered with <see cref="ReplyUncounted"/>, as nats-server's sendInternalAccountMsg) are not counted. An
    /// account info reply is counted after it was written, so it does not count itself (nats.js's "jetstream - jsm"
    /// test expects api.total 1 after its second call).
    /// </remarks>
    internal void Reply(ApiRequest req, byte[] json, bool error = false)
    {
        // Counted before the answer leaves (as trackAPI): a client's next request, possibly on the other worker,
        // must see this one in $JS.API.INFO.
        if (req.Js is { } js)
        {
            Interlocked.Increment(ref _apiTotal);
            if (error) Interlocked.Increment(ref _apiErrors);
            js.CountApi(!error);
        }
        req.Js?.Advisories.Audit(req, json);
        if (req.Reply.Length > 0) req.Account!.Router.PublishInternal(req.Reply, default, default, json);
    }

    /// <summary>An answer outside the API layer: neither audited nor counted (nats-server sendInternalAccountMsg).</summary>
    internal static void ReplyUncounted(ApiRequest req, byte[] json)
    {
        if (req.Reply.Length > 0) req.Account!.Router.PublishInternal(req.Reply, default, default, json);
    }

    /// <summary>
    /// The no-responders status a request to a subject nobody serves gets (MSG.NEXT / DIRECT.GET of a missing
    /// consumer or stream: nats-server serves them from per-consumer / per-stream subscriptions, never through the
    /// $JS.API import), only when the requester asked for it in CONNECT (no_responders with headers; client.go
    /// processMsgResults), and with the request's subject in Nats-Subject as 2.12+ sends it. Others get nothing.
    /// </summary>
    internal static void NoRespondersTo(ApiRequest req)
    {
        if (req.Reply.Length == 0 || req.Origin is not Accounts.IRequester { WantsNoResponders: true }) return;
        Publish(req, req.Reply, NoRespondersStatus(req.Subject), default);
    }

    /// <summary>Publishes a status or reply into the requester's account (MSG.NEXT / DIRECT.GET answers).</summary>
    internal static void Publish(ApiRequest req, ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload) =>
        req.Account!.Router.PublishInternal(subject, default, headers, payload);

    public async ValueTask DisposeAsync()
    {
        _registry.Added -= Attach;
        if (_usageTimer is not null) await _usageTimer.DisposeAsync().ConfigureAwait(false);
        KeyValuePair<Accounts.Account, Subscription>[] subs;
        JsAccount[] accounts;
        lock (_accountsLock)
        {
            subs = [.. _apiSubs];
            accounts = [.. _accounts.Values];
        }
        foreach (var (account, sub) in subs) account.Router.Unsubscribe(sub);
        _api.Writer.TryComplete();
        await _stop.CancelAsync().ConfigureAwait(false);
        foreach (var w in _workers)
        {
            if (w is null) continue;
            try { await w.ConfigureAwait(false); } catch (OperationCanceledException) { }
        }
        foreach (var a in accounts) await a.DisposeAsync().ConfigureAwait(false);
        _stop.Dispose();
    }
}

/// <summary>A copied API request (subject, reply, headers, body) in one pooled buffer.</summary>
internal sealed class ApiRequest
{
    private byte[] _buffer = [];
    private int _subjectLength, _replyLength, _headerLength, _bodyLength;

    public ReadOnlySpan<byte> Subject => _buffer.AsSpan(0, _subjectLength);
    public ReadOnlySpan<byte> Reply => _buffer.AsSpan(_subjectLength, _replyLength);
    public ReadOnlySpan<byte> Headers => _buffer.AsSpan(_subjectLength + _replyLength, _headerLength);
    public ReadOnlySpan<byte> Body => _buffer.AsSpan(_subjectLength + _replyLength + _headerLength, _bodyLength);
    public string SubjectString => Encoding.UTF8.GetString(Subject);
    public string ReplyString => Encoding.UTF8.GetString(Reply);
    /// <summary>The requesting client (for the API audit advisory); null when the server published the request.</summary>
    public IPublisher? Origin { get; private set; }
    /// <summary>The account the request was published in (answers go back into it).</summary>
    public Accounts.Account? Account { get; set; }
    /// <summary>That account's JetStream; null when JetStream is not enabled for it.</summary>
    public JsAccount? Js { get; set; }
    /// <summary>The account's JetStream, for handlers (the dispatcher answers requests of accounts without one first).</summary>
    public JsAccount JetStream => Js ?? throw new InvalidOperationException("JetStream is not enabled for the request's account");

    public static ApiRequest Copy(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload, IPublisher? origin = null)
    {
        int hdr = headerSize > 0 ? headerSize : 0;
        int total = subject.Length + reply.Length + (int)payload.Length;
        var r = new ApiRequest
        {
            _buffer = ArrayPool<byte>.Shared.Rent(Math.Max(1, total)),
            _subjectLength = subject.Length,
            _replyLength = reply.Length,
            _headerLength = hdr,
            _bodyLength = (int)payload.Length - hdr,
            Origin = origin,
        };
        subject.CopyTo(r._buffer);
        reply.CopyTo(r._buffer.AsSpan(subject.Length));
        payload.CopyTo(r._buffer.AsSpan(subject.Length + reply.Length));
        return r;
    }

    public void Return()
    {
        var b = _buffer;
        _buffer = [];
        Origin = null;
        Account = null;
        Js = null;
        if (b.Length > 0) ArrayPool<byte>.Shared.Return(b);
    }
}

/// <summary>Totals for /jsz and /varz (nats-server JetStreamStats plus stream/consumer/message counts).</summary>
public readonly record struct JetStreamUsage(ulong Memory, ulong Storage, int Streams, int Consumers, ulong Messages, ulong Bytes, ulong ApiTotal, ulong ApiErrors);
