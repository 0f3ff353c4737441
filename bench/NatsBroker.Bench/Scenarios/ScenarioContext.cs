using System.Collections.Concurrent;
using System.Diagnostics;
using System.Net;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios;

/// <summary>
/// What a scenario run gets: the server address, its count, CPU sampling marks, worker threads, and a deadline.
/// All connections made through <see cref="Connect"/> are closed when the run ends or times out, which unblocks
/// any worker stuck in a read: a broken server produces an error, not a hang.
/// </summary>
internal sealed class ScenarioContext : IDisposable
{
    private readonly ConcurrentBag<IDisposable> _tracked = [];
    private readonly List<Thread> _threads = [];
    private readonly List<int> _alsoMeasured = [];
    private int _serverPid;
    private volatile Exception? _failure;
    private volatile bool _stopping;
    private long _startTs;
    private double _startSelfCpu;
    private double _startServerCpu;
    private long _cpuStartTs;
    private Timer? _watchdog;

    public ScenarioContext(IPEndPoint endpoint, int serverPid, long count, TimeSpan timeout, string runId, string repoRoot, TimeSpan requestTimeout, string side = "ours")
    {
        Endpoint = endpoint;
        Side = side;
        _serverPid = serverPid;
        Count = count;
        Timeout = timeout;
        RunId = runId;
        RepoRoot = repoRoot;
        RequestTimeout = requestTimeout;
        Deadline = Stopwatch.GetTimestamp() + (long)(timeout.TotalSeconds * Stopwatch.Frequency);
        // The waits (ctx.Wait/Join, flow gate) time out at the deadline with a message saying what they waited for;
        // the watchdog, a little later, closes every connection so that a worker blocked in a read returns too.
        _watchdog = new Timer(_ => Abort(new TimeoutException($"scenario exceeded its {timeout.TotalSeconds:0} s limit")), null, timeout + TimeSpan.FromSeconds(2), System.Threading.Timeout.InfiniteTimeSpan);
    }

    public IPEndPoint Endpoint { get; private set; }

    /// <summary>Which server this run is on: "ours" or "go" (the harness's labels).</summary>
    public string Side { get; }

    /// <summary>From now on clients connect to <paramref name="relay"/> (a gateway or TCP relay in front of the server).</summary>
    public void RouteThrough(IPEndPoint relay) => Endpoint = relay;

    /// <summary>Whether <see cref="Connect"/> speaks NATS over a WebSocket (<see cref="ConnectOverWebSocket"/>).</summary>
    public bool OverWebSocket { get; private set; }

    /// <summary>Raw connections of this run go to <paramref name="webSocketPort"/> and upgrade to WebSocket first.</summary>
    public void ConnectOverWebSocket(IPEndPoint webSocketPort)
    {
        Endpoint = webSocketPort;
        OverWebSocket = true;
    }

    /// <summary>The CA file when <see cref="Connect"/> speaks NATS over TLS (<see cref="ConnectOverTls"/>), else null.</summary>
    public string? TlsCaFile { get; private set; }

    /// <summary>
    /// Raw connections of this run upgrade to TLS after the server's plaintext INFO (the server's <c>tls {}</c> on its
    /// client port), checking the server's certificate against <paramref name="caFile"/>.
    /// </summary>
    public void ConnectOverTls(string caFile) => TlsCaFile = caFile;

    public string Url => $"nats://{Endpoint.Address}:{Endpoint.Port}";

    /// <summary>Where MQTT clients of this run connect (the server's <c>mqtt {}</c> port, or another broker's), once set.</summary>
    public IPEndPoint? MqttEndpoint { get; private set; }

    /// <summary>MQTT connections of this run go to <paramref name="endpoint"/>.</summary>
    public void UseMqtt(IPEndPoint endpoint) => MqttEndpoint = endpoint;

    /// <summary>
    /// CPU and peak RSS of this run are read from <paramref name="pid"/> (and its children) instead of the server the
    /// harness started: a row whose "go" side is another broker (Mosquitto). Call before <see cref="MarkStart"/>.
    /// </summary>
    public void MeasureProcess(int pid) => _serverPid = pid;

    public int ServerPid => _serverPid;

    /// <summary>How the harness started this run's server (a cluster row starts more nodes the same way).</summary>
    public ServerSpec? Spec { get; init; }

    /// <summary>The harness's scratch directory for store directories of servers a scenario starts itself.</summary>
    public string? TmpRoot { get; init; }

    /// <summary>
    /// CPU and peak RSS of this run also count <paramref name="pid"/> (and its children): the other nodes of a
    /// cluster row, so that the server columns are the whole cluster's cost. Call before <see cref="MarkStart"/>.
    /// </summary>
    public void AlsoMeasure(int pid)
    {
        lock (_alsoMeasured)
        {
            _alsoMeasured.Add(pid);
        }
    }

    private int[] MeasuredPids()
    {
        lock (_alsoMeasured)
        {
            return [_serverPid, .. _alsoMeasured];
        }
    }

    /// <summary>CPU seconds of every measured process tree (the server, or all nodes of a cluster row).</summary>
    public double ServerCpuSeconds() => MeasuredPids().Sum(ProcStats.TreeCpuSeconds);

    /// <summary>Peak RSS summed over every measured process tree, or -1 when one of them is unreadable.</summary>
    public long ServerPeakRssBytes() => SumRss(ProcStats.TreePeakRssBytes);

    /// <summary>Current RSS (VmRSS) summed over every measured process tree, or -1 when one of them is unreadable.</summary>
    public long ServerRssBytes() => SumRss(ProcStats.TreeRssBytes);

    private long SumRss(Func<int, long> read)
    {
        long total = 0;
        foreach (int pid in MeasuredPids())
        {
            long one = read(pid);
            if (one < 0)
            {
                return -1;
            }

            total += one;
        }

        return total;
    }

    /// <summary>
    /// Where <see cref="Connect"/> sends a connection, by its name (a cluster row puts publishers on node 1 and
    /// subscribers on others); null or a null answer: <see cref="Endpoint"/>.
    /// </summary>
    public Func<string, IPEndPoint?>? Placement { get; set; }

    /// <summary>
    /// Called by a scenario once a connection's subscriptions are in place (SUB sent and PONG seen), before any
    /// traffic for them: a cluster row waits there until the interest has crossed the routes, or the first
    /// messages would be published on a node that does not know the subscriber yet (and dropped, as NATS does).
    /// </summary>
    public Action<string, RawConnection>? OnSubscribed { get; set; }

    /// <summary>See <see cref="OnSubscribed"/>; a no-op on a single server.</summary>
    public void Subscribed(string name, RawConnection c) => OnSubscribed?.Invoke(name, c);

    public long Count { get; }

    public TimeSpan Timeout { get; }

    /// <summary>Bound for a single JetStream API request or request/reply round trip during setup.</summary>
    public TimeSpan RequestTimeout { get; }

    public long Deadline { get; }

    /// <summary>Unique token for subjects/stream names of this run.</summary>
    public string RunId { get; }

    public string RepoRoot { get; }

    public bool Stopping => _stopping;

    public Exception? Failure => _failure;

    public ScenarioResult Result { get; } = new();

    /// <summary>Credentials per connection name (a scenario wrapper's accounts), used when Connect is given no user.</summary>
    private Func<string, Func<string?, string>?>? _credentials;

    /// <summary>From now on <see cref="Connect"/> asks <paramref name="credentials"/> for each connection's CONNECT fields.</summary>
    public void UseCredentials(Func<string, Func<string?, string>?> credentials) => _credentials = credentials;

    public RawConnection Connect(string name, bool headers = false, int readBuffer = 256 * 1024, string? user = null, string? pass = null)
    {
        ThrowIfFailed();
        var auth = user is null ? _credentials?.Invoke(name) : null;
        var c = RawConnection.Connect(Placement?.Invoke(name) ?? Endpoint, name, TimeSpan.FromSeconds(5), headers, readBuffer, user, pass, OverWebSocket, auth, TlsCaFile);
        _tracked.Add(c);
        return c;
    }

    /// <summary>A plain connection to <paramref name="endpoint"/> (another node of a cluster row), closed with the run.</summary>
    public RawConnection ConnectTo(IPEndPoint endpoint, string name)
    {
        ThrowIfFailed();
        var c = RawConnection.Connect(endpoint, name, TimeSpan.FromSeconds(5));
        _tracked.Add(c);
        return c;
    }

    public void Track(IDisposable d) => _tracked.Add(d);

    /// <summary>Starts a background worker; an exception in it fails the run (unless the run is stopping).</summary>
    public Thread StartWorker(string name, Action body, int stackSize = 0)
    {
        var t = new Thread(
            () =>
            {
                try
                {
                    body();
                }
                catch (Exception ex) when (!_stopping)
                {
                    Abort(ex is NotSupportedByServerException ? ex : new InvalidOperationException($"{name}: {ex.Message}", ex));
                }
                catch (Exception) when (_stopping)
                {
                    // connections are closed at the end of the run; readers exit through here
                }
            },
            stackSize) { IsBackground = true, Name = name };
        lock (_threads)
        {
            _threads.Add(t);
        }

        t.Start();
        return t;
    }

    /// <summary>Records a failure and closes every connection so blocked workers return.</summary>
    public void Abort(Exception ex)
    {
        if (_failure is null)
        {
            _failure = ex;
        }

        CloseAll();
    }

    public void ThrowIfFailed()
    {
        var f = _failure;
        if (f is not null)
        {
            throw new ScenarioFailedException(f.Message, f);
        }
    }

    /// <summary>Waits for an event, bounded by the run deadline; fails fast if a worker failed.</summary>
    public void Wait(WaitHandle h, string what)
    {
        while (!h.WaitOne(50))
        {
            ThrowIfFailed();
            if (Stopwatch.GetTimestamp() > Deadline)
            {
                throw new TimeoutException("timed out waiting for " + what);
            }
        }

        ThrowIfFailed();
    }

    public void Wait(ManualResetEventSlim h, string what) => Wait(h.WaitHandle, what);

    public void Join(Thread t, string what)
    {
        while (!t.Join(50))
        {
            ThrowIfFailed();
            if (Stopwatch.GetTimestamp() > Deadline)
            {
                throw new TimeoutException("timed out waiting for " + what);
            }
        }

        ThrowIfFailed();
    }

    /// <summary>Start of the timed window: records time and CPU of this process and of the server.</summary>
    public void MarkStart()
    {
        ThrowIfFailed();
        _startSelfCpu = ProcStats.SelfCpuSeconds();
        _startServerCpu = ServerCpuSeconds();
        _cpuStartTs = Stopwatch.GetTimestamp();
        _startTs = _cpuStartTs;
    }

    public long StartTimestamp => _startTs;

    /// <summary>End of the timed window; <paramref name="endTimestamp"/> is when the last message was seen (default: now).</summary>
    public void MarkEnd(long endTimestamp = 0, double? generatorCpuSeconds = null)
    {
        long now = Stopwatch.GetTimestamp();
        double self = ProcStats.SelfCpuSeconds();
        double srv = ServerCpuSeconds();
        if (endTimestamp == 0)
        {
            endTimestamp = now;
        }

        Result.ElapsedSeconds = (endTimestamp - _startTs) / (double)Stopwatch.Frequency;
        Result.CpuWindowSeconds = (now - _cpuStartTs) / (double)Stopwatch.Frequency;
        Result.GeneratorCpuSeconds = generatorCpuSeconds ?? (self - _startSelfCpu);
        Result.ServerCpuSeconds = srv - _startServerCpu;
    }

    /// <summary>Marks for an external generator (node): server CPU only.</summary>
    public void MarkServerStart()
    {
        _startServerCpu = ServerCpuSeconds();
        _cpuStartTs = Stopwatch.GetTimestamp();
        _startTs = _cpuStartTs;
    }

    public void MarkServerEnd()
    {
        long now = Stopwatch.GetTimestamp();
        Result.ServerCpuSeconds = ServerCpuSeconds() - _startServerCpu;
        Result.CpuWindowSeconds = (now - _cpuStartTs) / (double)Stopwatch.Frequency;
    }

    private void CloseAll()
    {
        _stopping = _stopping || _failure is not null;
        foreach (var d in _tracked)
        {
            try
            {
                d.Dispose();
            }
            catch (Exception)
            {
                // best effort
            }
        }
    }

    public void Dispose()
    {
        _stopping = true;
        _watchdog?.Dispose();
        _watchdog = null;
        CloseAll();
        Thread[] ts;
        lock (_threads)
        {
            ts = [.. _threads];
        }

        // One budget for all workers: a worker parked on a start signal that never came (the run failed before
        // it) is a background thread and must not hold the harness for seconds each.
        var budget = Stopwatch.StartNew();
        foreach (var t in ts)
        {
            int left = 3000 - (int)budget.ElapsedMilliseconds;
            if (left <= 0 || !t.Join(left))
            {
                break;
            }
        }
    }
}

internal sealed class ScenarioFailedException : Exception
{
    public ScenarioFailedException(string message, Exception inner)
        : base(message, inner)
    {
    }

    public ScenarioFailedException()
    {
    }

    public ScenarioFailedException(string message)
        : base(message)
    {
    }
}
