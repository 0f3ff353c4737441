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
        await using var s = await OwnAsync(kind, "ping_interval: \"200ms\"\nping_max: 2\n");
        await using var healthy = await Connected(s);
        await using var c = await Raw(s, Quiet);
        var sw = Stopwatch.StartNew();
        var answering = Task.Run(async () =>
        {
            // A client that answers the server's PINGs (ReadMessageAsync does) stays connected.
            while (sw.Elapsed < TimeSpan.FromSeconds(1.5))
            {
                try
                {
                    await healthy.ReadMessageAsync(TimeSpan.FromMilliseconds(100));
                }
                catch (TimeoutException)
                {
                }
            }
        });
        var lines = await c.ExpectClosedAsync(TimeSpan.FromSeconds(5));
        Output.WriteLine($"closed after {sw.ElapsedMilliseconds} ms");
        Assert.Equal(["PING", "PING", "-ERR 'Stale Connection'"], lines);
        await answering;
        Assert.False(healthy.IsClosed);
        // A server PING may have arrived after the answering loop ended.
        Assert.All(await healthy.PingAsync(), l => Assert.Equal("PING", l));
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
        var reader = Task.Run(async () =>
        {
            for (var i = 0; i < N; i++)
            {
                var m = await good.ExpectMessageAsync(TimeSpan.FromSeconds(15));
                Assert.Equal(65536, m.Payload.Length);
            }
        });
        for (var i = 0; i < N; i++)
        {
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
