using System.Diagnostics;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>Time- and load-based limits: stale connections, slow consumers. Each test owns its server.</summary>
[Collection(NatsBroker.Tests.Server.AllocationCollection.Name)]
public sealed class LimitsTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Stale_connection_gets_pings_then_err_and_close(ServerKind kind)
    {
        // 500 ms x 2 leaves the answering client a wide margin on a loaded 2-core CI machine; the silent client
        // still sees exactly what nats-server sends: two PINGs, then the -ERR, then the close.
        await using var s = await OwnAsync(kind, "ping_interval: \"500ms\"\nping_max: 2\n");
        await using var healthy = await Connected(s);
        await using var c = await Raw(s, Quiet);
        var sw = Stopwatch.StartNew();
        using var stop = new CancellationTokenSource();
        var answering = Task.Run(async () =>
        {
            // A client that answers the server's PINGs (ReadMessageAsync does) stays connected. It keeps answering
            // until the silent one has been closed, then proves it is still served: its own PING gets a PONG.
            while (!stop.IsCancellationRequested && !healthy.IsClosed)
            {
                await AnswerPingsFor(healthy, TimeSpan.FromMilliseconds(100));
            }

            var pongs = healthy.PongsSkipped;
            await healthy.SendAsync("PING\r\n");
            var deadline = Stopwatch.StartNew();
            while (healthy.PongsSkipped == pongs && !healthy.IsClosed && deadline.Elapsed < TimeSpan.FromSeconds(10))
            {
                await AnswerPingsFor(healthy, TimeSpan.FromMilliseconds(100));
            }

            return healthy.PongsSkipped > pongs;
        });
        List<string> lines;
        try
        {
            lines = await c.ExpectClosedAsync(TimeSpan.FromSeconds(10));
        }
        finally
        {
            await stop.CancelAsync();
        }

        Output.WriteLine($"closed after {sw.ElapsedMilliseconds} ms");
        Assert.Equal(["PING", "PING", "-ERR 'Stale Connection'"], lines);
        Assert.True(await answering, "the client answering PINGs got no PONG after the silent one was closed");
        Assert.False(healthy.IsClosed);

        static async Task AnswerPingsFor(RawClient client, TimeSpan period)
        {
            try
            {
                // No MSG is expected on this connection: the read only answers PINGs and counts PONGs.
                Assert.Null(await client.ReadMessageAsync(period, skipPongs: true));
            }
            catch (TimeoutException)
            {
            }
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Slow_consumer_is_disconnected_while_others_keep_flowing(ServerKind kind)
    {
        // nats-server detects it through max_pending or the write deadline; it closes without an -ERR line
        // (the client is not reading anyway) and producers/other consumers are unaffected.
        await using var s = await OwnAsync(kind, "max_pending: 262144\nmax_payload: 65536\nwrite_deadline: \"500ms\"\n");
        // RawClient always drains into memory, so the slow consumer is a plain socket that stops reading.
        await using var stalled = await StalledSubscriber(s, "sc.x");

        await using var good = await Connected(s);
        await good.SendAsync("SUB sc.x 1\r\n");
        await good.PingAsync();
        await using var pub = await Connected(s);
        var payload = new byte[65536];
        const int N = 300;
        var frame = (byte[])[.. "PUB sc.x 65536\r\n"u8.ToArray(), .. payload, 13, 10];
        // The good consumer is paced: at most 2 messages (128 KiB, half its max_pending) ahead of what it has read, so
        // a reader descheduled on a loaded machine is not itself a slow consumer; the stalled one still overflows.
        int received = 0;
        var reader = Task.Run(async () =>
        {
            for (var i = 0; i < N; i++)
            {
                var m = await good.ExpectMessageAsync(TimeSpan.FromSeconds(15));
                Assert.Equal(65536, m.Payload.Length);
                Interlocked.Increment(ref received);
            }
        });
        for (var i = 0; i < N; i++)
        {
            var until = DateTime.UtcNow + TimeSpan.FromSeconds(15);
            while (i - Volatile.Read(ref received) >= 2 && !reader.IsCompleted && DateTime.UtcNow < until) await Task.Delay(1);
            await pub.SendBytesAsync(frame);
        }

        Assert.Empty(await pub.PingAsync(TimeSpan.FromSeconds(20)));
        await reader;
        Assert.True(await stalled.WaitClosedAsync(TimeSpan.FromSeconds(15)), "the stalled subscriber was not disconnected");
        Assert.Empty(await good.PingAsync());
        Output.WriteLine($"stalled subscriber closed: {stalled.CloseInfo}");
    }

    private static async Task<StalledClient> StalledSubscriber(ServerProcess s, string subject)
    {
        var sock = new System.Net.Sockets.Socket(System.Net.Sockets.AddressFamily.InterNetwork, System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp)
        {
            ReceiveBufferSize = 4096,
        };
        await sock.ConnectAsync(s.Host, s.Port);
        var buf = new byte[8192];
        var got = "";
        while (!got.Contains("\r\n", StringComparison.Ordinal))
        {
            var n = await sock.ReceiveAsync(buf);
            got += System.Text.Encoding.ASCII.GetString(buf, 0, n);
        }

        await sock.SendAsync(System.Text.Encoding.ASCII.GetBytes($"CONNECT {Quiet}\r\nSUB {subject} 1\r\nPING\r\n"));
        got = "";
        while (!got.Contains("PONG\r\n", StringComparison.Ordinal))
        {
            var n = await sock.ReceiveAsync(buf);
            got += System.Text.Encoding.ASCII.GetString(buf, 0, n);
        }

        return new StalledClient(sock);
    }

    /// <summary>A subscriber that stops reading; later drains to see whether the server closed it.</summary>
    private sealed class StalledClient(System.Net.Sockets.Socket socket) : IAsyncDisposable
    {
        public string CloseInfo { get; private set; } = "";

        public async Task<bool> WaitClosedAsync(TimeSpan timeout)
        {
            var buf = new byte[1 << 20];
            long total = 0;
            using var cts = new CancellationTokenSource(timeout);
            try
            {
                while (true)
                {
                    var n = await socket.ReceiveAsync(buf, System.Net.Sockets.SocketFlags.None, cts.Token);
                    if (n == 0)
                    {
                        CloseInfo = $"EOF after draining {total} bytes";
                        return true;
                    }

                    total += n;
                }
            }
            catch (System.Net.Sockets.SocketException e)
            {
                CloseInfo = $"{e.SocketErrorCode} after draining {total} bytes";
                return true;
            }
            catch (OperationCanceledException)
            {
                CloseInfo = $"still open after draining {total} bytes";
                return false;
            }
        }

        public ValueTask DisposeAsync()
        {
            socket.Dispose();
            return ValueTask.CompletedTask;
        }
    }
}
