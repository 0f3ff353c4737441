using System.Globalization;
using System.Runtime.InteropServices;
using System.Threading.Channels;
using NatsBroker.Protocol;

namespace NatsBroker.Auth;

/// <summary>
/// Runs the authentications that need bcrypt on a few dedicated threads, never on the socket-completion threads
/// that serve every connection: there, four clients retrying a wrong password for a bcrypt user pushed another
/// client's latency from ~30 ms (nats-server) to ~600 ms at p99.
/// <list type="bullet">
/// <item>A fixed number of workers (default max(1, cores / 2)) hash at once, so hashing never takes every core.</item>
/// <item>The queue is bounded (default 256 requests). When it is full, <see cref="Submit"/> still returns at once
/// and the request waits asynchronously for room; the connection that made it has its read loop parked on the
/// result, holding no thread. A connection has at most one request, so those waiting are bounded by the
/// connections (and each is cut by auth_timeout). A flood of wrong passwords therefore waits behind itself:
/// it costs the attacker time, not other clients' latency.</item>
/// <item>Workers can run at a lower OS priority (Linux: nice +<see cref="Niceness"/> for the thread, set with
/// <see cref="NicenessVariable"/>). Off by default: measured on 2 cores with 4 clients flooding wrong passwords,
/// another client's request/reply p99 was the same at nice 0 and 10 (~0.1 ms; nats-server ~130-250 ms), because the
/// worker cap already leaves the other core free. Pinned to one core, nice 10 halved that p99 (~4-11 ms against
/// ~7-20 ms), but on a loaded host it starved the hashing so far that logins stopped completing (0-2 per 2 s), and
/// legitimate bcrypt users would then hit auth_timeout. Worth setting on single-core hosts that value connected
/// clients over new logins.</item>
/// <item>A request abandoned by its connection (auth timeout, close) is skipped without hashing.</item>
/// </list>
/// Threads start on first use: a server without bcrypt secrets pays nothing. (nats-server hashes in the client's
/// own read goroutine, server/client.go processConnect → auth.go comparePasswords, and Go's scheduler keeps the
/// other goroutines running; the queue gives the same isolation with a hard bound on cores.)
/// </summary>
public sealed partial class PasswordHashingQueue : IDisposable
{
    public const int DefaultCapacity = 256;
    /// <summary>Default nice increment of the hashing threads (0..19; 0 = same priority as the rest).</summary>
    public const int DefaultNiceness = 0;
    /// <summary>Environment variable that overrides <see cref="DefaultNiceness"/> (for measurements).</summary>
    public const string NicenessVariable = "NATSBROKER_AUTH_HASHING_NICE";

    private readonly Channel<PasswordHashingRequest> _queue;
    private readonly SemaphoreSlim _ready = new(0);
    private readonly Lock _startLock = new();
    private Thread[]? _threads;
    private volatile bool _disposed;
    private long _hashed;
    private long _skipped;
    private int _lowered;

    public PasswordHashingQueue(int workers, int capacity = DefaultCapacity, int niceness = DefaultNiceness)
    {
        ArgumentOutOfRangeException.ThrowIfLessThan(workers, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(capacity, 1);
        ArgumentOutOfRangeException.ThrowIfNegative(niceness);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(niceness, 19);
        Workers = workers;
        Capacity = capacity;
        Niceness = niceness;
        _queue = Channel.CreateBounded<PasswordHashingRequest>(new BoundedChannelOptions(capacity)
        {
            FullMode = BoundedChannelFullMode.Wait,
            SingleReader = false,
            SingleWriter = false,
        });
    }

    /// <summary>The server's queue: max(1, cores / 2) workers, niceness from <see cref="NicenessVariable"/> if set.</summary>
    public static PasswordHashingQueue CreateDefault()
    {
        int niceness = DefaultNiceness;
        if (int.TryParse(Environment.GetEnvironmentVariable(NicenessVariable), NumberStyles.None, CultureInfo.InvariantCulture, out int n))
            niceness = Math.Clamp(n, 0, 19);
        return new PasswordHashingQueue(Math.Max(1, Environment.ProcessorCount / 2), DefaultCapacity, niceness);
    }

    public int Workers { get; }
    public int Capacity { get; }
    public int Niceness { get; }
    /// <summary>Authentications run to completion by the workers.</summary>
    public long Hashed => Interlocked.Read(ref _hashed);
    /// <summary>Requests dropped unrun because their connection had abandoned them.</summary>
    public long Skipped => Interlocked.Read(ref _skipped);
    /// <summary>Worker threads whose OS priority was lowered (0 where the platform call is unavailable or failed).</summary>
    public int PriorityLowered => Volatile.Read(ref _lowered);

    /// <summary>
    /// Queues <c>auth.Authenticate(connect, ctx)</c>. Returns at once; the request's <see cref="PasswordHashingRequest.Result"/>
    /// completes (asynchronously, off the worker) with the decision, or null when abandoned or the queue was disposed.
    /// </summary>
    public PasswordHashingRequest Submit(IAuthenticator auth, ConnectOptions connect, ClientAuthContext ctx)
    {
        var request = new PasswordHashingRequest(auth, connect, ctx);
        if (_disposed)
        {
            request.Abandon();
            return request;
        }
        EnsureStarted();
        if (_queue.Writer.TryWrite(request)) _ready.Release();
        else _ = EnqueueWhenRoomAsync(request);
        return request;
    }

    private async Task EnqueueWhenRoomAsync(PasswordHashingRequest request)
    {
        try
        {
            await _queue.Writer.WriteAsync(request).ConfigureAwait(false);
            _ready.Release();
        }
        catch (ChannelClosedException)
        {
            request.Abandon();
        }
    }

    private void EnsureStarted()
    {
        if (Volatile.Read(ref _threads) is not null) return;
        lock (_startLock)
        {
            if (_threads is not null) return;
            var threads = new Thread[Workers];
            for (int i = 0; i < threads.Length; i++)
            {
                threads[i] = new Thread(Work)
                {
                    IsBackground = true,
                    Name = "auth-hashing",
                    // Honoured where the runtime maps it (Windows, macOS); Linux needs the per-thread nice below.
                    Priority = Niceness > 0 ? ThreadPriority.BelowNormal : ThreadPriority.Normal,
                };
                threads[i].Start();
            }
            Volatile.Write(ref _threads, threads);
        }
    }

    private void Work()
    {
        if (Niceness > 0 && LowerThreadPriority(Niceness)) Interlocked.Increment(ref _lowered);
        while (true)
        {
            _ready.Wait();
            if (!_queue.Reader.TryRead(out var request))
            {
                if (_disposed) return;
                continue;
            }
            if (!request.Run(ref _hashed)) Interlocked.Increment(ref _skipped);
        }
    }

    /// <summary>Linux: threads are tasks with their own nice value (setpriority(PRIO_PROCESS, tid), see setpriority(2) NOTES).</summary>
    private static bool LowerThreadPriority(int niceness)
    {
        if (!OperatingSystem.IsLinux()) return false;
        try
        {
            return setpriority(PrioProcess, gettid(), niceness) == 0;
        }
        catch (Exception ex) when (ex is DllNotFoundException or EntryPointNotFoundException)
        {
            return false;
        }
    }

    private const int PrioProcess = 0;

    [LibraryImport("libc", EntryPoint = "setpriority", SetLastError = true)]
    private static partial int setpriority(int which, int who, int prio);

    [LibraryImport("libc", EntryPoint = "gettid")]
    private static partial int gettid();

    /// <summary>Stops the workers; queued and waiting requests complete as abandoned (null).</summary>
    public void Dispose()
    {
        if (_disposed) return;
        _disposed = true;
        _queue.Writer.TryComplete();
        while (_queue.Reader.TryRead(out var request)) request.Abandon();
        _ready.Release(Workers);
    }
}

/// <summary>
/// One authentication decided off the connection's thread: queued for a hashing worker, or (<see cref="External"/>)
/// completed by someone else, such as an auth callout service's answer. The submitter awaits <see cref="Result"/>
/// and may <see cref="Abandon"/> it.
/// </summary>
public sealed class PasswordHashingRequest
{
    // Continuations run off the worker, so a hashing thread never runs protocol code.
    private readonly TaskCompletionSource<AuthResult?> _done = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly ConnectOptions _connect;
    private readonly ClientAuthContext _context;

    internal PasswordHashingRequest(IAuthenticator authenticator, ConnectOptions connect, ClientAuthContext context, bool boundsItsOwnWait = false)
    {
        Authenticator = authenticator;
        _connect = connect;
        _context = context;
        BoundsItsOwnWait = boundsItsOwnWait;
    }

    /// <summary>A request its creator completes (<see cref="Complete"/>) instead of a hashing worker.</summary>
    internal static PasswordHashingRequest External(IAuthenticator authenticator, ConnectOptions connect, ClientAuthContext context) =>
        new(authenticator, connect, context, boundsItsOwnWait: true);

    /// <summary>The rules the decision is made with (a reload replaces the server's authenticator).</summary>
    public IAuthenticator Authenticator { get; }

    /// <summary>
    /// The decision ends itself within auth_timeout (an auth callout) and ends as a refusal, so the connection's own
    /// auth timer must not cut it: nats-server stops that timer at CONNECT (client.go processConnect) and a callout
    /// that gets no answer is an <c>Authorization Violation</c>, not an <c>Authentication Timeout</c>.
    /// </summary>
    public bool BoundsItsOwnWait { get; }

    /// <summary>Completes an <see cref="External"/> request; ignored when it was abandoned or already decided.</summary>
    internal void Complete(AuthResult result) => _done.TrySetResult(result);

    /// <summary>Hands a fault to the awaiting connection, which logs it and closes.</summary>
    internal void Fail(Exception ex) => _done.TrySetException(ex);

    /// <summary>The decision; null when abandoned. Faults if the authenticator threw.</summary>
    public Task<AuthResult?> Result => _done.Task;

    /// <summary>The submitter no longer wants the decision (its connection closed): skip it, complete with null.</summary>
    public void Abandon() => _done.TrySetResult(null);

    /// <summary>
    /// Runs on a worker: the check, then the request's completion; false when it had been abandoned and nothing was
    /// computed. <paramref name="ran"/> is counted before the verdict is handed over, so whoever sees the verdict sees
    /// the count (a test read 0 once: the worker runs at a lowered priority and was preempted between the two).
    /// </summary>
    internal bool Run(ref long ran)
    {
        if (_done.Task.IsCompleted) return false;
        AuthResult result;
        try
        {
            result = Authenticator.Authenticate(_connect, _context);
        }
        catch (Exception ex)
        {
            Interlocked.Increment(ref ran);
            // Handed to the awaiting connection, which logs it and closes (never swallowed here).
            _done.TrySetException(ex);
            return true;
        }
        Interlocked.Increment(ref ran);
        _done.TrySetResult(result);
        return true;
    }
}
