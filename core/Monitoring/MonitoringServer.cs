using System.Net;
using System.Net.Sockets;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.AspNetCore.Server.Kestrel.Transport.Sockets;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using Microsoft.Extensions.Options;
using NatsBroker.Server;

namespace NatsBroker.Monitoring;

/// <summary>
/// The HTTP monitoring listener (nats-server -m / http_port) on HttpHost:HttpPort (-1 = random port), serving
/// <see cref="MonitorEndpoints"/>. Paths match exactly, as Go's ServeMux does; any method is accepted.
/// <para>
/// The port is bound and listening when <see cref="StartAsync"/> returns (its number goes in the ports file, a
/// port in use fails start-up), but Kestrel starts only when the first connection is waiting in the listen
/// backlog: it then takes over the bound socket and accepts that connection. Starting Kestrel cost ~60 ms of CPU
/// and ~10 MB of RSS per process on the 2-core bench VM, paid by every server a test suite starts (nats.node's
/// harness always passes http: 127.0.0.1:-1) though few of them are ever asked for /varz.
/// </para>
/// </summary>
public sealed partial class MonitoringServer : IAsyncDisposable
{
    private readonly ILogger _logger;
    private readonly Socket _listener;
    private readonly Lock _gate = new();
    private readonly TaskCompletionSource _kestrelStarted = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private KestrelHost? _kestrel;
    private bool _disposed;

    private MonitoringServer(ILogger logger, Socket listener, MonitorEndpoints endpoints)
    {
        _logger = logger;
        _listener = listener;
        Endpoints = endpoints;
        Port = ((IPEndPoint)listener.LocalEndPoint!).Port;
        endpoints.BoundPort = Port;
    }

    /// <summary>The bound port (resolved when HttpPort is -1).</summary>
    public int Port { get; }

    public MonitorEndpoints Endpoints { get; }

    /// <summary>Binds and listens; Kestrel itself starts on the first connection (see the type's remarks).</summary>
    public static Task<MonitoringServer> StartAsync(NatsServer server, ILogger logger, CancellationToken ct)
    {
        ct.ThrowIfCancellationRequested();
        var o = server.Options;
        var listener = Bind(ResolveAddress(o.HttpHost), o.HttpPort < 0 ? 0 : o.HttpPort);
        var monitor = new MonitoringServer(logger, listener, new MonitorEndpoints(server));
        LogStarting(logger, FormatHostPort(o.HttpHost, monitor.Port));
        // A dedicated small thread waits for the first connection: a thread-pool thread must not block in poll.
        new Thread(monitor.StartOnFirstConnection, maxStackSize: 256 * 1024) { IsBackground = true, Name = "http-monitor" }.Start();
        return Task.FromResult(monitor);
    }

    /// <summary>Completes once Kestrel serves the port (after the first connection arrived); for tests and diagnostics.</summary>
    internal Task KestrelStarted => _kestrelStarted.Task;

    private static Socket Bind(IPAddress address, int port)
    {
        var socket = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            // As Kestrel binds: the IPv6 wildcard also takes IPv4.
            if (address.Equals(IPAddress.IPv6Any)) socket.DualMode = true;
            NatsBroker.Transport.Sockets.ListenerSocket.AllowRestartWhileInTimeWait(socket);
            socket.Bind(new IPEndPoint(address, port));
            socket.Listen(512);
            return socket;
        }
        catch (SocketException ex)
        {
            socket.Dispose();
            throw new IOException($"can't listen to the monitor port: {ex.Message}", ex);
        }
    }

    private void StartOnFirstConnection()
    {
        try
        {
            // A pending connection makes the listening socket readable. The timeout only bounds how long a
            // disposed monitor's thread lingers.
            while (!Volatile.Read(ref _disposed) && !_listener.Poll(TimeSpan.FromMilliseconds(500), SelectMode.SelectRead))
            {
            }
        }
        catch (Exception ex) when (ex is ObjectDisposedException or SocketException)
        {
            _kestrelStarted.TrySetCanceled();
            return;
        }
        try
        {
            lock (_gate)
            {
                if (_disposed)
                {
                    _kestrelStarted.TrySetCanceled();
                    return;
                }
                _kestrel = KestrelHost.Start(_listener, this);
            }
            _kestrelStarted.TrySetResult();
        }
        catch (Exception ex)
        {
            // The broker keeps serving clients; only monitoring is lost, and the reason is logged.
            LogKestrelFailed(_logger, ex.Message);
            _kestrelStarted.TrySetException(ex);
        }
    }

    private async Task HandleAsync(HttpContext ctx)
    {
        var query = ctx.Request.Query;
        var response = await Endpoints.HandleAsync(ctx.Request.Path.Value ?? "/", name =>
            query.TryGetValue(name, out var v) && v.Count > 0 ? v[0] : null, ctx.Request.Headers.Accept.ToString(), ctx.RequestAborted).ConfigureAwait(false);
        ctx.Response.StatusCode = response.Status;
        ctx.Response.ContentType = response.ContentType;
        if (response.Status == StatusCodes.Status404NotFound) ctx.Response.Headers.XContentTypeOptions = "nosniff";
        ctx.Response.ContentLength = response.Body.Length;
        await ctx.Response.Body.WriteAsync(response.Body, ctx.RequestAborted).ConfigureAwait(false);
    }

    private static IPAddress ResolveAddress(string host) =>
        host is "0.0.0.0" or "" or "*" ? IPAddress.Any
        : host is "::" ? IPAddress.IPv6Any
        : IPAddress.TryParse(host, out var ip) ? ip
        : Dns.GetHostAddresses(host).First();

    /// <summary>Go's net.JoinHostPort: IPv6 literals in brackets.</summary>
    private static string FormatHostPort(string host, int port) =>
        host.Contains(':', StringComparison.Ordinal) ? $"[{host}]:{port}" : $"{host}:{port}";

    [LoggerMessage(Level = LogLevel.Information, Message = "Starting http monitor on {HostPort}")]
    private static partial void LogStarting(ILogger logger, string hostPort);

    [LoggerMessage(Level = LogLevel.Error, Message = "Error starting http monitor: {Error}")]
    private static partial void LogKestrelFailed(ILogger logger, string error);

    public async ValueTask DisposeAsync()
    {
        KestrelHost? kestrel;
        lock (_gate)
        {
            if (_disposed) return;
            _disposed = true;
            kestrel = _kestrel;
        }
        // Kestrel owns the socket once started; before that it is ours to close.
        if (kestrel is null) _listener.Dispose();
        else await kestrel.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Kestrel over an already bound socket, without the generic host: KestrelServer with the socket transport and
    /// a minimal IHttpApplication. The web host's DI container, configuration and hosting pipeline added ~20 ms of
    /// CPU to every first request (nats.node's harness asks for /varz right after the ports file). A separate
    /// type so that nothing of ASP.NET Core loads before it starts.
    /// </summary>
    private sealed class KestrelHost(KestrelServer server) : IAsyncDisposable
    {
        public static KestrelHost Start(Socket listener, MonitoringServer monitor)
        {
            var loggers = NullLoggerFactory.Instance;
            var options = new KestrelServerOptions { AddServerHeader = false };
            options.Limits.MaxRequestHeadersTotalSize = 1 << 20; // nats-server: MaxHeaderBytes 1 MiB
            // Kestrel reads ApplicationServices while binding; nothing is resolved from it.
            options.ApplicationServices = EmptyServices.Instance;
            options.Listen((IPEndPoint)listener.LocalEndPoint!);
            // Kestrel listens on the socket bound at start-up (it calls Listen again, which only sets the backlog).
            var transport = new SocketTransportFactory(
                Options.Create(new SocketTransportOptions { CreateBoundListenSocket = _ => listener }), loggers);
            var server = new KestrelServer(Options.Create(options), transport, loggers);
            server.StartAsync(new Application(monitor), CancellationToken.None).GetAwaiter().GetResult();
            return new KestrelHost(server);
        }

        public async ValueTask DisposeAsync()
        {
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(2));
            try
            {
                await server.StopAsync(timeout.Token).ConfigureAwait(false);
            }
            finally
            {
                server.Dispose();
            }
        }
    }

    /// <summary>Each request as a <see cref="DefaultHttpContext"/> over Kestrel's features, handled by the monitor.</summary>
    private sealed class Application(MonitoringServer monitor) : IHttpApplication<HttpContext>
    {
        public HttpContext CreateContext(IFeatureCollection contextFeatures) => new DefaultHttpContext(contextFeatures);
        public Task ProcessRequestAsync(HttpContext context) => monitor.HandleAsync(context);
        public void DisposeContext(HttpContext context, Exception? exception) { }
    }

    private sealed class EmptyServices : IServiceProvider
    {
        public static readonly EmptyServices Instance = new();
        public object? GetService(Type serviceType) => null;
    }
}
