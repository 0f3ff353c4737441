using NatsBroker.Bench.Scenarios.Accounts;
using NatsBroker.Bench.Scenarios.Cluster;
using NatsBroker.Bench.Scenarios.Core;
using NatsBroker.Bench.Scenarios.Gateways;
using System.Text.Json.Nodes;
using NatsBroker.Bench.Scenarios.JetStream;
using NatsBroker.Bench.Scenarios.Mqtt;
using NatsBroker.Bench.Scenarios.NatsJs;
using NatsBroker.Bench.Scenarios.NatsNet;

namespace NatsBroker.Bench.Scenarios;

/// <summary>Every scenario, in report order. Adding a scenario is one line here plus its class.</summary>
internal static class ScenarioCatalog
{
    public static IReadOnlyList<IScenario> All() =>
    [
        // Core, raw-protocol generator: steady state (after warm-up traffic), then the same rows cold.
        .. CoreRows(cold: false),
        .. CoreRows(cold: true),
        new AuthFloodScenario("authflood-reqrep", flooders: 4, payload: 16, defaultSeconds: 5),

        // Routes (issue 46): a fresh 3-node full-mesh cluster per run, 3 x ours or 3 x nats-server; steady, then cold.
        .. ClusterRows(cold: false),
        .. ClusterRows(cold: true),
        new ClusterScenario(
            new RouteSubsScenario("route-subs1m", "", defaultCount: 1_000_000), "route-subs1m",
            "3-node cluster: 1M subscriptions, 4 connections per node, until every node knows all; rate = subs/s, RSS = sum of the 3 nodes",
            RouteSubsScenario.NodeOf, RouteSubsScenario.ProbeFrom),

        // Accounts (issue 14): traffic across an export/import, and logins with nkey and JWT users.
        new AccountsScenario(new RequestReplyScenario("acct-svc-reqrep-128", "service import request/reply 1 client, 1 service", clients: 1, services: 1, queue: false, payload: 128, defaultCount: 4_000), "acct-svc-reqrep-128", BenchAccounts.ImportsConfig, BenchAccounts.ServiceUser),
        new AccountsScenario(new RequestReplyScenario("acct-svc-qreqrep-16", "service import request/reply 10 clients, 2 queue services", clients: 10, services: 2, queue: true, payload: 16, defaultCount: 20_000), "acct-svc-qreqrep-16", BenchAccounts.ImportsConfig, BenchAccounts.ServiceUser),
        new AccountsScenario(new PubSubScenario("acct-stream-fanout-128", "stream import fan-out 1:4 (one importing account per subscriber)", pubs: 1, subs: BenchAccounts.FanOutAccounts, payload: 128, defaultCount: 400_000), "acct-stream-fanout-128", BenchAccounts.ImportsConfig, BenchAccounts.StreamUser),
        new ConnectRateScenario("connect-plain", "login rate, no authentication (4 threads; the base cost under the auth rows)", BenchAccounts.PlainConfig, BenchAccounts.NoFields),
        new ConnectRateScenario("connect-nkey", "login rate, nkey user (4 threads)", BenchAccounts.NkeyConfig, BenchAccounts.NkeyFields),
        new ConnectRateScenario("connect-jwt", "login rate, JWT user in operator mode (4 threads)", BenchAccounts.OperatorConfig, BenchAccounts.JwtFields),

        // JetStream, raw generator ("not supported" rows when the server has no JetStream).
        new JsSyncPublishScenario("js-syncpub-16-mem", 16, "memory", defaultCount: 4_000),
        new JsAsyncPublishScenario("js-asyncpub-128-file", 128, "file", defaultCount: 60_000),
        new JsOrderedConsumerScenario("js-ordered-128", 128, defaultCount: 100_000),
        new JsKvScenario("js-kv-put-128", 128, get: false, defaultCount: 4_000),
        new JsKvScenario("js-kv-get-128", 128, get: true, defaultCount: 10_000),

        // JetStream 2.12-2.14 (issue 10): one publisher, 256 B; the seed's Apple M3 figures (NATS 2.14 RC 1) in the title.
        new JsSyncPublishScenario("js-syncpub-256-mem", 256, "memory", defaultCount: 4_000),
        new JsSyncPublishScenario("js-syncpub-256-file", 256, "file", defaultCount: 4_000),
        new JsAsyncPublishScenario("js-asyncpub-256-mem", 256, "memory", defaultCount: 100_000),
        new JsAsyncPublishScenario("js-asyncpub-256-file", 256, "file", defaultCount: 100_000),
        new JsAsyncPublishScenario("js-asyncpub-256-file-async", 256, "file", defaultCount: 100_000, persistAsync: true),
        new JsAtomicBatchScenario("js-atomic100-256-mem", 256, "memory", 100, defaultCount: 100_000, seed: "-"),
        new JsAtomicBatchScenario("js-atomic1k-256-mem", 256, "memory", 1_000, defaultCount: 200_000, seed: "~544K/s"),
        new JsAtomicBatchScenario("js-atomic100-256-file", 256, "file", 100, defaultCount: 100_000, seed: "-"),
        new JsAtomicBatchScenario("js-atomic1k-256-file", 256, "file", 1_000, defaultCount: 200_000, seed: "~220K/s"),
        new JsAtomicBatchScenario("js-atomic1k-64-mem", 64, "memory", 1_000, defaultCount: 200_000, seed: "-"),
        new JsAtomicBatchScenario("js-atomic1k-4k-file", 4096, "file", 1_000, defaultCount: 50_000, seed: "-"),
        new JsFastBatchScenario("js-fast100-256-mem", 256, "memory", false, 100, defaultCount: 200_000, seed: "-"),
        new JsFastBatchScenario("js-fast1k-256-mem", 256, "memory", false, 1_000, defaultCount: 300_000, seed: "~922K/s"),
        new JsFastBatchScenario("js-fast10k-256-mem", 256, "memory", false, 10_000, defaultCount: 300_000, seed: "~981K/s"),
        new JsFastBatchScenario("js-fast100-256-file", 256, "file", false, 100, defaultCount: 200_000, seed: "-"),
        new JsFastBatchScenario("js-fast1k-256-file", 256, "file", false, 1_000, defaultCount: 300_000, seed: "~360K/s"),
        new JsFastBatchScenario("js-fast10k-256-file", 256, "file", false, 10_000, defaultCount: 300_000, seed: "-"),
        new JsFastBatchScenario("js-fast1k-256-file-async", 256, "file", true, 1_000, defaultCount: 300_000, seed: "~1.03M/s"),
        new JsFastBatchScenario("js-fast10k-256-file-async", 256, "file", true, 10_000, defaultCount: 300_000, seed: "~1.09M/s"),
        new JsFastBatchScenario("js-fast1k-64-mem", 64, "memory", false, 1_000, defaultCount: 300_000, seed: "-"),
        new JsFastBatchScenario("js-fast1k-4k-file", 4096, "file", false, 1_000, defaultCount: 60_000, seed: "-"),
        new JsFetchScenario("js-fetch-128", 128, defaultCount: 60_000),
        new JsWorkQueueScenario("js-wq250-256", 256, defaultCount: 2_500),
        new JsWorkQueueScenario("js-wq250-1k", 1024, defaultCount: 2_500),
        new JsWorkQueueScenario("js-wq250-4k", 4096, defaultCount: 1_500),
        new JsWorkQueueScenario("js-wq250-64k", 64 * 1024, defaultCount: 500),

        // The same core workloads through NATS.Net (NATS.Client.Core 3.3.2): what a .NET library user sees.
        NatsNetScenario.PubSub("nn-pub-16", "publish only", 16, 1_000_000, pubs: 1, subs: 0),
        NatsNetScenario.PubSub("nn-pub-128", "publish only", 128, 1_000_000, pubs: 1, subs: 0),
        NatsNetScenario.PubSub("nn-pubsub-16", "pub/sub 1:1", 16, 500_000, pubs: 1, subs: 1),
        NatsNetScenario.PubSub("nn-pubsub-16k", "pub/sub 1:1", 16 * 1024, 10_000, pubs: 1, subs: 1),
        NatsNetScenario.PubSub("nn-fanout-128", "fan-out 1:4", 128, 200_000, pubs: 1, subs: 4),
        NatsNetScenario.PubSub("nn-4x4-128", "4 pub x 4 sub", 128, 200_000, pubs: 4, subs: 4),
        NatsNetScenario.RequestReply("nn-reqrep-128", "request/reply 1 client, 1 service", 128, 4_000, clients: 1, services: 1, queue: false),
        NatsNetScenario.RequestReply("nn-qreqrep-16", "request/reply 10 clients, 2 queue services", 16, 20_000, clients: 10, services: 2, queue: true),

        // TLS (issue 11): nats-server's in-process TLS vs ours through the tls-terminator gateway, hop included.
        NatsNetScenario.PubSub("nn-tls-pub-128", "publish only", 128, 500_000, pubs: 1, subs: 0).OverTls("nn-tls-pub-128"),
        NatsNetScenario.PubSub("nn-tls-pubsub-128", "pub/sub 1:1", 128, 300_000, pubs: 1, subs: 1).OverTls("nn-tls-pubsub-128"),
        NatsNetScenario.PubSub("nn-tls-pubsub-16k", "pub/sub 1:1", 16 * 1024, 10_000, pubs: 1, subs: 1).OverTls("nn-tls-pubsub-16k"),
        NatsNetScenario.RequestReply("nn-tls-reqrep-128", "request/reply 1 client, 1 service", 128, 4_000, clients: 1, services: 1, queue: false).OverTls("nn-tls-reqrep-128"),

        // The gateway hop alone (issue 11): ours through the tls-terminator in --relay-only mode (plain NATS, Unix-socket
        // link to the core) vs nats-server behind socat, a plain TCP relay. Compare with pub-128 / pubsub-16k / reqrep-128.
        new HopScenario(new PubSubScenario("hop-pub-128", "publish only", pubs: 1, subs: 0, payload: 128, defaultCount: 2_000_000), "hop-pub-128"),
        new HopScenario(new PubSubScenario("hop-pubsub-16k", "pub/sub 1:1", pubs: 1, subs: 1, payload: 16 * 1024, defaultCount: 20_000), "hop-pubsub-16k"),
        new HopScenario(new RequestReplyScenario("hop-reqrep-128", "request/reply 1 client, 1 service", clients: 1, services: 1, queue: false, payload: 128, defaultCount: 4_000), "hop-reqrep-128"),

        // WebSocket (issue 12): nats-server's in-process websocket {} vs ours through the websocket gateway, hop included.
        NatsNetScenario.PubSub("nn-ws-pub-128", "publish only", 128, 500_000, pubs: 1, subs: 0).OverWebSocket("nn-ws-pub-128"),
        NatsNetScenario.PubSub("nn-ws-pubsub-128", "pub/sub 1:1", 128, 300_000, pubs: 1, subs: 1).OverWebSocket("nn-ws-pubsub-128"),
        NatsNetScenario.PubSub("nn-ws-pubsub-16k", "pub/sub 1:1", 16 * 1024, 10_000, pubs: 1, subs: 1).OverWebSocket("nn-ws-pubsub-16k"),
        NatsNetScenario.RequestReply("nn-ws-reqrep-128", "request/reply 1 client, 1 service", 128, 4_000, clients: 1, services: 1, queue: false).OverWebSocket("nn-ws-reqrep-128"),
        // The same over the raw generator speaking WebSocket itself (masked frames, no client library): NATS.Net's
        // WebSocket framing costs more CPU than either server, so the nn-ws rows mostly measure the client.
        new WebSocketScenario(new PubSubScenario("ws-pub-128", "publish only", pubs: 1, subs: 0, payload: 128, defaultCount: 2_000_000), "ws-pub-128"),
        new WebSocketScenario(new PubSubScenario("ws-pubsub-128", "pub/sub 1:1", pubs: 1, subs: 1, payload: 128, defaultCount: 1_000_000), "ws-pubsub-128"),
        new WebSocketScenario(new PubSubScenario("ws-pubsub-16k", "pub/sub 1:1", pubs: 1, subs: 1, payload: 16 * 1024, defaultCount: 20_000), "ws-pubsub-16k"),
        new WebSocketScenario(new RequestReplyScenario("ws-reqrep-128", "request/reply 1 client, 1 service", clients: 1, services: 1, queue: false, payload: 128, defaultCount: 4_000), "ws-reqrep-128"),
        // TLS over the raw generator (INFO in plaintext, then the handshake, as nats-server does by default): the
        // nn-tls rows' NATS.Net client burns more CPU than either server, so those rows read ~1.0x whatever the servers do.
        new TlsScenario(new PubSubScenario("tls-pub-128", "publish only", pubs: 1, subs: 0, payload: 128, defaultCount: 2_000_000), "tls-pub-128"),
        new TlsScenario(new PubSubScenario("tls-pubsub-128", "pub/sub 1:1", pubs: 1, subs: 1, payload: 128, defaultCount: 1_000_000), "tls-pubsub-128"),
        new TlsScenario(new PubSubScenario("tls-pubsub-16k", "pub/sub 1:1", pubs: 1, subs: 1, payload: 16 * 1024, defaultCount: 20_000), "tls-pubsub-16k"),
        new TlsScenario(new RequestReplyScenario("tls-reqrep-128", "request/reply 1 client, 1 service", clients: 1, services: 1, queue: false, payload: 128, defaultCount: 4_000), "tls-reqrep-128"),

        // MQTT 3.1.1 (issue 13), hand-encoded raw MQTT generator: nats-server's in-process MQTT vs ours through the MQTT
        // gateway the core supervises (hop and gateway CPU included); the -mosq rows put Mosquitto in the Go column.
        .. MqttRows(),

        // The same workloads through the nats.js client library (smaller counts): what a library user sees.
        new NatsJsScenario("njs-pub-16", "publish only", "pubsub", 16, 300_000, extra: new() { ["pubs"] = 1, ["subs"] = 0 }),
        new NatsJsScenario("njs-pub-128", "publish only", "pubsub", 128, 200_000, extra: new() { ["pubs"] = 1, ["subs"] = 0 }),
        new NatsJsScenario("njs-pubsub-16", "pub/sub 1:1", "pubsub", 16, 200_000, extra: new() { ["pubs"] = 1, ["subs"] = 1 }),
        new NatsJsScenario("njs-pubsub-16k", "pub/sub 1:1", "pubsub", 16 * 1024, 10_000, extra: new() { ["pubs"] = 1, ["subs"] = 1 }),
        new NatsJsScenario("njs-fanout-128", "fan-out 1:4", "pubsub", 128, 100_000, extra: new() { ["pubs"] = 1, ["subs"] = 4 }),
        new NatsJsScenario("njs-4x4-128", "4 pub x 4 sub", "pubsub", 128, 100_000, extra: new() { ["pubs"] = 4, ["subs"] = 4 }),
        new NatsJsScenario("njs-reqrep-128", "request/reply 1 client, 1 service", "reqrep", 128, 1_000, latency: true, extra: new() { ["clients"] = 1, ["services"] = 1, ["queue"] = false }),
        new NatsJsScenario("njs-qreqrep-16", "request/reply 10 clients, 2 queue services", "reqrep", 16, 5_000, latency: true, extra: new() { ["clients"] = 10, ["services"] = 2, ["queue"] = true }),
        new NatsJsScenario("njs-js-syncpub-16-mem", "JetStream sync publish, memory", "js-syncpub", 16, 1_000, latency: true, jetStream: true, extra: new() { ["storage"] = "memory" }),
        new NatsJsScenario("njs-js-asyncpub-128-file", "JetStream async publish (256 in flight), file", "js-asyncpub", 128, 8_000, jetStream: true, extra: new() { ["storage"] = "file" }),
        new NatsJsScenario("njs-js-ordered-128", "JetStream ordered consumer, file", "js-ordered", 128, 30_000, jetStream: true),
        new NatsJsScenario("njs-js-fetch-128", "JetStream durable pull fetch (batch 500), file", "js-fetch", 128, 20_000, jetStream: true),
    ];

    /// <summary>
    /// The MQTT rows: 128 B pub/sub at QoS 0 and 1 (64 PUBLISHes awaiting PUBACK), NATS⇄MQTT both ways, fan-out to
    /// 1,000 subscribers, and the memory of 10,000 idle clean sessions; then the rows Mosquitto can serve against it.
    /// </summary>
    private static IEnumerable<IScenario> MqttRows()
    {
        IScenario QoS0() => new MqttPubSubScenario("mqtt-pubsub-qos0-128", "MQTT pub/sub 1:1 QoS 0", MqttFlow.MqttToMqtt, qos: 0, subs: 1, payload: 128, defaultCount: 300_000);
        IScenario QoS1() => new MqttPubSubScenario("mqtt-pubsub-qos1-128", "MQTT pub/sub 1:1 QoS 1, 64 in flight", MqttFlow.MqttToMqtt, qos: 1, subs: 1, payload: 128, defaultCount: 20_000, window: 64);
        IScenario FanOut() => new MqttPubSubScenario("mqtt-fanout1k-128", "MQTT fan-out 1:1,000 QoS 0", MqttFlow.MqttToMqtt, qos: 0, subs: 1000, payload: 128, defaultCount: 1_000);
        IScenario Sessions() => new MqttSessionsScenario("mqtt-sessions10k", "10,000 idle MQTT sessions (clean): rate column = sessions per MB of RSS, higher is better", sessions: 10_000);
        yield return QoS0();
        yield return QoS1();
        yield return new MqttPubSubScenario("mqtt-nats2mqtt-128", "NATS publisher to MQTT subscriber, QoS 0", MqttFlow.NatsToMqtt, qos: 0, subs: 1, payload: 128, defaultCount: 300_000);
        yield return new MqttPubSubScenario("mqtt-mqtt2nats-128", "MQTT publisher (QoS 0) to NATS subscriber", MqttFlow.MqttToNats, qos: 0, subs: 1, payload: 128, defaultCount: 300_000);
        yield return FanOut();
        yield return Sessions();
        yield return new MosquittoScenario(QoS0(), "mqtt-pubsub-qos0-128-mosq");
        yield return new MosquittoScenario(QoS1(), "mqtt-pubsub-qos1-128-mosq");
        yield return new MosquittoScenario(FanOut(), "mqtt-fanout1k-128-mosq");
        yield return new MosquittoScenario(Sessions(), "mqtt-sessions10k-mosq");
    }

    /// <summary>
    /// The cluster rows (issue 46): the publisher or requester on node 1 (index 0), subscribers, queue members and
    /// responders on the other nodes as named; every subscriber's interest is probed from the node its messages come
    /// from (the publisher's; for a requester's inbox, the responder's) before any traffic.
    /// </summary>
    private static IEnumerable<IScenario> ClusterRows(bool cold)
    {
        string N(string name) => cold ? name + "-cold" : name;
        string T(string title) => cold ? title + ", cold" : title;
        static int Index(string conn) => conn[^1] - '0'; // "sub2", "q5": fewer than 10 per row
        static int Node1(string conn) => 0;

        // pub/sub 1:1: "pub0" on node 1, "sub0" on node 2.
        int PubSub(string conn) => conn.StartsWith("sub", StringComparison.Ordinal) ? 1 : 0;
        foreach (var (suffix, payload, count) in new[] { ("16", 16, 1_000_000L), ("128", 128, 1_000_000L), ("16k", 16 * 1024, 20_000L) })
        {
            yield return new ClusterScenario(
                new PubSubScenario(N("route-pub-sub-" + suffix), "", pubs: 1, subs: 1, payload: payload, defaultCount: count, cold: cold),
                N("route-pub-sub-" + suffix), T("3-node cluster: publisher on node 1, subscriber on node 2"), PubSub, Node1);
        }

        // fan-out: "sub0" on node 1, "sub1" on node 2, "sub2" on node 3.
        yield return new ClusterScenario(
            new PubSubScenario(N("route-fanout"), "", pubs: 1, subs: 3, payload: 128, defaultCount: 300_000, cold: cold),
            N("route-fanout"), T("3-node cluster, 128 B: publisher on node 1, one subscriber on each node"),
            c => c.StartsWith("sub", StringComparison.Ordinal) ? Index(c) : 0, Node1);

        // queue group: "q0".."q5" two per node (q0, q3 on node 1; q1, q4 on node 2; q2, q5 on node 3).
        yield return new ClusterScenario(
            new QueueGroupScenario(N("route-queue"), "", members: 6, payload: 128, defaultCount: 300_000, cold: cold),
            N("route-queue"), T("3-node cluster, 128 B: publisher on node 1, queue group of 6, two members per node; exactly once"),
            c => c.StartsWith('q') ? Index(c) % 3 : 0, Node1);

        // request/reply: "client0" on node 1, "svc0" on node 2; the inbox's interest is probed from node 2.
        yield return new ClusterScenario(
            new RequestReplyScenario(N("route-req-rep"), "", clients: 1, services: 1, queue: false, payload: 128, defaultCount: 4_000, cold: cold),
            N("route-req-rep"), T("3-node cluster, 128 B: requester on node 1, responder on node 2"),
            c => c.StartsWith("svc", StringComparison.Ordinal) ? 1 : 0,
            c => c.StartsWith("client", StringComparison.Ordinal) ? 1 : 0);
    }

    /// <summary>
    /// The core rows. Counts are quick-mode defaults (full mode x3, smoke mode /100). Cold rows ("-cold") skip the
    /// warm-up traffic, so they measure a freshly started server from its first message (JIT, tiering, pools).
    /// </summary>
    private static IEnumerable<IScenario> CoreRows(bool cold)
    {
        string N(string name) => cold ? name + "-cold" : name;
        string T(string title) => cold ? title + ", cold" : title;
        yield return new PubSubScenario(N("pub-16"), T("publish only"), pubs: 1, subs: 0, payload: 16, defaultCount: 3_000_000, cold: cold);
        yield return new PubSubScenario(N("pub-128"), T("publish only"), pubs: 1, subs: 0, payload: 128, defaultCount: 2_000_000, cold: cold);
        yield return new PubSubScenario(N("pubsub-16"), T("pub/sub 1:1"), pubs: 1, subs: 1, payload: 16, defaultCount: 1_500_000, cold: cold);
        yield return new PubSubScenario(N("pubsub-16k"), T("pub/sub 1:1"), pubs: 1, subs: 1, payload: 16 * 1024, defaultCount: 20_000, cold: cold);
        yield return new PubSubScenario(N("fanout-128"), T("fan-out 1:4"), pubs: 1, subs: 4, payload: 128, defaultCount: 400_000, cold: cold);
        yield return new PubSubScenario(N("4x4-128"), T("4 pub x 4 sub"), pubs: 4, subs: 4, payload: 128, defaultCount: 400_000, cold: cold);
        yield return new RequestReplyScenario(N("reqrep-128"), T("request/reply 1 client, 1 service"), clients: 1, services: 1, queue: false, payload: 128, defaultCount: 4_000, cold: cold);
        yield return new RequestReplyScenario(N("qreqrep-16"), T("request/reply 10 clients, 2 queue services"), clients: 10, services: 2, queue: true, payload: 16, defaultCount: 20_000, cold: cold);
        yield return new RequestReplyScenario(N("reqrep150-256"), T("request/reply 150 concurrent requesters"), clients: 150, services: 1, queue: false, payload: 256, defaultCount: 3_000, cold: cold);
        yield return new RequestReplyScenario(N("reqrep150-1k"), T("request/reply 150 concurrent requesters"), clients: 150, services: 1, queue: false, payload: 1024, defaultCount: 3_000, cold: cold);
        yield return new RequestReplyScenario(N("reqrep150-4k"), T("request/reply 150 concurrent requesters"), clients: 150, services: 1, queue: false, payload: 4096, defaultCount: 3_000, cold: cold);
    }
}
