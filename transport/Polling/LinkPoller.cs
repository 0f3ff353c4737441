using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace NatsBroker.Transport.Polling;

/// <summary>
/// A thread waiting in epoll_wait for sockets polled outside the runtime's socket engine: the link sockets (the
/// Unix-socket connections between a gateway and the core, on either end) and, in the core, its TCP clients. Each
/// socket is registered for what it waits for, not for everything. The runtime's socket engine registers every
/// socket for input and output, edge-triggered; on a Unix socket, each time the other end reads what this end sent,
/// the kernel reports "writable" again (unix_write_space when the sent buffer is freed), which woke the sender's
/// socket thread once per message, for nothing: strace of the websocket gateway in `ws-reqrep-128` showed one
/// EPOLLOUT-only wake-up per message sent to the core, and the core gets the same for each message it sends to a
/// gateway, so four extra wake-ups per request/reply round trip on a 2-core machine where every wake-up competes
/// with the core and the clients for a CPU (gateways/README.md, "Relay cost"). Here a link is registered for input
/// only; output is added only while a send waits for room (backpressure) and removed after. A TCP socket is
/// registered for both from the start (TCP has no such wake-ups; LinkSocketStream's constructor says why).
/// </summary>
/// <remarks>
/// Continuations of reads run on the poller's thread (<see cref="ReadinessSignal"/>), so one epoll_wait result is
/// served by one thread in one pass. Work a reader hands to <see cref="TryDeferToBatchEnd"/> during that pass runs
/// once after it: the core defers the flush of a destination connection there, so that several clients' reads in
/// one pass that all deliver to the same destination (requests to one service) end in one write to it instead of
/// one each (nats-server gets a similar effect from its per-client write goroutines, which coalesce what several
/// readers queued while they were busy).
/// </remarks>
public sealed unsafe class LinkPoller
{
    private const int MaxEvents = 64;
    private static readonly Lazy<LinkPoller> Instance = new(() => new LinkPoller("link-poller"), LazyThreadSafetyMode.ExecutionAndPublication);
    private static readonly Lazy<LinkPoller[]> ClientPollers = new(CreateClientPollers, LazyThreadSafetyMode.ExecutionAndPublication);
    private static int s_nextClientPoller;

    // The poller whose thread this is, while it serves an epoll_wait result; null on every other thread.
    [ThreadStatic] private static LinkPoller? t_dispatching;

    private readonly int _epoll;
    private readonly ConcurrentDictionary<ulong, LinkSocketStream> _streams = new();
    // Work deferred to the end of the current pass; touched only by this poller's thread.
    private readonly List<IBatchEndWork> _batchEnd = [];
    // When the current pass began (Stopwatch ticks); touched only by this poller's thread.
    private long _passStart;
    // Continuations that yielded to the next pass, and the ones the current pass runs; poller's thread only.
    private List<Action> _yielded = [];
    private List<Action> _resuming = [];
    private long _nextId;

    private LinkPoller(string threadName)
    {
        _epoll = Epoll.Create(Epoll.CloExec);
        if (_epoll < 0) throw new IOException("epoll_create1: " + Marshal.GetPInvokeErrorMessage(Marshal.GetLastPInvokeError()));
        var thread = new Thread(Run) { IsBackground = true, Name = threadName };
        thread.Start();
    }

    /// <summary>Set to 0 to give link sockets to the runtime's socket engine as before (an operator's A/B switch).</summary>
    public const string Variable = "NATSBROKER_LINK_POLLING";

    /// <summary>Whether link sockets use this poller (Linux, <see cref="Variable"/> not 0); read once per process.</summary>
    public static bool Enabled { get; } = OperatingSystem.IsLinux() && Environment.GetEnvironmentVariable(Variable) != "0";

    /// <summary>The process's link poller, started on first use.</summary>
    internal static LinkPoller Shared => Instance.Value;

    /// <summary>
    /// A poller for a client socket: one per processor (as the runtime runs one socket engine thread per processor
    /// with inline completions), handed out in turn, started on first use.
    /// </summary>
    public static LinkPoller NextClientPoller()
    {
        var pollers = ClientPollers.Value;
        return pollers[(int)((uint)Interlocked.Increment(ref s_nextClientPoller) % (uint)pollers.Length)];
    }

    private static LinkPoller[] CreateClientPollers()
    {
        var pollers = new LinkPoller[Math.Max(1, Environment.ProcessorCount)];
        for (int i = 0; i < pollers.Length; i++) pollers[i] = new LinkPoller("client-poller-" + i);
        return pollers;
    }

    /// <summary>
    /// On a poller's thread serving a pass: the awaiting code goes on in the poller's next pass, after that pass's
    /// socket events, on the same thread. Cooperative, as goroutines yield to nats-server's other connections: a
    /// reader that floods takes turns with the other sockets of its poller instead of holding the thread, and no
    /// thread-pool hop or extra thread is involved (going on on the thread pool instead cost `4x4-128` 10% and grew
    /// its outbound buffers fourfold: more threads than cores, publishers outrunning writers).
    /// </summary>
    public static PassYield YieldToNextPass() =>
        new(t_dispatching ?? throw new InvalidOperationException("not on a poller's thread"));

    /// <summary>The awaitable of <see cref="YieldToNextPass"/>; its continuation is queued on the poller's thread.</summary>
    public readonly struct PassYield : ICriticalNotifyCompletion
    {
        private readonly LinkPoller _poller;

        internal PassYield(LinkPoller poller) => _poller = poller;

        public PassYield GetAwaiter() => this;
        public bool IsCompleted => false;
        public void GetResult() { }
        // Called by the awaiting code, so on the poller's thread: the list needs no lock.
        public void OnCompleted(Action continuation) => _poller._yielded.Add(continuation);
        public void UnsafeOnCompleted(Action continuation) => _poller._yielded.Add(continuation);
    }

    /// <summary>
    /// On a poller's thread serving a pass: remembers <paramref name="work"/> to run once the pass is over, and returns
    /// true. Elsewhere returns false (the caller does the work now). The caller makes sure it hands the same work over
    /// at most once per pass.
    /// </summary>
    public static bool TryDeferToBatchEnd(IBatchEndWork work)
    {
        var poller = t_dispatching;
        if (poller is null) return false;
        poller._batchEnd.Add(work);
        return true;
    }

    /// <summary>Whether this thread is a poller's, serving a pass (a reader's continuation runs there).</summary>
    public static bool OnPollerThread => t_dispatching is not null;

    /// <summary>
    /// On a poller's thread serving a pass: runs what was deferred so far now, not at the end of the pass, and tells
    /// whether the pass has lasted longer than its budget (1 ms). For a reader that is about to go on reading on
    /// this thread because more input was already there (a client that floods): the destinations it delivered to
    /// are written first; past the budget the reader should await <see cref="YieldToNextPass"/>, so the poller's
    /// other sockets are not held up by it. Off a poller's thread: false, nothing done.
    /// </summary>
    public static bool RunDeferredWorkAndCheckBudget()
    {
        var poller = t_dispatching;
        if (poller is null) return false;
        poller.RunBatchEnd();
        return Stopwatch.GetTimestamp() - poller._passStart > BatchEndBudgetTicks;
    }

    /// <param name="watchOutput">Register for output from the start (TCP), not only while a send waits.</param>
    internal ulong Add(LinkSocketStream stream, nint fd, bool watchOutput)
    {
        ulong id = (ulong)Interlocked.Increment(ref _nextId);
        _streams[id] = stream;
        int errno = Epoll.Control(_epoll, Epoll.CtlAdd, (int)fd, Interest(watchOutput), id);
        if (errno != 0)
        {
            _streams.TryRemove(id, out _);
            throw new IOException("epoll_ctl: " + Marshal.GetPInvokeErrorMessage(errno));
        }
        return id;
    }

    /// <summary>Adds or removes output readiness; adding reports it at once when the socket already has room.</summary>
    internal void WatchWritable(ulong id, nint fd, bool writable)
    {
        int errno = Epoll.Control(_epoll, Epoll.CtlMod, (int)fd, Interest(writable), id);
        if (errno != 0) throw new IOException("epoll_ctl: " + Marshal.GetPInvokeErrorMessage(errno));
    }

    /// <summary>Before the socket is closed (a closed descriptor leaves epoll by itself only when no duplicate remains).</summary>
    internal void Remove(ulong id, nint fd)
    {
        _streams.TryRemove(id, out _);
        _ = Epoll.Control(_epoll, Epoll.CtlDel, (int)fd, 0, id); // ENOENT/EBADF: already gone, nothing to undo
    }

    private static uint Interest(bool writable) =>
        Epoll.In | Epoll.RdHup | Epoll.EdgeTriggered | (writable ? Epoll.Out : 0);

    private void Run()
    {
        byte* events = (byte*)NativeMemory.Alloc((nuint)(MaxEvents * Epoll.EventSize));
        while (true)
        {
            // With readers waiting for their turn, only look for events: their pass comes at once.
            int n = Epoll.Wait(_epoll, events, MaxEvents, _yielded.Count > 0 ? 0 : -1);
            if (n < 0)
            {
                int errno = Marshal.GetLastPInvokeError();
                if (errno == Epoll.EINTR) continue;
                throw new IOException("epoll_wait: " + Marshal.GetPInvokeErrorMessage(errno));
            }
            _passStart = Stopwatch.GetTimestamp();
            // The readers that yielded before this pass go on after its events; a reader that yields during this
            // pass (these included) goes on in the next one, after the events that pass brings.
            (_resuming, _yielded) = (_yielded, _resuming);
            t_dispatching = this;
            try
            {
                for (int i = 0; i < n; i++)
                {
                    if (_streams.TryGetValue(Epoll.DataAt(events, i), out var stream)) stream.OnEvents(Epoll.EventsAt(events, i));
                }
                foreach (var continuation in _resuming) continuation();
                _resuming.Clear();
            }
            finally
            {
                // Work done at the end of the pass (below) runs outside it: what it defers in turn runs at once.
                t_dispatching = null;
            }
            RunBatchEnd();
        }
    }

    /// <summary>
    /// The pass's deferred work, in the order it was handed over: on this thread while a budget lasts (1 ms, as
    /// nats-server's flushClients), then handed to the thread pool, so a pass that touched many destinations (or one
    /// slow one) does not hold up the next epoll_wait.
    /// </summary>
    private void RunBatchEnd()
    {
        var list = _batchEnd;
        if (list.Count == 0) return;
        long start = Stopwatch.GetTimestamp();
        bool inline = true;
        for (int i = 0; i < list.Count; i++)
        {
            if (inline && i > 0 && Stopwatch.GetTimestamp() - start > BatchEndBudgetTicks) inline = false;
            list[i].RunAtBatchEnd(inline);
        }
        list.Clear();
    }

    private static readonly long BatchEndBudgetTicks = Stopwatch.Frequency / 1000;
}

/// <summary>Work a reader on a poller's thread defers to the end of the poller's pass (<see cref="LinkPoller.TryDeferToBatchEnd"/>).</summary>
public interface IBatchEndWork
{
    /// <param name="inline">Run on the calling (poller) thread now; false once the pass's budget is spent: hand it to the thread pool.</param>
    void RunAtBatchEnd(bool inline);
}
