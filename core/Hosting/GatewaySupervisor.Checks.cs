using System.Diagnostics;
using NatsBroker.Configuration;

namespace NatsBroker.Hosting;

/// <summary>
/// The supervised gateways' config checks, run before the core binds anything or says it is ready. nats-server
/// checks its whole config (server/server.go NewServer: validateOptions, then the TLS files) before it listens, and
/// refuses with "nats-server: &lt;reason&gt;"; the gateways read their own blocks, so the core runs each one with
/// <c>-t</c> (gateways/link GatewayProgram: load the block, read the certificate files, exit) and refuses with the
/// gateway's reason. Before this a block a gateway refused, or a gateway that was not built, showed only once the
/// core had bound its ports (and, for a missing executable, after its listeners were up).
/// </summary>
public sealed partial class GatewaySupervisor
{
    /// <summary>How long a gateway's <c>-t</c> may take: a JIT start of a framework-dependent gateway on a loaded
    /// machine is a few hundred milliseconds; the limit only guards against a gateway that hangs.</summary>
    private static readonly TimeSpan CheckTimeout = TimeSpan.FromSeconds(30);

    /// <summary>
    /// Runs every configured gateway's check at once (they are independent processes; in sequence, three JIT starts
    /// would add up). Returns the first refusal as nats-server words a config error (without its "nats-server: "
    /// prefix, which the caller adds), or null when every gateway accepts its blocks.
    /// </summary>
    public string? CheckGateways()
    {
        if (!Enabled) return null;
        var checks = new List<Task<string?>>();
        foreach (var kind in Configured())
        {
            if (_options.ConfigFile is null)
                return $"{kind.Name}: a configuration file is required (the gateway reads it)";
            if (FindGateway(kind) is not { } start)
                return $"{kind.Name}: the gateway was not found (build gateways/{kind.Folder} or set {kind.PathVariable})";
            if (CoreSideCheck(kind) is { } refused) return refused;
            start.ArgumentList.Add("-t");
            checks.Add(Task.Run(() => RunCheckAsync(kind, start, _options.ConfigFile)));
        }
        var results = Task.WhenAll(checks).GetAwaiter().GetResult();
        return results.FirstOrDefault(r => r is not null);
    }

    /// <summary>For <c>-t</c>: the checks of <see cref="CheckGateways"/> for a config that is not run.</summary>
    public static string? Check(ServerOptions options) =>
        IsNeeded(options) ? new GatewaySupervisor(options, Microsoft.Extensions.Logging.Abstractions.NullLoggerFactory.Instance).CheckGateways() : null;

    /// <summary>
    /// What nats-server refuses about a gateway's block that only the core can tell, because it depends on the rest of
    /// the config (server/mqtt.go validateMQTTOptions, errMQTTStandaloneNeedsJetStream: MQTT keeps its sessions,
    /// retained messages and QoS 1/2 state in JetStream, and a standalone server without it cannot serve them).
    /// </summary>
    private string? CoreSideCheck(GatewayKind kind) =>
        kind == Mqtt && _options.MqttPort != 0 && !_options.JetStream
            ? "mqtt requires JetStream to be enabled if running in standalone mode"
            : null;

    private static async Task<string?> RunCheckAsync(GatewayKind kind, ProcessStartInfo start, string? given)
    {
        start.RedirectStandardError = true;
        start.RedirectStandardOutput = true;
        using var child = Process.Start(start);
        if (child is null) return $"{kind.Name}: the gateway could not be started";
        var stderr = child.StandardError.ReadToEndAsync();
        var stdout = child.StandardOutput.ReadToEndAsync();
        using var timeout = new CancellationTokenSource(CheckTimeout);
        try
        {
            await child.WaitForExitAsync(timeout.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            child.Kill(entireProcessTree: true);
            return $"{kind.Name}: the gateway did not check its configuration within {CheckTimeout.TotalSeconds} s";
        }
        var text = (await stderr.ConfigureAwait(false)).Trim();
        _ = await stdout.ConfigureAwait(false);
        if (child.ExitCode == 0) return null;
        // The gateway prefixes its errors with its own name ("websocket gateway: ..."); the core refuses in
        // nats-server's words, which have no such prefix.
        var lines = text.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)
            .Select(l => l.StartsWith(kind.DisplayName + ": ", StringComparison.Ordinal) ? l[(kind.DisplayName.Length + 2)..] : l);
        var reason = string.Join(Environment.NewLine, lines);
        // The core passes the child the config's full path; nats-server names the file as it was given (-c).
        if (given is not null && Path.GetFullPath(given) is var full && full != given) reason = reason.Replace(full + ":", given + ":", StringComparison.Ordinal);
        return reason.Length > 0 ? reason : $"{kind.Name}: the gateway refused the configuration (exit code {child.ExitCode})";
    }
}
