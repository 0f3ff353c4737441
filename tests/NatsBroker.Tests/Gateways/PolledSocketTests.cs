using System.Collections.Concurrent;
using System.Net;
using System.Net.Sockets;
using NatsBroker.Transport.Polling;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// What the core relies on when its TCP clients are polled by <see cref="LinkPoller"/>: work a reader defers on the
/// poller's thread runs once, on that thread, after the pass; a reader that yields goes on after the next pass's events;
/// and a TCP socket watched for output from the start still meets backpressure and delivers everything.
/// </summary>
public sealed class PolledSocketTests : IDisposable
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);
    private readonly string _dir = Directory.CreateTempSubdirectory("natsbroker-polled-").FullName;

    public void Dispose() => Directory.Delete(_dir, recursive: true);

    private (LinkSocketStream Stream, Socket Peer) UnixPair() => LinkSocketStreamTests.UnixPair(_dir);

    private static (LinkSocketStream Stream, Socket Peer) TcpPair()
    {
        using var listener = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        listener.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        listener.Listen(1);
        var client = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        client.Connect(listener.LocalEndPoint!);
        var accepted = listener.Accept();
        return (new LinkSocketStream(accepted, LinkPoller.NextClientPoller(), tcp: true), client);
    }

    /// <summary>Records each run, with its thread, into a shared log.</summary>
    private sealed class Recorder(ConcurrentQueue<string> log, string name) : IBatchEndWork
    {
        public int Runs;
        public int Thread;
        public bool Inline;
        public readonly TaskCompletionSource Ran = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public void RunAtBatchEnd(bool inline)
        {
            Interlocked.Increment(ref Runs);
            Thread = Environment.CurrentManagedThreadId;
            Inline = inline;
            log.Enqueue(name + " ran");
            Ran.TrySetResult();
        }
    }

    [Fact]
    public void Off_a_poller_thread_nothing_is_deferred()
    {
        var log = new ConcurrentQueue<string>();
        Assert.False(LinkPoller.OnPollerThread);
        Assert.False(LinkPoller.TryDeferToBatchEnd(new Recorder(log, "w")));
        Assert.Empty(log);
    }

    [Fact]
    public async Task Work_a_reader_defers_runs_once_on_the_poller_thread_after_the_reader_returned_in_order()
    {
        var (stream, peer) = UnixPair();
        await using var _ = stream;
        using var __ = peer;
        var log = new ConcurrentQueue<string>();
        var first = new Recorder(log, "first");
        var second = new Recorder(log, "second");
        int readerThread = 0;

        async Task ReadThenDeferAsync()
        {
            var buffer = new byte[16];
            // Waits for input: the rest of this method runs as the read's continuation, on the poller's thread.
            await stream.ReadAsync(buffer).ConfigureAwait(false);
            readerThread = Environment.CurrentManagedThreadId;
            log.Enqueue(LinkPoller.OnPollerThread ? "on the poller" : "elsewhere");
            log.Enqueue(LinkPoller.TryDeferToBatchEnd(first) ? "first deferred" : "first not deferred");
            log.Enqueue(LinkPoller.TryDeferToBatchEnd(second) ? "second deferred" : "second not deferred");
            log.Enqueue("reader returned");
        }

        var reader = ReadThenDeferAsync();
        await Task.Delay(50);
        Assert.False(reader.IsCompleted);
        peer.Send("PUB"u8);
        await reader.WaitAsync(Wait);
        await Task.WhenAll(first.Ran.Task, second.Ran.Task).WaitAsync(Wait);
        Assert.Equal(["on the poller", "first deferred", "second deferred", "reader returned", "first ran", "second ran"], log.ToArray());
        // The first always runs on the poller's thread; a later one is told to hand off once the 1 ms budget is spent
        // (a loaded machine can take that long between the two).
        Assert.True(first.Inline);
        Assert.NotEqual(Environment.CurrentManagedThreadId, readerThread);
        Assert.Equal(readerThread, first.Thread);
        Assert.Equal(readerThread, second.Thread);

        // The next pass does not run them again.
        peer.Send("x"u8);
        Assert.Equal(1, await stream.ReadAsync(new byte[4]).AsTask().WaitAsync(Wait));
        await Task.Delay(50);
        Assert.Equal(1, first.Runs);
        Assert.Equal(1, second.Runs);
    }

    /// <summary>
    /// A reader that yields to the poller's next pass (a client that floods, past the pass's budget) goes on after the
    /// socket events of that pass, on the same thread: the other sockets of its poller are not held up by it.
    /// </summary>
    [Fact]
    public async Task A_reader_that_yields_goes_on_after_the_next_pass_has_served_the_other_sockets()
    {
        var (first, firstPeer) = UnixPair();
        var (second, secondPeer) = UnixPair();
        await using var _ = first;
        await using var __ = second;
        using var ___ = firstPeer;
        using var ____ = secondPeer;
        var log = new ConcurrentQueue<string>();
        int firstThread = 0, resumedThread = 0, secondThread = 0;

        async Task FirstAsync()
        {
            await first.ReadAsync(new byte[16]).ConfigureAwait(false);
            firstThread = Environment.CurrentManagedThreadId;
            log.Enqueue("first read");
            // Input for the other socket arrives now: its edge is in the poller's next pass.
            secondPeer.Send("x"u8);
            await LinkPoller.YieldToNextPass();
            resumedThread = Environment.CurrentManagedThreadId;
            log.Enqueue("first resumed");
        }

        async Task SecondAsync()
        {
            await second.ReadAsync(new byte[16]).ConfigureAwait(false);
            secondThread = Environment.CurrentManagedThreadId;
            log.Enqueue("second read");
        }

        var one = FirstAsync();
        var two = SecondAsync();
        await Task.Delay(50);
        Assert.False(one.IsCompleted || two.IsCompleted);
        Assert.Throws<InvalidOperationException>(() => LinkPoller.YieldToNextPass()); // not a poller's thread
        firstPeer.Send("PUB"u8);
        await Task.WhenAll(one, two).WaitAsync(Wait);
        Assert.Equal(["first read", "second read", "first resumed"], log.ToArray());
        Assert.Equal(firstThread, resumedThread);
        Assert.Equal(firstThread, secondThread); // both are the link poller's
    }

    [Fact]
    public async Task A_tcp_socket_watched_for_output_from_the_start_meets_backpressure_and_delivers_everything()
    {
        var (stream, peer) = TcpPair();
        await using var _ = stream;
        using var __ = peer;
        var data = new byte[32 * 1024 * 1024];
        new Random(11).NextBytes(data);
        var write = stream.WriteAsync(data).AsTask();
        await Task.Delay(100);
        Assert.False(write.IsCompleted); // more than loopback TCP buffers hold while the peer does not read
        var received = new byte[data.Length];
        int filled = 0;
        var reader = Task.Run(() =>
        {
            while (filled < received.Length)
            {
                int n = peer.Receive(received.AsSpan(filled));
                if (n == 0) break;
                filled += n;
            }
        });
        await write.WaitAsync(Wait);
        await reader.WaitAsync(Wait);
        Assert.Equal(data.Length, filled);
        Assert.True(data.AsSpan().SequenceEqual(received));

        // Both directions still work after it.
        await stream.WriteAsync("+OK\r\n"u8.ToArray());
        Assert.Equal(5, peer.Receive(new byte[8]));
        peer.Send("PING\r\n"u8);
        var buffer = new byte[16];
        Assert.Equal(6, await stream.ReadAsync(buffer).AsTask().WaitAsync(Wait));
        peer.Shutdown(SocketShutdown.Send);
        Assert.Equal(0, await stream.ReadAsync(buffer).AsTask().WaitAsync(Wait));
    }
}
