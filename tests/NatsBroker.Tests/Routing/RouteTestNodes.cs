using Microsoft.Extensions.Logging.Abstractions;
using NatsBroker.Configuration;
using NatsBroker.Server;

namespace NatsBroker.Tests.Routing;

/// <summary>Our node in-process for the route tests: options from config text (as a user writes it), on loopback with a random client port.</summary>
internal static class RouteTestNodes
{
    public static NatsServer StartOurs(string configText, Action<ServerOptions>? adjust = null)
    {
        string path = Path.Combine(Path.GetTempPath(), "natsbroker-route-" + Guid.NewGuid().ToString("N") + ".conf");
        File.WriteAllText(path, configText);
        ServerOptions options;
        try
        {
            options = ConfigLoader.Load(path);
        }
        finally
        {
            File.Delete(path);
        }
        options.Host = "127.0.0.1";
        options.Port = -1;
        adjust?.Invoke(options);
        var server = new NatsServer(options, NullLogger.Instance);
        server.Start();
        return server;
    }

    /// <summary>A <c>cluster {}</c> block on loopback soliciting the given route ports.</summary>
    public static string ClusterBlock(string name, int listen, params int[] routes) =>
        $"cluster {{ name: {name}, listen: 127.0.0.1:{listen}, routes: [{string.Join(", ", routes.Select(p => $"nats-route://127.0.0.1:{p}"))}] }}\n";
}
