using System.Net;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using NatsBroker.Server;

namespace NatsBroker.Monitoring;

/// <summary>
/// The HTTP monitoring listener (nats-server -m / http_port): Kestrel bound to HttpHost:HttpPort (-1 = random port),
/// serving <see cref="MonitorEndpoints"/>. Paths match exactly, as Go's ServeMux does; any method is accepted.
/// </summary>
public sealed partial class MonitoringServer : IAsyncDisposable
{
    private readonly WebApplication _app;
    private int _disposed;

    private MonitoringServer(WebApplication app, MonitorEndpoints endpoints)
    {
        _app = app;
        Endpoints = endpoints;
    }

    /// <summary>The bound port (resolved when HttpPort is -1).</summary>
    public int Port { get; private set; }

    public MonitorEndpoints Endpoints { get; }

    public static async Task<MonitoringServer> StartAsync(NatsServer server, ILogger logger, CancellationToken ct)
    {
        var o = server.Options;
        var address = ResolveAddress(o.HttpHost);
        int port = o.HttpPort < 0 ? 0 : o.HttpPort;

        var builder = WebApplication.CreateEmptyBuilder(new WebApplicationOptions());
        // The broker owns the process lifetime and signals; this host must not install console handlers.
        builder.Services.AddSingleton<IHostLifetime, NoSignalsLifetime>();
        builder.WebHost.UseKestrelCore().ConfigureKestrel(k =>
        {
            k.AddServerHeader = false;
            k.Limits.MaxRequestHeadersTotalSize = 1 << 20; // nats-server: MaxHeaderBytes 1 MiB
            k.Listen(address, port);
        });
        var app = builder.Build();
        var endpoints = new MonitorEndpoints(server);
        var monitor = new MonitoringServer(app, endpoints);
        app.Run(monitor.HandleAsync);
        try
        {
            await app.StartAsync(ct).ConfigureAwait(false);
        }
        catch (IOException ex)
        {
            await app.DisposeAsync().ConfigureAwait(false);
            throw new IOException($"can't listen to the monitor port: {ex.Message}", ex);
        }

        var addresses = app.Services.GetRequiredService<IServer>().Features.Get<IServerAddressesFeature>()?.Addresses;
        monitor.Port = addresses?.Select(a => new Uri(a).Port).FirstOrDefault(p => p > 0) ?? port;
        endpoints.BoundPort = monitor.Port;
        LogStarting(logger, FormatHostPort(o.HttpHost, monitor.Port));
        return monitor;
    }

    private async Task HandleAsync(HttpContext ctx)
    {
        var query = ctx.Request.Query;
        var response = Endpoints.Handle(ctx.Request.Path.Value ?? "/", name =>
            query.TryGetValue(name, out var v) && v.Count > 0 ? v[0] : null);
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

    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0) return;
        try
        {
            await _app.StopAsync(TimeSpan.FromSeconds(2)).ConfigureAwait(false);
        }
        finally
        {
            await _app.DisposeAsync().ConfigureAwait(false);
        }
    }

    private sealed class NoSignalsLifetime : IHostLifetime
    {
        public Task WaitForStartAsync(CancellationToken cancellationToken) => Task.CompletedTask;
        public Task StopAsync(CancellationToken cancellationToken) => Task.CompletedTask;
    }
}
