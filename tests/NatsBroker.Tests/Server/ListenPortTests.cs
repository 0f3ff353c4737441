using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Server;

/// <summary>
/// A second server started on a port another server is listening on fails at start-up, as nats-server does
/// ("listen tcp ...: bind: address already in use"). Before, ours set .NET's ReuseAddress, which on Linux is
/// SO_REUSEPORT too: the second server started, and the kernel split new connections between the two.
/// </summary>
public sealed class ListenPortTests(ITestOutputHelper output)
{
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_second_server_on_a_port_in_use_exits_with_address_in_use(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var first = await ServerProcess.StartAsync(kind, log: output);

        var args = new[] { "-a", "127.0.0.1", "-p", first.Port.ToString(System.Globalization.CultureInfo.InvariantCulture) };
        var psi = kind == ServerKind.Ours ? TestEnvironment.OursStartInfo(args) : new ProcessStartInfo(Prerequisites.RequireGoServer(output), args);
        psi.RedirectStandardError = true;
        psi.RedirectStandardOutput = true;
        psi.UseShellExecute = false;
        using var second = Process.Start(psi)!;
        var stderr = second.StandardError.ReadToEndAsync();
        var stdout = second.StandardOutput.ReadToEndAsync();
        bool exited = second.WaitForExit(15_000);
        if (!exited) second.Kill(entireProcessTree: true);
        string text = await stderr + await stdout;
        output.WriteLine(text);
        Assert.True(exited, "the second server kept running on a port that was in use");
        Assert.NotEqual(0, second.ExitCode);
        Assert.Contains("address already in use", text, StringComparison.OrdinalIgnoreCase);
    }

    [Fact]
    public async Task Every_connection_reaches_the_server_that_owns_the_port()
    {
        // The kernel's split showed as connections answered by a server that was not the one the test started.
        await using var first = await ServerProcess.StartAsync(ServerKind.Ours, log: output);
        var args = new[] { "-a", "127.0.0.1", "-p", first.Port.ToString(System.Globalization.CultureInfo.InvariantCulture), "-n", "intruder" };
        var psi = TestEnvironment.OursStartInfo(args);
        psi.RedirectStandardError = true;
        psi.RedirectStandardOutput = true;
        using var second = Process.Start(psi)!;
        _ = second.StandardError.ReadToEndAsync();
        _ = second.StandardOutput.ReadToEndAsync();
        try
        {
            await Task.Delay(1000);
            for (int i = 0; i < 20; i++)
            {
                using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { ReceiveTimeout = 5000 };
                await s.ConnectAsync(IPAddress.Loopback, first.Port);
                var buf = new byte[4096];
                int n = await s.ReceiveAsync(buf);
                string info = System.Text.Encoding.ASCII.GetString(buf, 0, n);
                Assert.DoesNotContain("\"server_name\":\"intruder\"", info, StringComparison.Ordinal);
            }
        }
        finally
        {
            if (!second.HasExited) second.Kill(entireProcessTree: true);
        }
    }
}
