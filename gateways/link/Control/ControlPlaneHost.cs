using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace NatsBroker.Gateways.Link.Control;

/// <summary>
/// Serves <see cref="GatewayControlService"/> with Kestrel, HTTP/2 cleartext only, on a Unix socket created
/// owner-only (0600, as the core's own socket): only the gateway's user (or root) can drain it. A small web host of
/// its own next to the gateway's generic host, started only with <c>--control-socket</c>, so a gateway without a
/// control plane loads no ASP.NET Core.
/// </summary>
internal sealed class ControlPlaneHost(string socketPath, GatewayIdentity identity, SessionSet sessions, IHostApplicationLifetime gatewayLifetime,
    ILoggerFactory loggers) : IHostedService, IAsyncDisposable
{
    private WebApplication? _app;

    public async Task StartAsync(CancellationToken cancellationToken)
    {
        if (File.Exists(socketPath)) File.Delete(socketPath); // a stale socket from a killed run
        var builder = WebApplication.CreateSlimBuilder(new WebApplicationOptions { ContentRootPath = AppContext.BaseDirectory });
        builder.Logging.ClearProviders();
        builder.Services.AddSingleton(loggers); // the gateway's own logging (its format, its level)
        builder.WebHost.ConfigureKestrel(k => k.ListenUnixSocket(socketPath, l => l.Protocols = HttpProtocols.Http2));
        builder.Services.AddGrpc();
        builder.Services.AddSingleton(identity);
        builder.Services.AddSingleton(sessions);
        builder.Services.AddSingleton(gatewayLifetime);
        _app = builder.Build();
        _app.MapGrpcService<GatewayControlService>();
        await _app.StartAsync(cancellationToken).ConfigureAwait(false);
        if (!OperatingSystem.IsWindows()) File.SetUnixFileMode(socketPath, UnixFileMode.UserRead | UnixFileMode.UserWrite);
        loggers.CreateLogger("NatsBroker.Gateways.Control").LogInformation("Control plane (gRPC) on {Socket}", socketPath);
    }

    public async Task StopAsync(CancellationToken cancellationToken)
    {
        if (_app is not null) await _app.StopAsync(cancellationToken).ConfigureAwait(false);
        try { File.Delete(socketPath); }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException) { }
    }

    public async ValueTask DisposeAsync()
    {
        if (_app is not null) await _app.DisposeAsync().ConfigureAwait(false);
    }
}
