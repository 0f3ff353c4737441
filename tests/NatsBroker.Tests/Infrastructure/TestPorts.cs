using System.Net;
using System.Net.Sockets;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// Ports for listeners a test must name up front (a config file's <c>websocket { port }</c>, <c>mqtt { port }</c>, a
/// gateway's address). Asking the kernel for port 0 and closing the listener is racy: the port returned is in the
/// ephemeral range (ip_local_port_range, 32768-60999 on Linux), and before the server binds it any outgoing connection
/// on the machine (our own test clients among them) may be given it as its local port: nats-server then fails with
/// "address already in use". Ports below the ephemeral range are never handed to outgoing connections, so only
/// another listener can hold one; this allocator hands each port out once per process, from a per-process starting
/// point (so two test processes running at once rarely meet), and skips ports something already listens on.
/// </summary>
public static class TestPorts
{
    private const int First = 20000, Last = 32000;
    private static int s_next = First + (Environment.ProcessId * 397 % (Last - First));

    public static int Next()
    {
        for (int attempt = 0; attempt < Last - First; attempt++)
        {
            int port = First + ((Interlocked.Increment(ref s_next) - First) % (Last - First));
            if (CanBind(port)) return port;
        }
        throw new InvalidOperationException($"no free TCP port in {First}-{Last}");
    }

    private static bool CanBind(int port)
    {
        try
        {
            // nats-server binds 0.0.0.0 by default: check the wildcard address, which also conflicts with loopback listeners.
            using var l = new TcpListener(IPAddress.Any, port);
            l.Start();
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }
}
