using System.Diagnostics;
using System.Text;
using System.Text.Json;
using NATS.Client.Core;

namespace NatsBroker.Tests.JetStream;

/// <summary>One broker for the class.</summary>
public sealed class PushPacingFixture : IAsyncLifetime
{
    internal JsTestServer Server { get; private set; } = null!;
    public async Task InitializeAsync() => Server = await JsTestServer.StartAsync();
    public async Task DisposeAsync() => await Server.DisposeAsync();
}

/// <summary>
/// Push consumer flow control (100 FlowControl Request, stall, Nats-Consumer-Stalled heartbeats), replay_policy
/// original and rate_limit_bps (nats-server consumer.go). The timing checks are lower bounds only: a loaded machine
/// can only make deliveries later.
/// </summary>
public sealed class PushPacingTests(PushPacingFixture fixture) : IClassFixture<PushPacingFixture>
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(15);
    private NatsConnection Nats => fixture.Server.Nats;

    private async Task<JsonElement> Api(string subject, string body = "")
    {
        var reply = await Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), replyOpts: new NatsSubOpts { Timeout = Wait });
        return JsonDocument.Parse(reply.Data ?? []).RootElement.Clone();
    }

    private async Task Ok(string subject, string body = "")
    {
        var r = await Api(subject, body);
        Assert.False(r.TryGetProperty("error", out var e), $"{subject}: {e}");
    }

    [Fact]
    public async Task Flow_control_stalls_past_the_window_until_the_client_answers()
    {
        await Ok("$JS.API.STREAM.CREATE.FC", """{"name":"FC","subjects":["fc.in"],"storage":"memory"}""");
        var payload = new byte[64 * 1024];
        const int count = 48; // 3 MB: past the first window of 2 MB
        for (int i = 0; i < count; i++) await Nats.RequestAsync<byte[], byte[]>("fc.in", payload, replyOpts: new NatsSubOpts { Timeout = Wait });
        await using var sub = await Nats.SubscribeCoreAsync<byte[]>("fc.deliver");
        await Nats.PingAsync();
        await Ok("$JS.API.CONSUMER.DURABLE.CREATE.FC.P", """
            {"stream_name":"FC","config":{"durable_name":"P","ack_policy":"none","deliver_subject":"fc.deliver","flow_control":true,"idle_heartbeat":500000000}}
            """);

        int delivered = 0;
        string? request = null;
        using var cts = new CancellationTokenSource(Wait);
        // Read until a heartbeat says the consumer is stalled on the unanswered request.
        while (true)
        {
            var m = await sub.Msgs.ReadAsync(cts.Token);
            if (m.Headers?.Code == 100 && m.Headers.MessageText == "FlowControl Request")
            {
                request ??= m.ReplyTo;
                continue;
            }
            if (m.Headers?.Code == 100)
            {
                if (m.Headers.TryGetValue("Nats-Consumer-Stalled", out var stalled))
                {
                    Assert.Equal(request, stalled.ToString());
                    break;
                }
                continue;
            }
            delivered++;
        }
        Assert.NotNull(request);
        Assert.StartsWith("$JS.FC.FC.P.", request, StringComparison.Ordinal);
        Assert.InRange(delivered, 1, count - 1);

        await Nats.PublishAsync(request!, "");
        while (delivered < count)
        {
            var m = await sub.Msgs.ReadAsync(cts.Token);
            if (m.Headers?.Code == 100)
            {
                if (m.Headers.MessageText == "FlowControl Request") await Nats.PublishAsync(m.ReplyTo!, "");
                continue;
            }
            delivered++;
        }
        Assert.Equal(count, delivered);
    }

    [Fact]
    public async Task Replay_original_keeps_the_gaps_between_stored_messages()
    {
        await Ok("$JS.API.STREAM.CREATE.RO", """{"name":"RO","subjects":["ro"],"storage":"memory"}""");
        for (int i = 0; i < 3; i++)
        {
            if (i > 0) await Task.Delay(500);
            await Nats.RequestAsync<string, byte[]>("ro", $"m{i}", replyOpts: new NatsSubOpts { Timeout = Wait });
        }
        await using var sub = await Nats.SubscribeCoreAsync<string>("ro.deliver");
        await Nats.PingAsync();
        await Ok("$JS.API.CONSUMER.DURABLE.CREATE.RO.R", """{"stream_name":"RO","config":{"durable_name":"R","ack_policy":"none","deliver_subject":"ro.deliver","replay_policy":"original"}}""");
        using var cts = new CancellationTokenSource(Wait);
        await sub.Msgs.ReadAsync(cts.Token);
        var clock = Stopwatch.StartNew();
        await sub.Msgs.ReadAsync(cts.Token);
        await sub.Msgs.ReadAsync(cts.Token);
        Assert.True(clock.ElapsedMilliseconds >= 800, $"replayed in {clock.ElapsedMilliseconds} ms, stored 1000 ms apart");
    }

    [Fact]
    public async Task Rate_limit_spreads_push_deliveries_and_is_refused_on_pull()
    {
        await Ok("$JS.API.STREAM.CREATE.RL", """{"name":"RL","subjects":["rl"],"storage":"memory","max_msg_size":6000}""");
        var payload = new byte[5000];
        for (int i = 0; i < 4; i++) await Nats.RequestAsync<byte[], byte[]>("rl", payload, replyOpts: new NatsSubOpts { Timeout = Wait });
        await using var sub = await Nats.SubscribeCoreAsync<byte[]>("rl.deliver");
        await Nats.PingAsync();
        var clock = Stopwatch.StartNew();
        await Ok("$JS.API.CONSUMER.DURABLE.CREATE.RL.R", """{"stream_name":"RL","config":{"durable_name":"R","ack_policy":"none","deliver_subject":"rl.deliver","rate_limit_bps":80000}}""");
        using var cts = new CancellationTokenSource(Wait);
        for (int i = 0; i < 4; i++) await sub.Msgs.ReadAsync(cts.Token);
        // 20 KB at 10 KB/s with a burst of one 6 KB message: at least ~1.4 s.
        Assert.True(clock.ElapsedMilliseconds >= 1000, $"4 x 5 KB at 10 KB/s took {clock.ElapsedMilliseconds} ms");

        var pull = await Api("$JS.API.CONSUMER.DURABLE.CREATE.RL.PULL", """{"stream_name":"RL","config":{"durable_name":"PULL","ack_policy":"explicit","rate_limit_bps":80000}}""");
        Assert.Equal(10086, pull.GetProperty("error").GetProperty("err_code").GetInt32());
    }
}
