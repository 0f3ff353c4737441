using System.Diagnostics;
using System.Threading.Channels;
using NATS.Client.Core;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench.Scenarios.NatsNet;

/// <summary>
/// Core workloads through the official .NET client, NATS.Client.Core (NATS.Net): what a .NET library user sees.
/// <list type="bullet">
/// <item><c>pubsub</c>: <c>pubs</c> connections publish <c>count</c> messages in all to one subject; <c>subs</c>
/// connections each receive every one (none with subs = 0: publish only, timed until the publishers' PONG).</item>
/// <item><c>reqrep</c>: <c>clients</c> connections send requests one after the other (RequestAsync) to
/// <c>services</c> responders (a queue group when <c>queue</c>); latency per request.</item>
/// </list>
/// The generator's CPU is this bench process over the timed window, as for the raw generator.
/// </summary>
internal sealed class NatsNetScenario : IScenario
{
    private readonly string _kind;
    private readonly int _pubs;
    private readonly int _subs;
    private readonly int _clients;
    private readonly int _services;
    private readonly bool _queue;
    /// <summary>"plain", "tls" (BenchTls) or "ws" (BenchWebSocket).</summary>
    private readonly string _transport = "plain";

    private NatsNetScenario(string name, string title, string kind, int payload, long defaultCount, int pubs, int subs, int clients, int services, bool queue)
    {
        Name = name;
        Title = title;
        _kind = kind;
        PayloadBytes = payload;
        DefaultCount = defaultCount;
        _pubs = pubs;
        _subs = subs;
        _clients = clients;
        _services = services;
        _queue = queue;
        ReportsLatency = kind == "reqrep";
    }

    private NatsNetScenario(NatsNetScenario plain, string name, string title, string transport)
        : this(name, title, plain._kind, plain.PayloadBytes, plain.DefaultCount, plain._pubs, plain._subs, plain._clients, plain._services, plain._queue)
    {
        _transport = transport;
    }

    /// <summary>The same workload over TLS (<see cref="BenchTls"/>): nats-server in-process TLS vs ours through the tls-terminator.</summary>
    public NatsNetScenario OverTls(string name) => new(this, name, Title + ", TLS", "tls");

    /// <summary>The same workload over ws:// (<see cref="BenchWebSocket"/>): nats-server's websocket {} vs ours through the websocket gateway.</summary>
    public NatsNetScenario OverWebSocket(string name) => new(this, name, Title + ", WebSocket", "ws");

    /// <summary>TLS rows start both servers with the generated config.</summary>
    public IReadOnlyList<string> ServerArgs => _transport == "tls" ? ["-c", BenchTls.ConfigPath] : [];

    /// <summary>WebSocket rows get a new config (a new port) for every server start.</summary>
    public IReadOnlyList<string> ServerArgsFor(string side) => _transport == "ws" ? ["-c", BenchWebSocket.NextConfig()] : ServerArgs;

    public static NatsNetScenario PubSub(string name, string title, int payload, long defaultCount, int pubs, int subs) =>
        new(name, title, "pubsub", payload, defaultCount, pubs, subs, 0, 0, false);

    public static NatsNetScenario RequestReply(string name, string title, int payload, long defaultCount, int clients, int services, bool queue) =>
        new(name, title, "reqrep", payload, defaultCount, 0, 0, clients, services, queue);

    public string Name { get; }

    public string Title { get; }

    public string Generator => "nats.net";

    public int PayloadBytes { get; }

    public bool NeedsJetStream => false;

    public bool ReportsLatency { get; }

    public long DefaultCount { get; }

    // IScenario.Run is synchronous (the raw generator runs on its own threads); the client library is async, so this
    // is the one place that waits for it, on the harness thread, never on a thread-pool thread the client needs.
    public ScenarioResult Run(ScenarioContext ctx)
    {
        // Ours serves ws:// from a gateway the core starts as a child: the core's port answering does not mean it is up.
        if (_transport == "ws") Gateways.BenchGateways.WaitWebSocketReady(BenchWebSocket.Endpoint, TimeSpan.FromSeconds(15));
        try
        {
            return Task.Run(() => _kind == "pubsub" ? PubSubAsync(ctx) : RequestReplyAsync(ctx)).GetAwaiter().GetResult();
        }
        catch (OperationCanceledException e)
        {
            // Every wait is bounded by the run's time limit (a CancellationTokenSource of ctx.Timeout).
            throw new TimeoutException($"NATS.Net {_kind} run did not finish within its {ctx.Timeout.TotalSeconds:0} s limit", e);
        }
    }

    private NatsOpts Options(ScenarioContext ctx, string name) => new()
    {
        Url = _transport switch
        {
            "tls" => ctx.Url.Replace("nats://", "tls://", StringComparison.Ordinal),
            "ws" => BenchWebSocket.Url,
            _ => ctx.Url,
        },
        TlsOpts = _transport == "tls" ? new NatsTlsOpts { Mode = TlsMode.Require, CaFile = BenchTls.CaFile } : NatsTlsOpts.Default,
        Name = name,
        ConnectTimeout = TimeSpan.FromSeconds(5),
        RequestTimeout = ctx.RequestTimeout,
        CommandTimeout = TimeSpan.FromSeconds(10),
        MaxReconnectRetry = 0,
        // No client-side drops: a full subscription channel pushes back on the socket instead.
        SubPendingChannelCapacity = 64 * 1024,
        SubPendingChannelFullMode = BoundedChannelFullMode.Wait,
    };

    private async Task<List<NatsConnection>> ConnectAllAsync(ScenarioContext ctx, string role, int n)
    {
        var list = new List<NatsConnection>(n);
        for (var i = 0; i < n; i++)
        {
            var c = new NatsConnection(Options(ctx, $"{role}-{i}"));
            ctx.Track(new AsyncDisposer(c));
            await c.ConnectAsync();
            list.Add(c);
        }

        return list;
    }

    private async Task<ScenarioResult> PubSubAsync(ScenarioContext ctx)
    {
        string subject = "bench.nn." + ctx.RunId;
        long perPub = Math.Max(1, ctx.Count / _pubs);
        long total = perPub * _pubs;
        var payload = new byte[PayloadBytes];
        var subConns = await ConnectAllAsync(ctx, "sub", _subs);
        var pubConns = await ConnectAllAsync(ctx, "pub", _pubs);
        using var cts = new CancellationTokenSource(ctx.Timeout);

        var receivers = new List<Task<long>>();
        foreach (var c in subConns)
        {
            var sub = await c.SubscribeCoreAsync<byte[]>(subject, cancellationToken: cts.Token);
            await c.PingAsync(cts.Token);
            receivers.Add(ReceiveAsync(sub, total, cts.Token));
        }

        ctx.MarkStart();
        var publishers = pubConns.Select(c => Task.Run(async () =>
        {
            for (long i = 0; i < perPub; i++)
            {
                await c.PublishAsync(subject, payload, cancellationToken: cts.Token);
            }

            await c.PingAsync(cts.Token);
        })).ToList();
        await Task.WhenAll(publishers);
        var ends = await Task.WhenAll(receivers);
        ctx.MarkEnd(ends.Length > 0 ? ends.Max() : 0);

        var r = ctx.Result;
        r.Messages = total;
        r.Deliveries = total * _subs;
        return r;
    }

    /// <summary>Counts <paramref name="expected"/> messages; returns the timestamp of the last one.</summary>
    private static async Task<long> ReceiveAsync(INatsSub<byte[]> sub, long expected, CancellationToken ct)
    {
        long seen = 0;
        while (seen < expected && await sub.Msgs.WaitToReadAsync(ct))
        {
            while (seen < expected && sub.Msgs.TryRead(out _))
            {
                seen++;
            }
        }

        return Stopwatch.GetTimestamp();
    }

    private async Task<ScenarioResult> RequestReplyAsync(ScenarioContext ctx)
    {
        string subject = "bench.nnrr." + ctx.RunId;
        long perClient = Math.Max(1, ctx.Count / _clients);
        var payload = new byte[PayloadBytes];
        var services = await ConnectAllAsync(ctx, "service", _services);
        var clients = await ConnectAllAsync(ctx, "client", _clients);
        using var cts = new CancellationTokenSource(ctx.Timeout);

        var responders = new List<Task>();
        foreach (var c in services)
        {
            var sub = await c.SubscribeCoreAsync<byte[]>(subject, queueGroup: _queue ? "q" : null, cancellationToken: cts.Token);
            await c.PingAsync(cts.Token);
            responders.Add(Task.Run(async () =>
            {
                await foreach (var m in sub.Msgs.ReadAllAsync(cts.Token))
                {
                    await m.ReplyAsync(m.Data, cancellationToken: cts.Token);
                }
            }));
        }

        // One request per client first: the reply subscriptions exist before timing starts.
        await Task.WhenAll(clients.Select(c => c.RequestAsync<byte[], byte[]>(subject, payload, cancellationToken: cts.Token).AsTask()));

        var hists = clients.Select(_ => new Histogram()).ToArray();
        ctx.MarkStart();
        var ends = await Task.WhenAll(clients.Select((c, i) => Task.Run(async () =>
        {
            for (long k = 0; k < perClient; k++)
            {
                long t0 = Stopwatch.GetTimestamp();
                var reply = await c.RequestAsync<byte[], byte[]>(subject, payload, cancellationToken: cts.Token);
                hists[i].RecordTicks(Stopwatch.GetTimestamp() - t0);
                if (reply.Data is null || reply.Data.Length != payload.Length)
                {
                    throw new InvalidOperationException($"reply of {reply.Data?.Length ?? -1} bytes, expected {payload.Length}");
                }
            }

            return Stopwatch.GetTimestamp();
        })));
        ctx.MarkEnd(ends.Max());
        await cts.CancelAsync();
        await Task.WhenAll(responders.Select(t => t.ContinueWith(_ => { }, TaskScheduler.Default)));

        var all = new Histogram();
        foreach (var h in hists)
        {
            all.Add(h);
        }

        var r = ctx.Result;
        r.Messages = perClient * _clients;
        r.Deliveries = r.Messages;
        r.P50Us = all.PercentileMicros(50);
        r.P95Us = all.PercentileMicros(95);
        r.P99Us = all.PercentileMicros(99);
        return r;
    }

    /// <summary>Lets the run's context close a client connection when the run ends or times out.</summary>
    private sealed class AsyncDisposer(NatsConnection connection) : IDisposable
    {
        public void Dispose() => _ = connection.DisposeAsync().AsTask().ContinueWith(_ => { }, TaskScheduler.Default);
    }
}
