using System.Net.Sockets;
using System.Text;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Routing;

/// <summary>
/// A client that publishes flat out to its own subscription (nats.node's "buffers don't clobber"): the server must
/// push back on its reads until its own outbound drains, not cut it off as a slow consumer. 100 MB flow through one
/// connection whose reader starts late; the default max_pending is 64 MB.
/// </summary>
[Collection(NatsBroker.Tests.Server.AllocationCollection.Name)]
public sealed class SelfBackPressureTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Publishing_to_its_own_subscription_delivers_everything_in_order(ServerKind kind)
    {
        var s = await OwnAsync(kind);
        await using var _ = s;
        const int count = 100_000, size = 1024;
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        await socket.ConnectAsync(s.Host, s.Port);
        await socket.SendAsync("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB self.x 1\r\n"u8.ToArray());

        // Reader: count MSG frames and check their order (the payload starts with the 8-digit message number).
        // It starts late, as a single-threaded client (nats.node) reads only after its publish loop: meanwhile the
        // server must stop reading this connection rather than buffer past max_pending and cut it off.
        var reader = Task.Run(async () =>
        {
            await Task.Delay(TimeSpan.FromSeconds(1.5));
            var buf = new byte[256 * 1024];
            var pending = new List<byte>(4 * 1024 * 1024);
            int seen = 0;
            var header = Encoding.ASCII.GetBytes($"MSG self.x 1 {size}\r\n");
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            while (seen < count)
            {
                int n = await socket.ReceiveAsync(buf, SocketFlags.None, cts.Token);
                if (n == 0) return (seen, "connection closed");
                pending.AddRange(buf.AsSpan(0, n));
                int pos = 0;
                var span = System.Runtime.InteropServices.CollectionsMarshal.AsSpan(pending);
                while (true)
                {
                    var rest = span[pos..];
                    int eol = rest.IndexOf("\r\n"u8);
                    if (eol < 0) break;
                    var line = rest[..eol];
                    if (line.StartsWith("INFO "u8) || line.SequenceEqual("PING"u8) || line.SequenceEqual("PONG"u8))
                    {
                        if (line.SequenceEqual("PING"u8)) await socket.SendAsync("PONG\r\n"u8.ToArray());
                        pos += eol + 2;
                        span = System.Runtime.InteropServices.CollectionsMarshal.AsSpan(pending);
                        continue;
                    }
                    if (!rest.StartsWith(header)) return (seen, "unexpected: " + Encoding.ASCII.GetString(line));
                    if (rest.Length < header.Length + size + 2) break;
                    int number = int.Parse(rest.Slice(header.Length, 8), System.Globalization.CultureInfo.InvariantCulture);
                    if (number != seen) return (seen, $"out of order: got {number}, expected {seen}");
                    seen++;
                    pos += header.Length + size + 2;
                }
                pending.RemoveRange(0, pos);
            }
            return (seen, "ok");
        });

        var payload = new byte[size];
        payload.AsSpan().Fill((byte)'z');
        var pub = Encoding.ASCII.GetBytes($"PUB self.x {size}\r\n");
        const int perWrite = 64;
        var block = new byte[perWrite * (pub.Length + size + 2)];
        for (int i = 0; i < count; i += perWrite)
        {
            int o = 0;
            for (int j = i; j < i + perWrite && j < count; j++)
            {
                pub.CopyTo(block, o); o += pub.Length;
                Encoding.ASCII.GetBytes(j.ToString("D8", System.Globalization.CultureInfo.InvariantCulture)).CopyTo(block, o);
                payload.AsSpan(8).CopyTo(block.AsSpan(o + 8)); o += size;
                block[o++] = (byte)'\r'; block[o++] = (byte)'\n';
            }
            await socket.SendAsync(block.AsMemory(0, o));
        }
        var (received, status) = await reader;
        Output.WriteLine($"{kind}: {received} of {count} delivered ({status})");
        Assert.Equal("ok", status);
        Assert.Equal(count, received);
    }
}
