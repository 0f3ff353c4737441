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

    [GeneratedRegex(@"Starting http monitor on [^\s:]+:(\d+)")]
    private static partial Regex MonitorLine();
}
