using System.Diagnostics;
using Microsoft.Extensions.Logging;

namespace NatsBroker.Hosting;

/// <summary>
/// When the core may say it is ready with gateways serving its clients: tools and client test harnesses connect the
/// moment the ports file exists or "Server is ready" is logged (NATS.Net's harness waits for the line), so both wait
/// until each supervised gateway accepts on its own port: the tls-terminator on the client port, the websocket and
/// MQTT gateways on their blocks' ports. A gateway that exits during this wait (a bad block, a port in use) fails the
/// start with its reason instead of being restarted in a loop while nothing listens.
/// </summary>
public sealed partial class GatewaySupervisor
{
    // Set once the start-up wait is over: from then on a gateway that exits is restarted.
    private volatile bool _startedUp;
    private readonly TaskCompletionSource<string> _startFailure = new(TaskCreationOptions.RunContinuationsAsynchronously);

    private void FailedToStart(GatewayKind kind, int exitCode) =>
        _startFailure.TrySetResult($"The {kind.Name} gateway exited with code {exitCode} while starting (its error is logged above)");

    /// <summary>The address each configured gateway accepts on; a port of 0 or below (random) cannot be probed.</summary>
    private IEnumerable<(GatewayKind Kind, string Host, int Port)> Endpoints()
    {
        if (_options.TlsConfigured && _options.Port > 0) yield return (Terminator, _options.Host, _options.Port);
        if (_options.WebSocketConfigured && _options.WebSocketPort > 0) yield return (WebSocket, _options.WebSocketHost, _options.WebSocketPort);
        if (_options.MqttConfigured && _options.MqttPort > 0) yield return (Mqtt, _options.MqttHost, _options.MqttPort);
    }

    /// <summary>
    /// Waits until every supervised gateway accepts, at most <paramref name="timeout"/> (then logs which did not and
    /// returns: the supervisor keeps it running). Returns the reason when a gateway exited before accepting, else null.
    /// The probe is a TCP connect retried every 2 ms: a refused connect costs microseconds, and test harnesses
    /// (nats.node's gives a server 1 s) wait for what the core writes after this.
    /// </summary>
    public async Task<string?> WaitForGatewaysAsync(TimeSpan timeout)
    {
        if (!Enabled) return null;
        try
        {
            var clock = Stopwatch.StartNew();
            foreach (var (kind, host, port) in Endpoints())
            {
                var endpoint = await ResolveAsync(kind, host, port).ConfigureAwait(false);
                if (endpoint is null) continue;
                bool accepted = false;
                while (clock.Elapsed < timeout && !_stopping.IsCancellationRequested && !_startFailure.Task.IsCompleted)
                {
                    if (accepted = await AcceptsAsync(endpoint).ConfigureAwait(false)) break;
                    await Task.WhenAny(Task.Delay(2), _startFailure.Task).ConfigureAwait(false);
                }
                if (_startFailure.Task.IsCompleted) break;
                if (!accepted) _log.LogWarning("The {Gateway} gateway did not accept on {Host}:{Port} within {Timeout}", kind.Name, host, port, timeout);
            }
            // A gateway without a port to probe (random) is not waited for: its failure is caught here only when it
            // came while the others were probed; later, it is restarted like any crash.
            return _startFailure.Task.IsCompleted ? await _startFailure.Task.ConfigureAwait(false) : null;
        }
        finally
        {
            _startedUp = true;
        }
    }

    private async Task<System.Net.IPEndPoint?> ResolveAsync(GatewayKind kind, string host, int port)
    {
        if (host is "" or "0.0.0.0" or "::" or "*") host = "127.0.0.1";
        try
        {
            var address = System.Net.IPAddress.TryParse(host, out var ip) ? ip
                : (await System.Net.Dns.GetHostAddressesAsync(host).ConfigureAwait(false))[0];
            return new System.Net.IPEndPoint(address, port);
        }
        catch (System.Net.Sockets.SocketException ex)
        {
            _log.LogWarning("Cannot resolve {Host} to wait for the {Gateway} gateway: {Error}", host, kind.Name, ex.Message);
            return null;
        }
    }

    /// <summary>
    /// One connect attempt that reports a refusal as false rather than an exception: a Native AOT exception costs
    /// an unwind and, the first time, the stack-trace metadata (milliseconds), and a start probes dozens of times.
    /// </summary>
    private static async Task<bool> AcceptsAsync(System.Net.IPEndPoint endpoint)
    {
        using var probe = new System.Net.Sockets.Socket(endpoint.AddressFamily, System.Net.Sockets.SocketType.Stream, System.Net.Sockets.ProtocolType.Tcp);
        using var attempt = new System.Net.Sockets.SocketAsyncEventArgs { RemoteEndPoint = endpoint };
        var completed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        attempt.Completed += (_, _) => completed.TrySetResult();
        if (probe.ConnectAsync(attempt)) await completed.Task.ConfigureAwait(false);
        return attempt.SocketError == System.Net.Sockets.SocketError.Success;
    }
}
