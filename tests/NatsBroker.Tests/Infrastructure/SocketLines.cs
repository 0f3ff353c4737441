using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>Reading protocol lines off a raw socket, byte by byte, so nothing after the line is consumed.</summary>
public static class SocketLines
{
    /// <summary>The next CRLF-terminated line without its terminator; what arrived before a close, or within 10 s.</summary>
    public static async Task<string> ReadLineAsync(Socket socket)
    {
        var sb = new StringBuilder();
        var one = new byte[1];
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (!sb.ToString().EndsWith("\r\n", StringComparison.Ordinal))
        {
            if (await socket.ReceiveAsync(one, SocketFlags.None, cts.Token) == 0) break;
            sb.Append((char)one[0]);
        }
        return sb.ToString().TrimEnd();
    }
}
