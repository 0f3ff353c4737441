using System.Diagnostics;
using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Server;

/// <summary>
/// A connection starts on the accept loop's thread (NatsServer.AcceptClient): INFO is written there, and input that
/// is already waiting is parsed on a pool thread. A client that pipelines CONNECT, PING and a flood without waiting
/// for INFO is served, and the accept loop keeps accepting while it floods.
/// </summary>
public sealed class AcceptStartTests
{
    [Fact]
    public async Task A_client_that_pipelines_before_INFO_is_served_and_others_are_accepted_meanwhile()
    {
        await using var server = new EmbeddedServer();
        using var flooder = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 5000 };
        flooder.Connect("127.0.0.1", server.Port);
        var pub = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("PUB flood 16\r\n0123456789abcdef\r\n", 2000)));
        flooder.Send("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n"u8);
        flooder.Send(pub);

        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(3));
        var flood = Task.Run(() =>
        {
            while (!stop.IsCancellationRequested) flooder.Send(pub);
        });

        // While the flood runs, new connections get INFO and their PONG promptly.
        for (int i = 0; i < 5; i++)
        {
            var sw = Stopwatch.StartNew();
            using var other = server.Connect("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n");
            var reply = Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(other, "PONG\r\n"u8));
            Assert.EndsWith("PONG\r\n", reply);
            Assert.True(sw.Elapsed < TimeSpan.FromSeconds(2), $"connection {i} took {sw.Elapsed}");
        }
        await stop.CancelAsync();
        await flood;

        // The flooder got INFO first, then the PONG for its pipelined PING.
        var got = Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(flooder, "PONG\r\n"u8));
        Assert.StartsWith("INFO {", got);
        Assert.EndsWith("PONG\r\n", got);
    }
}
