using System.Diagnostics;
using System.Net.Sockets;
using System.Text;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// sd_notify for systemd Type=notify units (deploy/): the broker process sends READY=1 once it listens and
/// STOPPING=1 when SIGTERM stops it, as datagrams to $NOTIFY_SOCKET.
/// </summary>
public sealed class SystemdNotifyTests
{
    [Fact]
    public async Task NotifySocket_GetsReadyThenStopping()
    {
        var dir = Directory.CreateTempSubdirectory("nb-notify");
        var socketPath = Path.Combine(dir.FullName, "notify");
        using var notify = new Socket(AddressFamily.Unix, SocketType.Dgram, ProtocolType.Unspecified);
        notify.Bind(new UnixDomainSocketEndPoint(socketPath));

        var psi = TestEnvironment.OursStartInfo("-a", "127.0.0.1", "-p", "-1");
        psi.RedirectStandardError = true;
        psi.RedirectStandardOutput = true;
        psi.Environment["NOTIFY_SOCKET"] = socketPath;
        using var process = Process.Start(psi)!;
        try
        {
            var buffer = new byte[256];
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(20));
            int n = await notify.ReceiveAsync(buffer, SocketFlags.None, timeout.Token);
            Assert.Equal("READY=1", Encoding.UTF8.GetString(buffer, 0, n));

            using (var kill = Process.Start(new ProcessStartInfo("kill", ["-TERM", process.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]))!)
            {
                await kill.WaitForExitAsync(timeout.Token);
                Assert.Equal(0, kill.ExitCode);
            }
            n = await notify.ReceiveAsync(buffer, SocketFlags.None, timeout.Token);
            Assert.Equal("STOPPING=1", Encoding.UTF8.GetString(buffer, 0, n));
            await process.WaitForExitAsync(timeout.Token);
            Assert.Equal(0, process.ExitCode);
        }
        finally
        {
            if (!process.HasExited) process.Kill();
            dir.Delete(recursive: true);
        }
    }
}
