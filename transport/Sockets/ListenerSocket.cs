using System.Net.Sockets;

namespace NatsBroker.Transport.Sockets;

/// <summary>
/// Socket options for listening sockets, set the way nats-server's (Go's) listeners set them.
/// </summary>
/// <remarks>
/// Go sets SO_REUSEADDR on every listener, so a restarted server can bind while connections of its previous run
/// sit in TIME_WAIT, and a port held by another live listener still fails with "address already in use".
/// .NET's <see cref="SocketOptionName.ReuseAddress"/> is not that option on Unix: it sets SO_REUSEPORT as well,
/// which lets a second server bind the same port while the first is listening, and the kernel then splits new
/// connections between the two (found when nats.node's tests started a server on 4222 beside a running one: half
/// their connections went to a server that was about to stop). So the option is set here by its number.
/// </remarks>
public static class ListenerSocket
{
    // <sys/socket.h>: Linux SOL_SOCKET 1, SO_REUSEADDR 2, SO_REUSEPORT 15; the BSDs and macOS SOL_SOCKET 0xffff,
    // SO_REUSEADDR 0x4.
    private const int LinuxSolSocket = 1, LinuxSoReuseAddr = 2, LinuxSoReusePort = 15;
    private const int BsdSolSocket = 0xffff, BsdSoReuseAddr = 0x4;

    /// <summary>
    /// SO_REUSEADDR only, before <see cref="Socket.Bind"/>. Not set on Windows, where the option would let another
    /// process take the port (Go leaves it off there too).
    /// </summary>
    public static void AllowRestartWhileInTimeWait(Socket socket)
    {
        ArgumentNullException.ThrowIfNull(socket);
        if (OperatingSystem.IsLinux()) socket.SetRawSocketOption(LinuxSolSocket, LinuxSoReuseAddr, One);
        else if (OperatingSystem.IsMacOS() || OperatingSystem.IsFreeBSD()) socket.SetRawSocketOption(BsdSolSocket, BsdSoReuseAddr, One);
    }

    /// <summary>
    /// SO_REUSEPORT (Linux), for processes that are meant to share a port: the kernel spreads new connections over
    /// every listener bound with it. False where the platform has no such option.
    /// </summary>
    public static bool ShareAcrossProcesses(Socket socket)
    {
        ArgumentNullException.ThrowIfNull(socket);
        if (!OperatingSystem.IsLinux()) return false;
        socket.SetRawSocketOption(LinuxSolSocket, LinuxSoReusePort, One);
        return true;
    }

    private static ReadOnlySpan<byte> One => [1, 0, 0, 0];
}
