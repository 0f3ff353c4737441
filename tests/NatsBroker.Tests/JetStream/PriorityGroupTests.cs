using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;

namespace NatsBroker.Tests.JetStream;

/// <summary>One broker for the class of priority group tests.</summary>
public sealed class PriorityGroupFixture : IAsyncLifetime
{
    internal JsTestServer Server { get; private set; } = null!;
    public async Task InitializeAsync() => Server = await JsTestServer.StartAsync();
    public async Task DisposeAsync() => await Server.DisposeAsync();
}

/// <summary>
/// Pull consumer priority groups (ADR-42, nats-server 2.11+ consumer.go / jetstream_api.go): the config rules and
/// their err_codes, pull request checks, pinned_client (Nats-Pin-Id, 423, priority_timeout, CONSUMER.UNPIN,
/// advisories, consumer info state), overflow (min_pending / min_ack_pending) and prioritized, with raw requests
/// where the exact statuses matter and NATS.Net 3.3.2's own priority group support elsewhere.
/// </summary>
public sealed class PriorityGroupTests(PriorityGroupFixture fixture) : IClassFixture<PriorityGroupFixture>
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);
    private NatsConnection Nats => fixture.Server.Nats;
    private NatsJSContext Js => fixture.Server.Js;

    private static CancellationToken Timeout() => new CancellationTokenSource(Wait).Token;

    private async Task<JsonElement> Api(string subject, string body = "")
    {
        var reply = await Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), replyOpts: new NatsSubOpts { Timeout = Wait });
        return JsonDocument.Parse(reply.Data ?? []).RootElement.Clone();
    }

    private async Task<JsonElement> Ok(string subject, string body = "")
    {
        var r = await Api(subject, body);
        Assert.False(r.TryGetProperty("error", out var e), $"{subject}: {e}");
        return r;
    }

    private static (int Code, int ErrCode, string Description) Error(JsonElement r)
    {
        Assert.True(r.TryGetProperty("error", out var e), $"expected an error: {r}");
        return (e.GetProperty("code").GetInt32(), e.GetProperty("err_code").GetInt32(), e.GetProperty("description").GetString()!);
    }

    /// <summary>Creates durable <paramref name="name"/>; <paramref name="config"/> is the rest of its config with ' for ".</summary>
    private Task<JsonElement> CreateConsumer(string stream, string name, string config) =>
        Api($"$JS.API.CONSUMER.CREATE.{stream}.{name}",
            "{\"stream_name\":\"" + stream + "\",\"config\":{\"durable_name\":\"" + name + "\"," + config.Replace('\'', '"') + "}}");

    private async Task StreamWith(string name, int messages)
    {
        await Ok($"$JS.API.STREAM.CREATE.{name}", $$"""{"name":"{{name}}","subjects":["{{name.ToLowerInvariant()}}.>"],"storage":"memory"}""");
        for (int i = 1; i <= messages; i++) await Nats.RequestAsync<string, byte[]>($"{name.ToLowerInvariant()}.m", $"m{i}", replyOpts: new NatsSubOpts { Timeout = Wait });
    }

    /// <summary>A puller with its own inbox: deliveries keep the stored subject, so they are read on our subscription.</summary>
    private sealed class Puller(NatsConnection nats, INatsSub<string> sub, string inbox) : IAsyncDisposable
    {
        public static async Task<Puller> StartAsync(NatsConnection nats)
        {
            // Not under _INBOX.: NATS.Net routes those through its request multiplexer, which expects the inbox subject.
            var inbox = "pg.pull." + Guid.NewGuid().ToString("N");
            var sub = await nats.SubscribeCoreAsync<string>(inbox);
            await nats.PingAsync();
            return new Puller(nats, sub, inbox);
        }

        public ValueTask Pull(string stream, string consumer, string request) =>
            nats.PublishAsync($"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", request, replyTo: inbox);

        public async Task<NatsMsg<string>> ReadAsync()
        {
            using var cts = new CancellationTokenSource(Wait);
            return await sub.Msgs.ReadAsync(cts.Token);
        }

        public async ValueTask DisposeAsync() => await sub.DisposeAsync();
    }

    private static string? PinOf(NatsMsg<string> m) => m.Headers is { } h && h.TryGetValue("Nats-Pin-Id", out var v) ? v.ToString() : null;

    private async Task<int> NumWaiting(string stream, string consumer) =>
        (await Ok($"$JS.API.CONSUMER.INFO.{stream}.{consumer}")).GetProperty("num_waiting").GetInt32();

    private static async Task Eventually(Func<Task<bool>> condition, string what)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (!await condition())
        {
            if (DateTime.UtcNow > deadline) Assert.Fail($"timed out waiting for {what}");
            await Task.Delay(50);
        }
    }

    [Fact]
    public async Task Consumer_create_refuses_what_nats_server_refuses_with_its_codes()
    {
        await StreamWith("PV", 0);
        Assert.Equal((400, 10178, "priority groups can not be used with push consumers"),
            Error(await CreateConsumer("PV", "c1", "'deliver_subject':'dv','priority_groups':['g'],'priority_policy':'overflow'")));
        Assert.Equal((400, 10159, "Setting PriorityPolicy requires at least one PriorityGroup to be set"),
            Error(await CreateConsumer("PV", "c2", "'priority_policy':'pinned_client'")));
        Assert.Equal((400, 10161, "Group name cannot be an empty string"),
            Error(await CreateConsumer("PV", "c3", "'priority_groups':['g',''],'priority_policy':'overflow'")));
        const string badName = "Valid priority group name must match A-Z, a-z, 0-9, -_/=)+ and may not exceed 16 characters";
        Assert.Equal((400, 10162, badName), Error(await CreateConsumer("PV", "c4", "'priority_groups':['a.b'],'priority_policy':'overflow'")));
        Assert.Equal((400, 10162, badName), Error(await CreateConsumer("PV", "c5", "'priority_groups':['abcdefghijklmnopq'],'priority_policy':'prioritized'")));
        Assert.Equal((400, 10196, "consumer can not have priority groups when policy is none"),
            Error(await CreateConsumer("PV", "c6", "'priority_groups':['g']")));
        Assert.Equal((400, 10196, "consumer can not have priority groups when policy is none"),
            Error(await CreateConsumer("PV", "c7", "'priority_groups':['g'],'priority_policy':'none'")));
        Assert.Equal((400, 10197, "PinnedTTL cannot be set when PriorityPolicy is none"),
            Error(await CreateConsumer("PV", "c8", "'priority_timeout':1000000000")));
        var unknown = Error(await CreateConsumer("PV", "c9", "'priority_groups':['g'],'priority_policy':'sticky'"));
        Assert.Equal((400, 10025), (unknown.Code, unknown.ErrCode));
        Assert.Contains("unknown priority policy", unknown.Description, StringComparison.Ordinal);

        // Accepted: the longest valid name with every allowed character class; pinned_client gets the 2 minute default.
        var ok = await CreateConsumer("PV", "ok", "'ack_policy':'explicit','priority_groups':['Az09-_/=abcdefgh'],'priority_policy':'pinned_client'");
        Assert.False(ok.TryGetProperty("error", out _), ok.ToString());
        var cfg = ok.GetProperty("config");
        Assert.Equal("pinned_client", cfg.GetProperty("priority_policy").GetString());
        Assert.Equal(120_000_000_000, cfg.GetProperty("priority_timeout").GetInt64());
        Assert.Equal("Az09-_/=abcdefgh", ok.GetProperty("priority_groups")[0].GetProperty("group").GetString());
        Assert.False(ok.GetProperty("priority_groups")[0].TryGetProperty("pinned_client_id", out _));
        // A consumer without a policy shows none of it.
        var plain = await CreateConsumer("PV", "plain", "'ack_policy':'explicit','priority_policy':'none'");
        Assert.False(plain.GetProperty("config").TryGetProperty("priority_policy", out _), plain.ToString());
        Assert.False(plain.TryGetProperty("priority_groups", out _));
    }

    [Fact]
    public async Task NATS_Net_priority_config_round_trips_through_create_and_info()
    {
        await StreamWith("PN", 0);
        var created = await Js.CreateOrUpdateConsumerAsync("PN", new ConsumerConfig("c")
        {
            AckPolicy = ConsumerConfigAckPolicy.Explicit,
            PriorityGroups = ["jobs"],
            PriorityPolicy = ConsumerConfigPriorityPolicy.PinnedClient,
            PinnedTTL = TimeSpan.FromSeconds(45),
        }, Timeout());
        Assert.Equal(ConsumerConfigPriorityPolicy.PinnedClient, created.Info.Config.PriorityPolicy);
        Assert.Equal(TimeSpan.FromSeconds(45), created.Info.Config.PinnedTTL);
        Assert.Equal(new[] { "jobs" }, created.Info.Config.PriorityGroups!);
        var state = Assert.Single(created.Info.PriorityGroups!);
        Assert.Equal("jobs", state.Group);
        Assert.Null(state.PinnedClientId);

        var overflow = await Js.CreateOrUpdateConsumerAsync("PN", new ConsumerConfig("o")
        {
            AckPolicy = ConsumerConfigAckPolicy.Explicit,
            PriorityGroups = ["jobs"],
            PriorityPolicy = ConsumerConfigPriorityPolicy.Overflow,
        }, Timeout());
        Assert.Equal(ConsumerConfigPriorityPolicy.Overflow, overflow.Info.Config.PriorityPolicy);
        var err = await Assert.ThrowsAsync<NatsJSApiException>(async () => await Js.CreateOrUpdateConsumerAsync("PN", new ConsumerConfig("bad")
        {
            PriorityGroups = ["jobs"],
        }, Timeout()));
        Assert.Equal(10196, err.Error.ErrCode);
    }

    [Fact]
    public async Task Pull_requests_are_checked_against_the_policy_and_groups()
    {
        await StreamWith("PR", 0);
        await Ok("$JS.API.CONSUMER.CREATE.PR.pin", """{"stream_name":"PR","config":{"durable_name":"pin","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"pinned_client"}}""");
        await Ok("$JS.API.CONSUMER.CREATE.PR.ovf", """{"stream_name":"PR","config":{"durable_name":"ovf","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"overflow"}}""");
        await Ok("$JS.API.CONSUMER.CREATE.PR.none", """{"stream_name":"PR","config":{"durable_name":"none","ack_policy":"explicit"}}""");
        await using var p = await Puller.StartAsync(Nats);
        async Task Expect(string consumer, string request, string status)
        {
            await p.Pull("PR", consumer, request);
            var m = await p.ReadAsync();
            Assert.Equal(400, m.Headers?.Code);
            Assert.Equal(status, m.Headers?.MessageText);
        }
        await Expect("pin", """{"batch":1}""", "Bad Request - Priority Group missing");
        await Expect("pin", """{"batch":1,"group":"other"}""", "Bad Request - Invalid Priority Group");
        await Expect("pin", """{"batch":1,"group":"g","min_pending":5}""", "Bad Request - Not a Overflow Priority consumer");
        await Expect("ovf", """{"batch":1,"group":"g","id":"X"}""", "Bad Request - Not a Pinned Client Priority consumer");
        await Expect("ovf", """{"batch":1,"group":"g","priority":10}""", "Bad Request - Priority must be between 0 and 9");
        await Expect("none", """{"batch":1,"min_ack_pending":1}""", "Bad Request - Not a Overflow Priority consumer");
        // A group on a consumer without a policy is ignored, as nats-server does.
        await p.Pull("PR", "none", """{"batch":1,"group":"g","no_wait":true}""");
        Assert.Equal(404, (await p.ReadAsync()).Headers?.Code);
    }

    [Fact]
    public async Task Pinned_client_gets_the_pin_others_wait_or_get_423_until_unpinned()
    {
        await StreamWith("PP", 6);
        await Ok("$JS.API.CONSUMER.CREATE.PP.c", """{"stream_name":"PP","config":{"durable_name":"c","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"pinned_client","priority_timeout":60000000000}}""");
        await using var pinned = await Nats.SubscribeCoreAsync<string>("$JS.EVENT.ADVISORY.CONSUMER.PINNED.PP.c");
        await using var unpinned = await Nats.SubscribeCoreAsync<string>("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.PP.c");
        await using var a = await Puller.StartAsync(Nats);
        await using var b = await Puller.StartAsync(Nats);

        // A pulls without an id and becomes the pinned client: its message carries the new pin id.
        await a.Pull("PP", "c", """{"batch":1,"group":"g","expires":5000000000}""");
        var first = await a.ReadAsync();
        Assert.Equal("m1", first.Data);
        string pinA = PinOf(first) ?? throw new Xunit.Sdk.XunitException("no Nats-Pin-Id on the pinned client's message");
        using (var cts = new CancellationTokenSource(Wait))
        {
            var adv = JsonDocument.Parse((await pinned.Msgs.ReadAsync(cts.Token)).Data!).RootElement;
            Assert.Equal("io.nats.jetstream.advisory.v1.consumer_group_pinned", adv.GetProperty("type").GetString());
            Assert.Equal(pinA, adv.GetProperty("pinned_id").GetString());
            Assert.Equal("g", adv.GetProperty("group").GetString());
            Assert.Equal("PP", adv.GetProperty("stream").GetString());
            Assert.Equal("c", adv.GetProperty("consumer").GetString());
        }
        var info = await Ok("$JS.API.CONSUMER.INFO.PP.c");
        var state = info.GetProperty("priority_groups")[0];
        Assert.Equal(pinA, state.GetProperty("pinned_client_id").GetString());
        Assert.True(state.GetProperty("pinned_ts").GetDateTime() > DateTime.UtcNow.AddMinutes(-1));

        // B with a wrong id: 423 at once. B without an id: standby, its request runs out with messages left.
        await b.Pull("PP", "c", """{"batch":1,"group":"g","id":"NOTTHEPIN","expires":5000000000}""");
        var mismatch = await b.ReadAsync();
        Assert.Equal(423, mismatch.Headers?.Code);
        Assert.Equal("Nats-Pin-Id mismatch", mismatch.Headers?.MessageText);
        await b.Pull("PP", "c", """{"batch":1,"group":"g","expires":700000000}""");
        Assert.Equal(408, (await b.ReadAsync()).Headers?.Code);

        // A keeps getting messages with its id.
        await a.Pull("PP", "c", $$"""{"batch":2,"group":"g","id":"{{pinA}}","expires":5000000000}""");
        var m2 = await a.ReadAsync();
        var m3 = await a.ReadAsync();
        Assert.Equal(("m2", "m3"), (m2.Data, m3.Data));
        Assert.Equal(pinA, PinOf(m2));
        Assert.Equal(pinA, PinOf(m3));

        // UNPIN: the advisory says admin, the info has no pin, and B's waiting pull without an id takes over.
        await b.Pull("PP", "c", """{"batch":1,"group":"g","expires":5000000000}""");
        await Eventually(async () => await NumWaiting("PP", "c") == 1, "B's request to wait");
        var unpin = await Ok("$JS.API.CONSUMER.UNPIN.PP.c", """{"group":"g"}""");
        Assert.Equal("io.nats.jetstream.api.v1.consumer_unpin_response", unpin.GetProperty("type").GetString());
        using (var cts = new CancellationTokenSource(Wait))
        {
            var adv = JsonDocument.Parse((await unpinned.Msgs.ReadAsync(cts.Token)).Data!).RootElement;
            Assert.Equal("io.nats.jetstream.advisory.v1.consumer_group_unpinned", adv.GetProperty("type").GetString());
            Assert.Equal("admin", adv.GetProperty("reason").GetString());
            Assert.Equal("g", adv.GetProperty("group").GetString());
        }
        var m4 = await b.ReadAsync();
        Assert.Equal("m4", m4.Data);
        string pinB = PinOf(m4)!;
        Assert.False(string.IsNullOrEmpty(pinB));
        Assert.NotEqual(pinA, pinB);
        Assert.Equal(pinB, (await Ok("$JS.API.CONSUMER.INFO.PP.c")).GetProperty("priority_groups")[0].GetProperty("pinned_client_id").GetString());

        // A still holds the old id: 423.
        await a.Pull("PP", "c", $$"""{"batch":1,"group":"g","id":"{{pinA}}","expires":5000000000}""");
        Assert.Equal(423, (await a.ReadAsync()).Headers?.Code);
    }

    [Fact]
    public async Task Waiting_pulls_with_a_stale_id_get_423_wrong_pin_when_the_pin_is_dropped()
    {
        await StreamWith("PW", 1);
        await Ok("$JS.API.CONSUMER.CREATE.PW.c", """{"stream_name":"PW","config":{"durable_name":"c","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"pinned_client"}}""");
        await using var a = await Puller.StartAsync(Nats);
        await a.Pull("PW", "c", """{"batch":1,"group":"g","expires":5000000000}""");
        string pin = PinOf(await a.ReadAsync())!;
        // A waits with its id (nothing left to deliver); then the pin is dropped and a message arrives.
        await a.Pull("PW", "c", $$"""{"batch":1,"group":"g","id":"{{pin}}","expires":5000000000}""");
        await Eventually(async () => await NumWaiting("PW", "c") == 1, "A's request to wait");
        await Ok("$JS.API.CONSUMER.UNPIN.PW.c", """{"group":"g"}""");
        await Nats.RequestAsync<string, byte[]>("pw.m", "m2", replyOpts: new NatsSubOpts { Timeout = Wait });
        var wrong = await a.ReadAsync();
        Assert.Equal(423, wrong.Headers?.Code);
        Assert.Equal("Nats-Wrong-Pin-Id", wrong.Headers?.MessageText);
        Assert.Equal("1", wrong.Headers?["Nats-Pending-Messages"].ToString());
    }

    [Fact]
    public async Task Priority_timeout_unpins_an_idle_client_and_a_standby_takes_over()
    {
        await StreamWith("PT", 3);
        await Ok("$JS.API.CONSUMER.CREATE.PT.c", """{"stream_name":"PT","config":{"durable_name":"c","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"pinned_client","priority_timeout":1000000000}}""");
        await using var unpinned = await Nats.SubscribeCoreAsync<string>("$JS.EVENT.ADVISORY.CONSUMER.UNPINNED.PT.c");
        await using var a = await Puller.StartAsync(Nats);
        await using var b = await Puller.StartAsync(Nats);
        await a.Pull("PT", "c", """{"batch":1,"group":"g","expires":5000000000}""");
        var first = await a.ReadAsync();
        string pinA = PinOf(first)!;

        // B waits as standby; A pulls no more, so after priority_timeout (1 s) the pin goes and B is pinned.
        await b.Pull("PT", "c", """{"batch":1,"group":"g","expires":8000000000}""");
        var second = await b.ReadAsync();
        Assert.Equal("m2", second.Data);
        Assert.NotEqual(pinA, PinOf(second));
        using var cts = new CancellationTokenSource(Wait);
        var adv = JsonDocument.Parse((await unpinned.Msgs.ReadAsync(cts.Token)).Data!).RootElement;
        Assert.Equal("timeout", adv.GetProperty("reason").GetString());
        Assert.Equal("g", adv.GetProperty("group").GetString());
    }

    [Fact]
    public async Task NATS_Net_consume_is_pinned_and_unpin_hands_over_to_another_consumer()
    {
        await StreamWith("PC", 6);
        var consumer1 = await Js.CreateOrUpdateConsumerAsync("PC", new ConsumerConfig("c")
        {
            AckPolicy = ConsumerConfigAckPolicy.Explicit,
            PriorityGroups = ["workers"],
            PriorityPolicy = ConsumerConfigPriorityPolicy.PinnedClient,
            PinnedTTL = TimeSpan.FromSeconds(60),
        }, Timeout());
        var opts = new NatsJSConsumeOpts { MaxMsgs = 1, Expires = TimeSpan.FromSeconds(2), PriorityGroup = new NatsJSPriorityGroupOpts { Group = "workers" } };
        string? firstPin = null;
        await foreach (var msg in consumer1.ConsumeAsync<string>(opts: opts, cancellationToken: Timeout()))
        {
            firstPin = msg.Headers?["Nats-Pin-Id"].ToString();
            await msg.AckAsync(cancellationToken: Timeout());
            break;
        }
        Assert.False(string.IsNullOrEmpty(firstPin));
        var info = await Js.GetConsumerAsync("PC", "c", Timeout());
        Assert.Equal(firstPin, Assert.Single(info.Info.PriorityGroups!).PinnedClientId);

        await Js.UnpinConsumerAsync("PC", "c", "workers", Timeout());
        var consumer2 = await Js.GetConsumerAsync("PC", "c", Timeout());
        Assert.Null(Assert.Single(consumer2.Info.PriorityGroups!).PinnedClientId);
        string? secondPin = null;
        await foreach (var msg in consumer2.ConsumeAsync<string>(opts: opts, cancellationToken: Timeout()))
        {
            secondPin = msg.Headers?["Nats-Pin-Id"].ToString();
            await msg.AckAsync(cancellationToken: Timeout());
            break;
        }
        Assert.False(string.IsNullOrEmpty(secondPin));
        Assert.NotEqual(firstPin, secondPin);
    }

    [Fact]
    public async Task Unpin_refuses_bad_requests_with_nats_server_errors()
    {
        await StreamWith("PU", 0);
        await Ok("$JS.API.CONSUMER.CREATE.PU.c", """{"stream_name":"PU","config":{"durable_name":"c","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"pinned_client"}}""");
        Assert.Equal(10025, Error(await Api("$JS.API.CONSUMER.UNPIN.PU.c")).ErrCode);
        Assert.Equal((400, 10025, "invalid JSON: consumer group not specified"), Error(await Api("$JS.API.CONSUMER.UNPIN.PU.c", "{}")));
        Assert.Equal(10162, Error(await Api("$JS.API.CONSUMER.UNPIN.PU.c", """{"group":"a b"}""")).ErrCode);
        Assert.Equal((400, 10160, "Provided priority group does not exist for this consumer"), Error(await Api("$JS.API.CONSUMER.UNPIN.PU.c", """{"group":"other"}""")));
        Assert.Equal(10014, Error(await Api("$JS.API.CONSUMER.UNPIN.PU.nope", """{"group":"g"}""")).ErrCode);
        Assert.Equal(10059, Error(await Api("$JS.API.CONSUMER.UNPIN.NOPE.c", """{"group":"g"}""")).ErrCode);
        // Unpinning when nobody is pinned is answered (and advised) all the same, as nats-server.
        await Ok("$JS.API.CONSUMER.UNPIN.PU.c", """{"group":"g"}""");
    }

    [Fact]
    public async Task Overflow_serves_a_pull_only_while_min_pending_or_min_ack_pending_is_reached()
    {
        await StreamWith("PO", 3);
        var consumer = await Js.CreateOrUpdateConsumerAsync("PO", new ConsumerConfig("c")
        {
            AckPolicy = ConsumerConfigAckPolicy.Explicit,
            PriorityGroups = ["jobs"],
            PriorityPolicy = ConsumerConfigPriorityPolicy.Overflow,
        }, Timeout());
        async Task<List<string>> Fetch(int max, long minPending = 0, long minAckPending = 0)
        {
            var got = new List<string>();
            var opts = new NatsJSFetchOpts
            {
                MaxMsgs = max,
                Expires = TimeSpan.FromSeconds(1),
                PriorityGroup = new NatsJSPriorityGroupOpts { Group = "jobs", MinPending = minPending, MinAckPending = minAckPending },
            };
            await foreach (var m in consumer.FetchAsync<string>(opts, cancellationToken: Timeout())) got.Add(m.Data!);
            return got;
        }

        // 3 pending: a pull asking for at least 4 gets nothing, one asking for 3 gets one (then 2 are left).
        Assert.Empty(await Fetch(1, minPending: 4));
        Assert.Equal(new[] { "m1" }, await Fetch(1, minPending: 3));
        Assert.Empty(await Fetch(1, minPending: 3));
        // One unacknowledged message: min_ack_pending 1 is reached; either condition is enough.
        Assert.Empty(await Fetch(1, minAckPending: 2));
        Assert.Equal(new[] { "m2" }, await Fetch(1, minPending: 100, minAckPending: 1));
        // Without conditions an overflow pull is served like any other.
        Assert.Equal(new[] { "m3" }, await Fetch(5));
    }

    [Fact]
    public async Task Overflow_requests_take_turns_message_by_message()
    {
        await StreamWith("PQ", 0);
        await Ok("$JS.API.CONSUMER.CREATE.PQ.c", """{"stream_name":"PQ","config":{"durable_name":"c","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"overflow"}}""");
        await using var a = await Puller.StartAsync(Nats);
        await using var b = await Puller.StartAsync(Nats);
        await a.Pull("PQ", "c", """{"batch":2,"group":"g","expires":5000000000}""");
        await Eventually(async () => await NumWaiting("PQ", "c") == 1, "A's request to wait");
        await b.Pull("PQ", "c", """{"batch":2,"group":"g","expires":5000000000}""");
        await Eventually(async () => await NumWaiting("PQ", "c") == 2, "B's request to wait");
        for (int i = 1; i <= 4; i++) await Nats.RequestAsync<string, byte[]>("pq.m", $"m{i}", replyOpts: new NatsSubOpts { Timeout = Wait });
        // nats-server's waitQueue.pop: a served request that wants more goes behind the other one.
        Assert.Equal(("m1", "m3"), ((await a.ReadAsync()).Data, (await a.ReadAsync()).Data));
        Assert.Equal(("m2", "m4"), ((await b.ReadAsync()).Data, (await b.ReadAsync()).Data));
    }

    [Fact]
    public async Task Prioritized_serves_the_lowest_priority_number_first()
    {
        await StreamWith("PZ", 0);
        await Ok("$JS.API.CONSUMER.CREATE.PZ.c", """{"stream_name":"PZ","config":{"durable_name":"c","ack_policy":"explicit","priority_groups":["g"],"priority_policy":"prioritized"}}""");
        await using var low = await Puller.StartAsync(Nats);
        await using var high = await Puller.StartAsync(Nats);
        await using var mid = await Puller.StartAsync(Nats);
        // Queued in the order 5, 0, 3 (priority 0 is the first served).
        await low.Pull("PZ", "c", """{"batch":1,"group":"g","priority":5,"expires":5000000000}""");
        await high.Pull("PZ", "c", """{"batch":2,"group":"g","priority":0,"expires":5000000000}""");
        await mid.Pull("PZ", "c", """{"batch":1,"group":"g","priority":3,"expires":5000000000}""");
        await Eventually(async () => await NumWaiting("PZ", "c") == 3, "three waiting requests");
        for (int i = 1; i <= 4; i++) await Nats.RequestAsync<string, byte[]>("pz.m", $"m{i}", replyOpts: new NatsSubOpts { Timeout = Wait });
        Assert.Equal("m1", (await high.ReadAsync()).Data);
        Assert.Equal("m2", (await high.ReadAsync()).Data);
        Assert.Equal("m3", (await mid.ReadAsync()).Data);
        Assert.Equal("m4", (await low.ReadAsync()).Data);
    }

    [Fact]
    public async Task Priority_config_survives_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var first = await JsTestServer.StartAsync(dir);
            await first.Js.CreateStreamAsync(new StreamConfig("PS", ["ps.>"]), Timeout());
            await first.Js.CreateOrUpdateConsumerAsync("PS", new ConsumerConfig("c")
            {
                AckPolicy = ConsumerConfigAckPolicy.Explicit,
                PriorityGroups = ["g1"],
                PriorityPolicy = ConsumerConfigPriorityPolicy.PinnedClient,
                PinnedTTL = TimeSpan.FromSeconds(30),
            }, Timeout());
            await first.StopKeepingStoreAsync();

            await using var second = await JsTestServer.StartAsync(dir);
            var info = (await second.Js.GetConsumerAsync("PS", "c", Timeout())).Info;
            Assert.Equal(ConsumerConfigPriorityPolicy.PinnedClient, info.Config.PriorityPolicy);
            Assert.Equal(TimeSpan.FromSeconds(30), info.Config.PinnedTTL);
            Assert.Equal(new[] { "g1" }, info.Config.PriorityGroups!);
            Assert.Null(Assert.Single(info.PriorityGroups!).PinnedClientId); // the pin itself is not kept, as nats-server
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (IOException) { }
        }
    }
}
