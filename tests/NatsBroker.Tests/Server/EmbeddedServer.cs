using System.Net.Sockets;
using Microsoft.Extensions.Logging.Abstractions;
using NatsBroker.Configuration;
using NatsBroker.Server;

namespace NatsBroker.Tests.Server;

/// <summary>An in-process broker on a random loopback port (Garnet-style embedded server for tests).</summary>
internal sealed class EmbeddedServer : IAsyncDisposable
{
    public NatsServer Server { get; }
    public int Port => Server.ClientPort;

    public EmbeddedServer(Action<ServerOptions>? configure = null)
    {
        var options = new ServerOptions { Host = "127.0.0.1", Port = -1 };
        configure?.Invoke(options);
        Server = new NatsServer(options, NullLogger.Instance);
        Server.Start();
    }

    /// <summary>A blocking raw socket with INFO already read.</summary>
    public Socket Connect(string connect = "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true}\r\n")
    {
        var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 5000 };
        s.Connect("127.0.0.1", Port);
        ReadUntil(s, "\r\n"u8);
        s.Send(System.Text.Encoding.ASCII.GetBytes(connect));
        return s;
    }

    /// <summary>Reads until the received data ends with <paramref name="terminator"/>; returns all bytes read.</summary>
    public static byte[] ReadUntil(Socket s, ReadOnlySpan<byte> terminator)
    {
        var ms = new MemoryStream();
        var buf = new byte[65536];
        while (true)
        {
            int n = s.Receive(buf);
            if (n == 0) return ms.ToArray();
            ms.Write(buf, 0, n);
            if (ms.Length >= terminator.Length && ms.GetBuffer().AsSpan(0, (int)ms.Length).EndsWith(terminator)) return ms.ToArray();
        }
    }

    public async ValueTask DisposeAsync() => await Server.DisposeAsync();
}
