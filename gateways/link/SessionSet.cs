using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// A gateway's running client sessions: each runs on the thread pool, a session that throws is logged and lost
/// alone (never the gateway), and a stop waits for the sessions to finish draining, at most a timeout.
/// </summary>
public sealed class SessionSet(ILogger log)
{
    private readonly ConcurrentDictionary<long, Task> _sessions = new();
    private long _next;

    public int Count => _sessions.Count;

    /// <summary>Sessions started since the gateway started.</summary>
    public long Total => Interlocked.Read(ref _next);

    /// <summary>Runs one session until it ends.</summary>
    public void Start(Func<CancellationToken, Task> run, CancellationToken drain)
    {
        long id = Interlocked.Increment(ref _next);
        _sessions[id] = Task.Run(async () =>
        {
            try
            {
                await run(drain).ConfigureAwait(false);
            }
            catch (Exception ex)
            {
                // A bug must not take the gateway down: only this client is lost.
                log.LogError(ex, "Client session failed");
            }
            finally
            {
                _sessions.TryRemove(id, out _);
            }
        });
    }

    /// <summary>After the drain token fired: waits for the sessions to end, at most <paramref name="timeout"/>.</summary>
    public async Task DrainAsync(TimeSpan timeout)
    {
        var pending = _sessions.Values.ToArray();
        if (pending.Length == 0) return;
        log.LogInformation("Draining {Count} client connections", pending.Length);
        await Task.WhenAny(Task.WhenAll(pending), Task.Delay(timeout, CancellationToken.None)).ConfigureAwait(false);
    }
}
