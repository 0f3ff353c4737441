using System.Collections.Concurrent;
using System.Runtime.InteropServices;

namespace NatsBroker.Contracts.Gateways.Polling;

/// <summary>
/// One thread per process waiting in epoll_wait for the link sockets (the Unix-socket connections between a
/// gateway and the core, on either end), each registered for what it waits for, not for everything. The runtime's
/// socket engine registers every socket for input and output, edge-triggered; on a Unix socket, each time the
/// other end reads what this end sent, the kernel reports "writable" again (unix_write_space when the sent buffer
/// is freed), which woke the sender's socket thread once per message, for nothing: strace of the websocket gateway
/// in `ws-reqrep-128` showed one EPOLLOUT-only wake-up per message sent to the core, and the core gets the same
/// for each message it sends to a gateway, so four extra wake-ups per request/reply round trip on a 2-core machine
/// where every wake-up competes with the core and the clients for a CPU (gateways/README.md, "Relay cost"). Here a
/// link is registered for input only; output is added only while a send waits for room (backpressure) and removed
/// after.
/// </summary>
public sealed unsafe class LinkPoller
{
    private const int MaxEvents = 64;
    private static readonly Lazy<LinkPoller> Instance = new(() => new LinkPoller(), LazyThreadSafetyMode.ExecutionAndPublication);

    private readonly int _epoll;
    private readonly ConcurrentDictionary<ulong, LinkSocketStream> _streams = new();
    private long _nextId;

    private LinkPoller()
    {
        _epoll = Epoll.Create(Epoll.CloExec);
        if (_epoll < 0) throw new IOException("epoll_create1: " + Marshal.GetPInvokeErrorMessage(Marshal.GetLastPInvokeError()));
        var thread = new Thread(Run) { IsBackground = true, Name = "link-poller" };
        thread.Start();
    }

    /// <summary>Set to 0 to give link sockets to the runtime's socket engine as before (an operator's A/B switch).</summary>
    public const string Variable = "NATSBROKER_LINK_POLLING";

    /// <summary>Whether link sockets use this poller (Linux, <see cref="Variable"/> not 0); read once per process.</summary>
    public static bool Enabled { get; } = OperatingSystem.IsLinux() && Environment.GetEnvironmentVariable(Variable) != "0";

    /// <summary>The process's poller, started on first use.</summary>
    internal static LinkPoller Shared => Instance.Value;

    internal ulong Add(LinkSocketStream stream, nint fd)
    {
        ulong id = (ulong)Interlocked.Increment(ref _nextId);
        _streams[id] = stream;
        int errno = Epoll.Control(_epoll, Epoll.CtlAdd, (int)fd, Interest(writable: false), id);
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
            int n = Epoll.Wait(_epoll, events, MaxEvents, -1);
            if (n < 0)
            {
                int errno = Marshal.GetLastPInvokeError();
                if (errno == Epoll.EINTR) continue;
                throw new IOException("epoll_wait: " + Marshal.GetPInvokeErrorMessage(errno));
            }
            for (int i = 0; i < n; i++)
            {
                if (_streams.TryGetValue(Epoll.DataAt(events, i), out var stream)) stream.OnEvents(Epoll.EventsAt(events, i));
            }
        }
    }
}
