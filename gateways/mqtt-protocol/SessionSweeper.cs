using System.Collections.Concurrent;
using System.Net.Sockets;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Gateways.Link;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Ours: deletes expired sessions nobody reconnects to (MQTT 5 section 3.1.2.11.2: the server discards the session
/// once its Session Expiry Interval has passed). nats-server has no session expiry (no MQTT 5; a 3.1.1 session is kept
/// until a clean-session CONNECT with its ID), so nothing there to follow. One timer (<c>mqtt { session_sweep_interval }</c>,
/// 30 s by default, 0 = off) walks the <c>$MQTT_sess</c> records of each account this process has seen a client of,
/// and for each record whose <c>"expires"</c> (MqttSession.Expiry.cs) has passed deletes its durable consumers and then
/// the record, as a reconnecting client would (MqttSession.Durable.cs DeleteSessionAsync).
/// Races: a client ID is swept only while no connection of this process has it, claimed in the
/// <see cref="SessionRegistry"/> (a connection arriving meanwhile waits for the sweep), and its record is read again
/// under the claim, so a session resumed and left again since the walk read it is not touched.
/// An account is reached over a link of its own, opened for each sweep with the CONNECT of the account's latest client
/// (kept in memory only); an account whose walk finds no session waiting to expire is forgotten until its next client.
/// </summary>
internal sealed class SessionSweeper(MqttOptions options, GatewayEnvironment environment, ProxySigner signer, SessionRegistry registry, ILogger log)
    : IDisposable
{
    private sealed record Account(JsonObject Connect, ProxiedClient Client);

    private readonly ConcurrentDictionary<string, Account> _accounts = new(StringComparer.Ordinal);
    private readonly CancellationTokenSource _stop = new();

    /// <summary>How to reach <paramref name="account"/>'s streams: a client's CONNECT fields and proxy info.</summary>
    public void Remember(string account, JsonObject connect, ProxiedClient client)
    {
        var fields = connect.DeepClone().AsObject();
        fields["name"] = "mqtt session sweeper";
        _accounts[account] = new Account(fields, client);
    }

    public void Start()
    {
        // Runs until Dispose; every failure of a sweep is logged inside the loop.
        if (options.SessionSweepInterval > TimeSpan.Zero) _ = Task.Run(LoopAsync, CancellationToken.None);
    }

    private async Task LoopAsync()
    {
        var ct = _stop.Token;
        using var timer = new PeriodicTimer(options.SessionSweepInterval);
        try
        {
            while (await timer.WaitForNextTickAsync(ct).ConfigureAwait(false))
            {
                foreach (var (name, account) in _accounts)
                {
                    bool waiting;
                    try
                    {
                        waiting = await SweepAsync(account, ct).ConfigureAwait(false);
                    }
                    catch (Exception ex) when ((ex is JetStreamException or IOException or SocketException or TimeoutException or ObjectDisposedException
                        or InvalidOperationException or FormatException or System.Text.Json.JsonException) && !ct.IsCancellationRequested)
                    {
                        log.LogWarning("mqtt session sweep of account \"{Account}\" failed: {Error}", name, ex.Message);
                        continue;
                    }
                    // Only this entry: a client that came meanwhile replaced it, and keeps its account swept.
                    if (!waiting) _accounts.TryRemove(new KeyValuePair<string, Account>(name, account));
                }
            }
        }
        catch (Exception ex) when (ex is OperationCanceledException or ObjectDisposedException && ct.IsCancellationRequested)
        {
            // stopping
        }
    }

    /// <summary>One account: true when sessions are still waiting to expire (the account stays in the list).</summary>
    private async Task<bool> SweepAsync(Account account, CancellationToken ct)
    {
        var core = await CoreLink.ConnectAsync(environment.CoreSocket, ct).ConfigureAwait(false);
        await using var nats = new NatsLink(core);
        string? refused = await nats.ConnectAsync(MqttSession.SignedConnect(account.Connect, account.Client, signer, core), ct).ConfigureAwait(false);
        if (refused is not null)
        {
            log.LogDebug("mqtt session sweeper refused by the core: {Error}", refused);
            return false;
        }
        using var stopReading = CancellationTokenSource.CreateLinkedTokenSource(ct);
        var reading = Task.Run(() => nats.RunAsync(NoDeliveries.Instance, stopReading.Token), CancellationToken.None);
        try
        {
            return await WalkAsync(new JetStreamApi(nats, options), ct).ConfigureAwait(false);
        }
        finally
        {
            await stopReading.CancelAsync().ConfigureAwait(false);
            nats.ShutdownSend();
            try
            {
                await reading.ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException)
            {
                // the link's end
            }
        }
    }

    /// <summary>Every record in $MQTT_sess in sequence order (one per subject: max_msgs_per_subject 1).</summary>
    private async Task<bool> WalkAsync(JetStreamApi js, CancellationToken ct)
    {
        bool waiting = false;
        long seq = 1;
        while (true)
        {
            JsonObject reply;
            try
            {
                reply = await js.RequestAsync("$JS.API.STREAM.MSG.GET." + JetStreamApi.SessionStream,
                    new JsonObject { ["seq"] = seq, ["next_by_subj"] = JetStreamApi.SessionPrefix + ">" }, ct).ConfigureAwait(false);
            }
            catch (JetStreamException e) when (e.ErrorCode is NoMessageFound or StreamNotFound)
            {
                return waiting;
            }
            if (reply["message"] is not JsonObject message || message["seq"]?.GetValue<long>() is not long at) return waiting;
            seq = at + 1;
            var (record, subject) = Parse(message);
            if (record?["expires"] is not JsonNode expires) continue;
            if (expires.GetValue<long>() > DateTimeOffset.UtcNow.ToUnixTimeMilliseconds())
            {
                waiting = true;
                continue;
            }
            if (record["id"]?.GetValue<string>() is not { } clientId || subject is null) continue;
            if (!registry.TryBeginSweep(clientId))
            {
                waiting = true; // a connection has it now; it may leave it again
                continue;
            }
            try
            {
                await DeleteIfExpiredAsync(js, clientId, subject, ct).ConfigureAwait(false);
            }
            finally
            {
                registry.EndSweep(clientId);
            }
        }
    }

    private const int NoMessageFound = 10037, StreamNotFound = 10059, ConsumerNotFound = 10014;

    /// <summary>Under the claim: the record as it is now, deleted (consumers, then the record) only if still expired.</summary>
    private async Task DeleteIfExpiredAsync(JetStreamApi js, string clientId, string subject, CancellationToken ct)
    {
        JsonObject reply;
        try
        {
            reply = await js.RequestAsync("$JS.API.STREAM.MSG.GET." + JetStreamApi.SessionStream, new JsonObject { ["last_by_subj"] = subject }, ct).ConfigureAwait(false);
        }
        catch (JetStreamException e) when (e.ErrorCode == NoMessageFound)
        {
            return;
        }
        if (reply["message"] is not JsonObject message) return;
        var (record, _) = Parse(message);
        if (record?["id"]?.GetValue<string>() != clientId || record["expires"] is not JsonNode expires
            || expires.GetValue<long>() > DateTimeOffset.UtcNow.ToUnixTimeMilliseconds()) return;
        if (record["cons"] is JsonObject cons)
        {
            foreach (var (_, config) in cons)
            {
                if (config?["durable_name"]?.GetValue<string>() is not { } name) continue;
                try
                {
                    await js.RequestAsync($"$JS.API.CONSUMER.DELETE.{JetStreamApi.MessageStream}.{name}", null, ct).ConfigureAwait(false);
                }
                catch (JetStreamException e) when (e.ErrorCode == ConsumerNotFound)
                {
                    // already gone
                }
            }
        }
        await js.RequestAsync("$JS.API.STREAM.PURGE." + JetStreamApi.SessionStream, new JsonObject { ["filter"] = subject }, ct).ConfigureAwait(false);
        log.LogDebug("mqtt session of client {Id} expired: deleted", clientId);
    }

    private static (JsonObject? Record, string? Subject) Parse(JsonObject message)
    {
        var data = message["data"]?.GetValue<string>();
        var record = string.IsNullOrEmpty(data) ? null
            : System.Text.Json.JsonSerializer.Deserialize(Convert.FromBase64String(data), MqttJsonContext.Default.JsonObject);
        return (record, message["subject"]?.GetValue<string>());
    }

    /// <summary>
    /// Stops the loop: what it awaits is cancelled. Not waited for: a sweep cut short leaves at worst a record whose
    /// consumers are gone, which the next sweep or a reconnecting client deletes (consumer not found is no error).
    /// </summary>
    public void Dispose()
    {
        _stop.Cancel();
        _stop.Dispose();
    }

    /// <summary>The sweeper's link subscribes to nothing but its request inbox.</summary>
    internal sealed class NoDeliveries : INatsDelivery
    {
        public static readonly NoDeliveries Instance = new();
        public ValueTask DeliverAsync(NatsMessage message) => ValueTask.CompletedTask;
        public ValueTask FlushDeliveriesAsync() => ValueTask.CompletedTask;
    }
}
