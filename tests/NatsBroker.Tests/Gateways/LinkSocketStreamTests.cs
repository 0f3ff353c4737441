using System.Net.Sockets;
using NatsBroker.Transport.Polling;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// The link stream (a Unix socket polled for input only) as the relay and the core use it: reads that wait,
/// writes that meet backpressure, end of input, zero-byte reads, cancellation and disposal.
/// </summary>
public sealed class LinkSocketStreamTests : IDisposable
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);
    private readonly string _dir = Directory.CreateTempSubdirectory("natsbroker-link-").FullName;

    public void Dispose() => Directory.Delete(_dir, recursive: true);

    private (LinkSocketStream Link, Socket Peer) Pair() => UnixPair(_dir);

    /// <summary>A connected Unix-socket pair in <paramref name="dir"/>: ours (the stream, on the link poller) and the peer (a plain blocking socket).</summary>
    internal static (LinkSocketStream Link, Socket Peer) UnixPair(string dir)
    {
        var path = Path.Combine(dir, "s" + Guid.NewGuid().ToString("N")[..8]);
        using var listener = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        listener.Bind(new UnixDomainSocketEndPoint(path));
        listener.Listen(1);
        var client = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        client.Connect(new UnixDomainSocketEndPoint(path));
        var peer = listener.Accept();
        return (new LinkSocketStream(client), peer);
    }

    /// <summary>
    /// The core answers "-ERR" and closes at once (a refused login): the data and the hang-up come in one edge, which
    /// the read that takes the data consumes. The next read must still see end of input, not wait for an edge that
    /// never comes (an MQTT client refused by the core never got its CONNACK 0x05 before this).
    /// </summary>
    [Fact]
    public async Task Data_then_close_before_the_first_read_ends_with_end_of_input()
    {
        var (link, peer) = Pair();
        await using var _ = link;
        peer.Send("-ERR 'Authorization Violation'\r\n"u8);
        peer.Dispose();
        await Task.Delay(100); // both events are in before the first read
        var buffer = new byte[256];
        int n = await link.ReadAsync(buffer).AsTask().WaitAsync(Wait);
        Assert.Equal("-ERR 'Authorization Violation'\r\n"u8.ToArray(), buffer[..n]);
        Assert.Equal(0, await link.ReadAsync(buffer).AsTask().WaitAsync(Wait));
    }

    [Fact]
    public async Task A_read_waits_for_input_and_both_directions_carry_bytes()
    {
        var (link, peer) = Pair();
        await using var _ = link;
        using var __ = peer;
        var buffer = new byte[64];
        var read = link.ReadAsync(buffer).AsTask();
        await Task.Delay(50);
        Assert.False(read.IsCompleted);
        peer.Send("PING\r\n"u8);
        Assert.Equal(6, await read.WaitAsync(Wait));
        Assert.Equal("PING\r\n"u8.ToArray(), buffer[..6]);
        // A second read after a short one waits for the next input instead of reporting anything.
        var second = link.ReadAsync(buffer).AsTask();
        await Task.Delay(50);
        Assert.False(second.IsCompleted);
        peer.Send("PONG\r\n"u8);
        Assert.Equal(6, await second.WaitAsync(Wait));
        Assert.Equal("PONG\r\n"u8.ToArray(), buffer[..6]);

        await link.WriteAsync("+OK\r\n"u8.ToArray());
        var got = new byte[16];
        Assert.Equal(5, peer.Receive(got));
        Assert.Equal("+OK\r\n"u8.ToArray(), got[..5]);

        peer.Shutdown(SocketShutdown.Send);
        Assert.Equal(0, await link.ReadAsync(buffer).AsTask().WaitAsync(Wait));
    }

    [Fact]
    public async Task A_write_larger_than_the_socket_buffer_waits_for_the_reader_and_arrives_whole()
    {
        var (link, peer) = Pair();
        await using var _ = link;
        using var __ = peer;
        var data = new byte[8 * 1024 * 1024];
        new Random(7).NextBytes(data);
        var write = link.WriteAsync(data).AsTask();
        await Task.Delay(100);
        Assert.False(write.IsCompleted); // the peer has not read: backpressure, nothing queued in the process
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
        // The stream still works after the backpressure (output readiness no longer watched).
        await link.WriteAsync("x"u8.ToArray());
        Assert.Equal(1, peer.Receive(new byte[4]));
    }

    [Fact]
    public async Task A_zero_byte_read_waits_for_input_without_taking_it()
    {
        var (link, peer) = Pair();
        await using var _ = link;
        using var __ = peer;
        var zero = link.ReadAsync(Memory<byte>.Empty).AsTask();
        await Task.Delay(50);
        Assert.False(zero.IsCompleted);
        peer.Send("abc"u8);
        Assert.Equal(0, await zero.WaitAsync(Wait));
        var buffer = new byte[8];
        Assert.Equal(3, await link.ReadAsync(buffer).AsTask().WaitAsync(Wait));
        Assert.Equal("abc"u8.ToArray(), buffer[..3]);
    }

    [Fact]
    public async Task A_cancelled_read_ends_and_the_next_read_still_gets_the_input()
    {
        var (link, peer) = Pair();
        await using var _ = link;
        using var __ = peer;
        using var cts = new CancellationTokenSource();
        var buffer = new byte[8];
        var read = link.ReadAsync(buffer, cts.Token).AsTask();
        await Task.Delay(50);
        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => read.WaitAsync(Wait));
        peer.Send("z"u8);
        Assert.Equal(1, await link.ReadAsync(buffer).AsTask().WaitAsync(Wait));
        Assert.Equal((byte)'z', buffer[0]);
    }

    [Fact]
    public async Task Disposing_ends_a_pending_read_and_closes_the_socket()
    {
        var (link, peer) = Pair();
        using var _ = peer;
        var read = link.ReadAsync(new byte[8]).AsTask();
        await Task.Delay(50);
        await link.DisposeAsync();
        await Assert.ThrowsAsync<ObjectDisposedException>(() => read.WaitAsync(Wait));
        Assert.Equal(0, peer.Receive(new byte[8])); // the peer sees the close
    }
}
