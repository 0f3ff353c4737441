using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Hosting;

/// <summary>
/// sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET (Microsoft.Extensions.Hosting.Systemd is not
/// on this build's package feed, and the protocol is a single send).
/// </summary>
public static class SystemdNotifier
{
    public static bool Notify(string state)
    {
        var path = Environment.GetEnvironmentVariable("NOTIFY_SOCKET");
        if (string.IsNullOrEmpty(path)) return false;
        // A leading '@' names an abstract socket.
        if (path[0] == '@') path = "\0" + path[1..];
        try
        {
            using var socket = new Socket(AddressFamily.Unix, SocketType.Dgram, ProtocolType.Unspecified);
            socket.Connect(new UnixDomainSocketEndPoint(path));
            socket.Send(Encoding.UTF8.GetBytes(state));
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }
}
