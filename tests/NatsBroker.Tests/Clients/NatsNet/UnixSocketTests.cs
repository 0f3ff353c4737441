using System.Net.Sockets;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;
using static NatsBroker.Tests.Clients.NatsNet.NatsNetKit;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>
/// NATS.Net over our Unix domain socket listener (<c>--unix_socket</c>, our extension: nats-server has none).
/// NATS.Client.Core 3.3.2 has no <c>unix://</c> URL scheme, but it takes a transport through
/// <see cref="NatsOpts.SocketConnectionFactory"/>; <see cref="UnixSocketConnectionFactory"/> is that transport,
/// so the whole client (handshake, PING/PONG, subscriptions, requests) runs over the socket file.
/// </summary>
public sealed class UnixSocketTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task NatsNet_over_the_unix_socket_talks_to_tcp_clients_both_ways()
    {
        Prerequisites.RequireOursUnixSocket(output);
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { UnixSocket = true }, output);
        var factory = new UnixSocketConnectionFactory(server.UnixSocketPath!);
        await using var uds = await ConnectAsync(server, "uds", o => o with { SocketConnectionFactory = factory });
        await using var tcp = await ConnectAsync(server, "tcp");
        Assert.True(factory.Connections > 0, "the client did not use the Unix socket transport");

        await using var udsSub = await uds.SubscribeCoreAsync<string>("ux.in");
        await using var tcpSub = await tcp.SubscribeCoreAsync<string>("ux.out");
        await BarrierAsync(uds, tcp);

        await tcp.PublishAsync("ux.in", "tcp->uds");
        await uds.PublishAsync("ux.out", "uds->tcp");
        Assert.Equal("tcp->uds", (await NextAsync(udsSub, "ux.in")).Data);
        Assert.Equal("uds->tcp", (await NextAsync(tcpSub, "ux.out")).Data);

        // Request/reply with the responder on the socket and the requester on TCP.
        await using var service = await uds.SubscribeCoreAsync<string>("ux.svc");
        await uds.PingAsync();
        var responder = Task.Run(async () =>
        {
            var m = await NextAsync(service, "ux.svc");
            await m.ReplyAsync("uds says " + m.Data);
        });
        Assert.Equal("uds says hi", (await tcp.RequestAsync<string, string>("ux.svc", "hi")).Data);
        await responder;
    }

    /// <summary>A NATS.Net transport that connects to a Unix domain socket file instead of the URL's host and port.</summary>
    private sealed class UnixSocketConnectionFactory(string path) : INatsSocketConnectionFactory
    {
        private int _connections;

        public int Connections => Volatile.Read(ref _connections);

        public async ValueTask<INatsSocketConnection> ConnectAsync(Uri uri, NatsOpts opts, CancellationToken cancellationToken)
        {
            var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            try
            {
                await socket.ConnectAsync(new UnixDomainSocketEndPoint(path), cancellationToken);
                Interlocked.Increment(ref _connections);
                return new UnixSocketConnection(socket);
            }
            catch
            {
                socket.Dispose();
                throw;
            }
        }
    }

    private sealed class UnixSocketConnection(Socket socket) : INatsSocketConnection
    {
        public ValueTask<int> SendAsync(ReadOnlyMemory<byte> buffer) => socket.SendAsync(buffer, SocketFlags.None);

        public ValueTask<int> ReceiveAsync(Memory<byte> buffer) => socket.ReceiveAsync(buffer, SocketFlags.None);

        public ValueTask DisposeAsync()
        {
            socket.Dispose();
            return default;
        }
    }
}
