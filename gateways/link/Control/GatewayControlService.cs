using System.Diagnostics;
using Grpc.Core;
using Microsoft.Extensions.Hosting;

namespace NatsBroker.Gateways.Link.Control;

/// <summary>
/// The gRPC control service (gateway_control.proto) over the gateway's <see cref="SessionSet"/> and its host's
/// lifetime: a drain is the host's stop, the same path as SIGTERM (the gateway's service stops accepting and
/// drains its sessions).
/// </summary>
internal sealed class GatewayControlService(GatewayIdentity identity, SessionSet sessions, IHostApplicationLifetime gatewayLifetime)
    : GatewayControl.GatewayControlBase
{
    public override Task<HealthReply> Health(HealthRequest request, ServerCallContext context) =>
        Task.FromResult(new HealthReply
        {
            Gateway = identity.Name,
            Serving = !gatewayLifetime.ApplicationStopping.IsCancellationRequested,
            Pid = Environment.ProcessId,
            UptimeMs = (long)Stopwatch.GetElapsedTime(identity.StartedAt).TotalMilliseconds,
        });

    public override Task<StatsReply> Stats(StatsRequest request, ServerCallContext context) =>
        Task.FromResult(new StatsReply { Gateway = identity.Name, Sessions = sessions.Count, SessionsTotal = sessions.Total });

    public override Task<DrainReply> Drain(DrainRequest request, ServerCallContext context)
    {
        int open = sessions.Count;
        gatewayLifetime.StopApplication();
        return Task.FromResult(new DrainReply { Sessions = open });
    }
}

/// <summary>Which gateway this process is and when it started (for Health).</summary>
public sealed record GatewayIdentity(string Name, long StartedAt);
