using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text.RegularExpressions;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Gateways;

internal static partial class GatewayTestHelpers
{
    /// <summary>/connz of a server started with monitoring, from its log line (the ports file may be read before -m is up).</summary>
    public static async Task<Uri> ConnzUri(ServerProcess server)
    {
        for (int i = 0; i < 200; i++)
        {
            if (server.MonitorPort is int p) return new Uri($"http://127.0.0.1:{p}/connz");
            var m = MonitorLine().Match(server.Output);
            if (m.Success) return new Uri($"http://127.0.0.1:{m.Groups[1].Value}/connz");
            await Task.Delay(50);
        }
        throw new InvalidOperationException("no monitoring port in the server output:\n" + server.OutputTail());
    }

    /// <summary>
    /// Waits until a loopback port accepts connections (a supervised gateway listens a moment after the core);
    /// bounded by 30 s, generous for a loaded CI machine.
    /// </summary>
    public static async Task WaitListeningAsync(int port)
    {
        var sw = Stopwatch.StartNew();
        while (true)
        {
            try
            {
                using var c = new TcpClient();
                await c.ConnectAsync(IPAddress.Loopback, port);
                return;
            }
            catch (SocketException) when (sw.Elapsed < TimeSpan.FromSeconds(30))
            {
                await Task.Delay(50);
            }
        }
    }

    [GeneratedRegex(@"Starting http monitor on [^\s:]+:(\d+)")]
    private static partial Regex MonitorLine();
}
