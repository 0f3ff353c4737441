using System.Text.Json;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Server;
using static NatsBroker.Tests.JetStream.BatchTestKit;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// ADR-44 asset versioning (nats-server 2.12+ jetstream_versioning.go): <c>_nats.req.level</c> stored in stream and
/// consumer metadata from the features used, <c>_nats.ver</c> / <c>_nats.level</c> added to create, update and info
/// responses only, an identical create still idempotent.
/// </summary>
public sealed class AssetVersioningTests(AtomicBatchServer fixture) : IClassFixture<AtomicBatchServer>
{
    private JsTestServer T => fixture.T;

    private static void AssertVersioned(IDictionary<string, string>? metadata, string requiredLevel)
    {
        Assert.NotNull(metadata);
        Assert.Equal(requiredLevel, metadata["_nats.req.level"]);
        Assert.Equal("4", metadata["_nats.level"]);
        Assert.Equal(NatsServer.CompatibleVersion, metadata["_nats.ver"]);
    }

    [Fact]
    public async Task Stream_metadata_carries_the_required_and_the_server_level()
    {
        var js = new NatsJSContext(T.Nats);
        var plain = await js.CreateStreamAsync(new StreamConfig("AV0", ["av0"]), Timeout());
        AssertVersioned(plain.Info.Config.Metadata, "0");
        var ttl = await js.CreateStreamAsync(new StreamConfig("AV1", ["av1"]) { AllowMsgTTL = true, Metadata = new Dictionary<string, string> { ["owner"] = "me" } }, Timeout());
        AssertVersioned(ttl.Info.Config.Metadata, "1");
        Assert.Equal("me", ttl.Info.Config.Metadata!["owner"]);
        AssertVersioned((await js.CreateStreamAsync(new StreamConfig("AV2", ["av2"]) { AllowAtomicPublish = true }, Timeout())).Info.Config.Metadata, "2");
        AssertVersioned((await js.CreateStreamAsync(new StreamConfig("AV3", ["av3"]) { AllowMsgCounter = true }, Timeout())).Info.Config.Metadata, "2");
        AssertVersioned((await js.CreateStreamAsync(new StreamConfig("AV4", ["av4"]) { AllowBatchPublish = true }, Timeout())).Info.Config.Metadata, "4");
        AssertVersioned((await js.GetStreamAsync("AV1", cancellationToken: Timeout())).Info.Config.Metadata, "1");

        // Keys in Go's map order; the server's keys are not stored: a client cannot set them.
        var raw = await ApiAsync(T, "$JS.API.STREAM.UPDATE.AV0", """{"name":"AV0","subjects":["av0"],"allow_msg_ttl":true,"metadata":{"_nats.ver":"9.9.9","_nats.level":"99","_nats.req.level":"77","a":"b"}}""");
        Assert.Contains($"\"metadata\":{{\"_nats.level\":\"4\",\"_nats.req.level\":\"1\",\"_nats.ver\":\"{NatsServer.CompatibleVersion}\",\"a\":\"b\"}}", raw, StringComparison.Ordinal);

        // The same create again is accepted although the request has no _nats.req.level (nats-server copyStreamMetadata).
        var again = await ApiAsync(T, "$JS.API.STREAM.CREATE.AV1", """{"name":"AV1","subjects":["av1"],"allow_msg_ttl":true,"metadata":{"owner":"me"}}""");
        Assert.DoesNotContain("\"error\"", again, StringComparison.Ordinal);
        var other = await ApiAsync(T, "$JS.API.STREAM.CREATE.AV1", """{"name":"AV1","subjects":["av1"],"allow_msg_ttl":true,"metadata":{"owner":"you"}}""");
        Assert.Contains("\"err_code\":10058", other, StringComparison.Ordinal);

        // A list shows the stored metadata only (nats-server jsStreamListRequest).
        await foreach (var s in js.ListStreamsAsync(cancellationToken: Timeout()))
        {
            if (s.Info.Config.Name != "AV1") continue;
            Assert.Equal("1", s.Info.Config.Metadata!["_nats.req.level"]);
            Assert.False(s.Info.Config.Metadata.ContainsKey("_nats.level"));
            Assert.False(s.Info.Config.Metadata.ContainsKey("_nats.ver"));
        }
    }

    [Fact]
    public async Task Consumer_metadata_follows_priority_groups_and_pause()
    {
        var js = new NatsJSContext(T.Nats);
        await js.CreateStreamAsync(new StreamConfig("AVC", ["avc"]), Timeout());
        var plain = await js.CreateOrUpdateConsumerAsync("AVC", new ConsumerConfig("P") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());
        AssertVersioned(plain.Info.Config.Metadata, "0");
        var pinned = await js.CreateOrUpdateConsumerAsync("AVC", new ConsumerConfig("G")
        {
            AckPolicy = ConsumerConfigAckPolicy.Explicit,
            PriorityPolicy = ConsumerConfigPriorityPolicy.PinnedClient,
            PriorityGroups = ["g"],
        }, Timeout());
        AssertVersioned(pinned.Info.Config.Metadata, "1");

        // A pause needs level 1 (2.11) for as long as pause_until is set.
        await js.PauseConsumerAsync("AVC", "P", DateTimeOffset.UtcNow.AddHours(1), Timeout());
        AssertVersioned((await js.GetConsumerAsync("AVC", "P", Timeout())).Info.Config.Metadata, "1");
        await js.ResumeConsumerAsync("AVC", "P", Timeout());
        AssertVersioned((await js.GetConsumerAsync("AVC", "P", Timeout())).Info.Config.Metadata, "0");

        // An identical "create" compares with the stored level; the consumer list has no server keys.
        var again = await ApiAsync(T, "$JS.API.CONSUMER.CREATE.AVC.G", """{"stream_name":"AVC","action":"create","config":{"durable_name":"G","name":"G","ack_policy":"explicit","priority_policy":"pinned_client","priority_groups":["g"]}}""");
        Assert.DoesNotContain("\"error\"", again, StringComparison.Ordinal);
        using var doc = JsonDocument.Parse(again);
        Assert.Equal("1", doc.RootElement.GetProperty("config").GetProperty("metadata").GetProperty("_nats.req.level").GetString());
        await foreach (var c in js.ListConsumersAsync("AVC", Timeout()))
        {
            Assert.True(c.Info.Config.Metadata!.ContainsKey("_nats.req.level"));
            Assert.False(c.Info.Config.Metadata.ContainsKey("_nats.level"));
        }
    }
}
