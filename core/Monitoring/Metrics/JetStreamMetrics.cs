using System.Globalization;
using NatsBroker.JetStream;
using Prometheus;

namespace NatsBroker.Monitoring.Metrics;

/// <summary>
/// The <c>jetstream_*</c> families of prometheus-nats-exporter's /jsz collector (collector/jsz.go, run with
/// <c>-jsz=all</c>): server totals, then one series per stream and per consumer, with the exporter's labels. A
/// single server is its own meta, stream and consumer leader, as the exporter reports a server without a cluster.
/// </summary>
internal sealed class JetStreamMetrics
{
    private const string System = "jetstream";

    private static readonly string[] ServerLabels = ["server_id", "server_name", "cluster", "domain", "meta_leader", "is_meta_leader"];
    private static readonly string[] StreamLabels = [.. ServerLabels, "account", "account_id", "stream_name", "stream_leader", "is_stream_leader"];
    private static readonly string[] ConsumerLabels = [.. StreamLabels, "consumer_name", "consumer_leader", "is_consumer_leader", "consumer_desc", "consumer_created"];

    private readonly GaugeFamily _disabled, _streams, _consumers, _messages, _bytes, _maxMemory, _maxStorage;
    private readonly GaugeFamily _streamMessages, _streamBytes, _streamFirstSeq, _streamLastSeq, _streamConsumerCount;
    private readonly GaugeFamily _consumerDeliveredConsumerSeq, _consumerDeliveredStreamSeq, _consumerNumAckPending,
        _consumerNumRedelivered, _consumerNumWaiting, _consumerNumPending, _consumerAckFloorStreamSeq, _consumerAckFloorConsumerSeq;
    private readonly GaugeFamily[] _all;

    public JetStreamMetrics(MetricFactory factory)
    {
        GaugeFamily Server(string name, string help) => new(factory, $"{System}_server_{name}", help, ServerLabels);
        GaugeFamily Stream(string name, string help) => new(factory, $"{System}_stream_{name}", help, StreamLabels);
        GaugeFamily Consumer(string name, string help) => new(factory, $"{System}_consumer_{name}", help, ConsumerLabels);
        _disabled = Server("jetstream_disabled", "JetStream disabled or not");
        _streams = Server("total_streams", "Total number of streams in JetStream");
        _consumers = Server("total_consumers", "Total number of consumers in JetStream");
        _messages = Server("total_messages", "Total number of stored messages in JetStream");
        _bytes = Server("total_message_bytes", "Total number of bytes stored in JetStream");
        _maxMemory = Server("max_memory", "JetStream Max Memory");
        _maxStorage = Server("max_storage", "JetStream Max Storage");
        _streamMessages = Stream("total_messages", "Total number of messages from a stream");
        _streamBytes = Stream("total_bytes", "Total stored bytes from a stream");
        _streamFirstSeq = Stream("first_seq", "First sequence from a stream");
        _streamLastSeq = Stream("last_seq", "Last sequence from a stream");
        _streamConsumerCount = Stream("consumer_count", "Total number of consumers from a stream");
        _consumerDeliveredConsumerSeq = Consumer("delivered_consumer_seq", "Latest sequence number of a stream consumer");
        _consumerDeliveredStreamSeq = Consumer("delivered_stream_seq", "Latest sequence number of a stream");
        _consumerNumAckPending = Consumer("num_ack_pending", "Number of pending acks from a consumer");
        _consumerNumRedelivered = Consumer("num_redelivered", "Number of redelivered messages from a consumer");
        _consumerNumWaiting = Consumer("num_waiting", "Number of inflight fetch requests from a pull consumer");
        _consumerNumPending = Consumer("num_pending", "Number of pending messages from a consumer");
        _consumerAckFloorStreamSeq = Consumer("ack_floor_stream_seq", "Number of ack floor stream seq from a consumer");
        _consumerAckFloorConsumerSeq = Consumer("ack_floor_consumer_seq", "Number of ack floor consumer seq from a consumer");
        _all =
        [
            _disabled, _streams, _consumers, _messages, _bytes, _maxMemory, _maxStorage,
            _streamMessages, _streamBytes, _streamFirstSeq, _streamLastSeq, _streamConsumerCount,
            _consumerDeliveredConsumerSeq, _consumerDeliveredStreamSeq, _consumerNumAckPending, _consumerNumRedelivered,
            _consumerNumWaiting, _consumerNumPending, _consumerAckFloorStreamSeq, _consumerAckFloorConsumerSeq,
        ];
    }

    public void Scrape(MonitorEndpoints endpoints, JetStreamService? js, string serverId, string serverName, string? domain)
    {
        foreach (var f in _all) f.BeginScrape();
        var jsz = endpoints.BuildJsz();
        // Without a cluster the exporter labels the meta leader with nothing and the server as the meta leader.
        string[] server = [serverId, serverName, "", domain ?? "", "", "true"];
        _disabled.Set(jsz.Disabled ? 1 : 0, server);
        _maxMemory.Set(jsz.Config.MaxMemory, server);
        _maxStorage.Set(jsz.Config.MaxStorage, server);
        _streams.Set(jsz.Streams, server);
        _consumers.Set(jsz.Consumers, server);
        _messages.Set(jsz.Messages, server);
        _bytes.Set(jsz.Bytes, server);
        if (js is not null)
        {
            foreach (var account in js.EnabledAccounts()) ScrapeAccount(account, server, serverName);
        }
        foreach (var f in _all) f.EndScrape();
    }

    private void ScrapeAccount(JsAccount account, string[] server, string serverName)
    {
        foreach (var stream in account.Streams())
        {
            var state = stream.Store.GetState();
            // nats-server's /jsz names an account by its name and its ID alike outside operator mode.
            string[] s = [.. server, account.Name, account.Name, stream.Name, serverName, "true"];
            _streamMessages.Set(state.Messages, s);
            _streamBytes.Set(state.Bytes, s);
            _streamFirstSeq.Set(state.FirstSequence, s);
            _streamLastSeq.Set(state.LastSequence, s);
            _streamConsumerCount.Set(stream.ConsumerCount, s);
            foreach (var consumer in stream.Consumers)
            {
                var info = consumer.Info();
                string[] c = [.. s, info.Name, serverName, "true", info.Config.Description ?? "", Rfc3339Local(info.Created)];
                _consumerDeliveredConsumerSeq.Set(info.Delivered.ConsumerSeq, c);
                _consumerDeliveredStreamSeq.Set(info.Delivered.StreamSeq, c);
                _consumerNumAckPending.Set(info.NumAckPending, c);
                _consumerNumRedelivered.Set(info.NumRedelivered, c);
                _consumerNumWaiting.Set(info.NumWaiting, c);
                _consumerNumPending.Set(info.NumPending, c);
                _consumerAckFloorStreamSeq.Set(info.AckFloor.StreamSeq, c);
                _consumerAckFloorConsumerSeq.Set(info.AckFloor.ConsumerSeq, c);
            }
        }
    }

    /// <summary>Go's <c>t.Local().Format(time.RFC3339)</c>: whole seconds, "Z" for a zero offset, else ±hh:mm.</summary>
    private static string Rfc3339Local(DateTime utc)
    {
        var local = new DateTimeOffset(DateTime.SpecifyKind(utc, DateTimeKind.Utc)).ToLocalTime();
        var text = local.ToString("yyyy-MM-dd'T'HH:mm:ss", CultureInfo.InvariantCulture);
        return local.Offset == TimeSpan.Zero ? text + "Z" : text + local.ToString("zzz", CultureInfo.InvariantCulture);
    }
}
