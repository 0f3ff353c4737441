using System.Net.Sockets;
using Grpc.Net.Client;

namespace NatsBroker.Gateways.Link.Control;

/// <summary>A Grpc.Net.Client channel to a gateway's control socket (HTTP/2 cleartext over the Unix socket).</summary>
public static class ControlClient
{
    /// <summary>Zero counts are printed too (proto3's JSON leaves default values out otherwise).</summary>
    private static readonly Google.Protobuf.JsonFormatter Json = new(Google.Protobuf.JsonFormatter.Settings.Default.WithFormatDefaultValues(true));

    public static GrpcChannel Channel(string socketPath)
    {
        var handler = new SocketsHttpHandler
        {
            ConnectCallback = async (_, ct) =>
            {
                var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
                try
                {
                    await socket.ConnectAsync(new UnixDomainSocketEndPoint(socketPath), ct).ConfigureAwait(false);
                    return new NetworkStream(socket, ownsSocket: true);
                }
                catch
                {
                    socket.Dispose();
                    throw;
                }
            },
        };
        // The authority is not used to connect (the callback does); gRPC needs an http:// address for cleartext.
        return GrpcChannel.ForAddress("http://gateway.control", new GrpcChannelOptions { HttpHandler = handler, DisposeHttpClient = true });
    }

    /// <summary><c>ctl SOCKET health|stats|drain</c>: calls the gateway and prints its answer (JSON); 0 on success.</summary>
    public static async Task<int> RunCommandAsync(string socketPath, string command, TextWriter output, TextWriter error)
    {
        ArgumentNullException.ThrowIfNull(output);
        ArgumentNullException.ThrowIfNull(error);
        using var channel = Channel(socketPath);
        var client = new GatewayControl.GatewayControlClient(channel);
        try
        {
            Google.Protobuf.IMessage reply = command switch
            {
                "health" => await client.HealthAsync(new HealthRequest(), deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync.ConfigureAwait(false),
                "stats" => await client.StatsAsync(new StatsRequest(), deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync.ConfigureAwait(false),
                "drain" => await client.DrainAsync(new DrainRequest(), deadline: DateTime.UtcNow.AddSeconds(10)).ResponseAsync.ConfigureAwait(false),
                _ => throw new ArgumentException($"unknown control command \"{command}\" (health, stats, drain)"),
            };
            await output.WriteLineAsync(Json.Format(reply)).ConfigureAwait(false);
            return 0;
        }
        catch (Grpc.Core.RpcException ex)
        {
            await error.WriteLineAsync($"control {command}: {ex.Status.Detail}").ConfigureAwait(false);
            return 1;
        }
        catch (ArgumentException ex)
        {
            await error.WriteLineAsync(ex.Message).ConfigureAwait(false);
            return 2;
        }
    }
}
