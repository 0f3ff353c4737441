using System.Buffers;
using System.Text;
using System.Threading.Channels;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.Contracts;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream;

/// <summary>
/// JetStream for one server: the accounts' streams and consumers, and the <c>$JS.API.&gt;</c> subscription.
/// API requests arrive on the publisher's thread; they are copied into a bounded queue and handled by one worker
/// task (nats-server dispatches JS API requests to its own queue, jsAPIRoutedReqs, for the same reason: store I/O
/// and JSON must not run on socket threads). When the queue is full the request is dropped and counted, as
/// nats-server drops with "JetStream API queue limit reached".
/// </summary>
/// <remarks>
/// Lock order: an account's lock, then a stream's consumer-list lock, then one consumer's lock. A consumer never
/// calls into the stream or another consumer while holding its own lock (interest-retention checks run after).
/// </remarks>
public sealed partial class JetStreamService : IAsyncDisposable
{
    public const int ApiQueueLimit = 10_000;
    internal const string GlobalAccount = "$G";

    private readonly Channel<ApiRequest> _api;
    private readonly Task[] _workers;
    private readonly CancellationTokenSource _stop = new();
    private Subscription? _apiSub;
    private long _apiTotal, _apiErrors, _apiDropped;

    internal JetStreamService(Router router, ServerOptions options, StorageEngines engines, ILogger logger, string serverName)
    {
        Router = router;
        Options = options;
        Engines = engines;
        Logger = logger;
        ServerName = serverName;
        StoreDir = Path.Combine(string.IsNullOrEmpty(options.StoreDir) ? Path.Combine(Path.GetTempPath(), "nats") : options.StoreDir, "jetstream");
        Account = new JsAccount(this, GlobalAccount, Path.Combine(StoreDir, GlobalAccount));
        _api = Channel.CreateBounded<ApiRequest>(new BoundedChannelOptions(ApiQueueLimit)
        {
            FullMode = BoundedChannelFullMode.DropWrite,
            SingleReader = false,
            SingleWriter = false,
        });
        _workers = new Task[2];
        Advisories = new JsAdvisories(this);
    }

    internal Router Router { get; }
    internal ServerOptions Options { get; }
    internal StorageEngines Engines { get; }
    internal ILogger Logger { get; }
    internal string ServerName { get; }
    /// <summary>&lt;store_dir&gt;/jetstream, as nats-server lays it out.</summary>
    public string StoreDir { get; }
    /// <summary>The global account's JetStream (the only account until accounts exist).</summary>
    internal JsAccount Account { get; }
    internal string? Domain => Options.JetStreamDomain;
    /// <summary>Atomic and fast-ingest batches in flight on this server (ADR-50 server-wide limits).</summary>
    internal Batching.BatchCounters BatchCounters { get; } = new();
    /// <summary>$JS.EVENT.ADVISORY.&gt; and $JS.EVENT.METRIC.&gt; (sent only when someone listens).</summary>
    internal JsAdvisories Advisories { get; }

    public long ApiTotal => Interlocked.Read(ref _apiTotal);
    public long ApiErrors => Interlocked.Read(ref _apiErrors);
    public long ApiDropped => Interlocked.Read(ref _apiDropped);

    /// <summary>Current totals over the account's streams (reads each store's state; for monitoring).</summary>
    public JetStreamUsage Usage()
    {
        ulong mem = 0, file = 0, msgs = 0;
        int consumers = 0;
        var streams = Account.Streams();
        foreach (var s in streams)
        {
            var st = s.Store.GetState();
            if (s.Config.Storage == "memory") mem += st.Bytes;
            else file += st.Bytes;
            msgs += st.Messages;
            consumers += s.ConsumerCount;
        }
        return new JetStreamUsage(mem, file, streams.Length, consumers, msgs, mem + file, (ulong)ApiTotal, (ulong)ApiErrors);
    }

    /// <summary>
    /// Streams whose store turned read-only after a write or fsync error (<see cref="IStreamStore.Failure"/>),
    /// with the reason; empty when all is well. Shown in /jsz.
    /// </summary>
    public IReadOnlyList<(string Stream, string Failure)> StoreFailures()
    {
        List<(string, string)>? failed = null;
        foreach (var s in Account.Streams())
        {
            if (s.Store.Failure is { } f) (failed ??= []).Add((s.Name, f));
        }
        return failed ?? [];
    }

    /// <summary>Recovers the persisted streams and consumers, then starts answering the API.</summary>
    public void Start()
    {
        Directory.CreateDirectory(StoreDir);
        Account.Recover();
        for (int i = 0; i < _workers.Length; i++) _workers[i] = Task.Run(ApiWorkerAsync);
        _apiSub = Router.SubscribeInternal("$JS.API.>", null, OnApiRequest);
    }

    /// <summary>Runs on the publisher's thread: copy and queue, never block.</summary>
    private void OnApiRequest(Subscription sub, in InternalMessage msg)
    {
        var req = ApiRequest.Copy(msg.Subject, msg.Reply, msg.HeaderSize, msg.Payload, msg.Origin);
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
                        // Counted once answered, as nats-server: an account info reply does not count itself
                        // (nats.js's "jetstream - jsm" test expects api.total 1 after its second call).
                        bool ok = await DispatchAsync(req).ConfigureAwait(false);
                        Interlocked.Increment(ref _apiTotal);
                        if (!ok) Interlocked.Increment(ref _apiErrors);
                    }
                    catch (Exception ex)
                    {
                        Interlocked.Increment(ref _apiTotal);
                        Interlocked.Increment(ref _apiErrors);
                        Logger.LogError(ex, "JetStream API request on {Subject} failed", req.SubjectString);
                        Reply(req, JsJson.Error("io.nats.jetstream.api.v1.error_response", JsErrors.StreamGeneral(ex.Message)));
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
    /// Sends the API audit advisory and the API response to the request's reply subject (if any); nats-server
    /// sendAPIResponse audits every answered request, with or without a reply. The audit goes first: with two
    /// API workers, a client's next request may be handled before this worker gets to an audit sent after the
    /// reply, and audits would then arrive out of the order of the requests.
    /// </summary>
    internal void Reply(ApiRequest req, byte[] json)
    {
        Advisories.Audit(req, json);
        if (req.Reply.Length > 0) Router.PublishInternal(req.Reply, default, default, json);
    }

    internal void Publish(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload) =>
        Router.PublishInternal(subject, reply, headers, payload);

    internal void Publish(string subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload) =>
        Router.PublishInternal(Encoding.UTF8.GetBytes(subject), default, headers, payload);

    /// <summary>True when any subscription matches <paramref name="subject"/> (push delivery and pull reply checks).</summary>
    internal bool HasInterest(byte[] subject) => !Router.SubList.Match(subject).IsEmpty;

    public async ValueTask DisposeAsync()
    {
        if (_apiSub is not null) Router.Unsubscribe(_apiSub);
        _api.Writer.TryComplete();
        await _stop.CancelAsync().ConfigureAwait(false);
        foreach (var w in _workers)
        {
            if (w is null) continue;
            try { await w.ConfigureAwait(false); } catch (OperationCanceledException) { }
        }
        await Account.DisposeAsync().ConfigureAwait(false);
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
        if (b.Length > 0) ArrayPool<byte>.Shared.Return(b);
    }
}

/// <summary>Totals for /jsz and /varz (nats-server JetStreamStats plus stream/consumer/message counts).</summary>
public readonly record struct JetStreamUsage(ulong Memory, ulong Storage, int Streams, int Consumers, ulong Messages, ulong Bytes, ulong ApiTotal, ulong ApiErrors);
