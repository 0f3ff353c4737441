using System.Globalization;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Mqtt;

/// <summary>Which protocol publishes and which subscribes in an <see cref="MqttPubSubScenario"/>.</summary>
internal enum MqttFlow
{
    /// <summary>MQTT publisher, MQTT subscribers.</summary>
    MqttToMqtt,

    /// <summary>Raw NATS publisher on the core port, MQTT subscriber.</summary>
    NatsToMqtt,

    /// <summary>MQTT publisher, raw NATS subscriber on the core port.</summary>
    MqttToNats,
}

/// <summary>
/// MQTT 3.1.1 pub/sub through the broker's MQTT listener (issue 13's bench), driven by the hand-encoded generator in
/// this folder: one publisher on topic <c>bench/mq/RUN</c> (NATS subject <c>bench.mq.RUN</c>), S subscribers counting
/// at their end. QoS 0: pre-built PUBLISH buffers in large sends, at most a window of messages ahead of the slowest
/// subscriber. QoS 1: publisher with <c>window</c> PUBLISHes awaiting PUBACK; subscribers subscribe with QoS 1 and
/// acknowledge every delivery. msg/s = messages published per second (= the per-subscriber rate).
/// </summary>
internal sealed class MqttPubSubScenario : IScenario
{
    private readonly MqttFlow _flow;
    private readonly int _qos;
    private readonly int _subs;
    private readonly int _window;

    public MqttPubSubScenario(string name, string title, MqttFlow flow, int qos, int subs, int payload, long defaultCount, int window = 64)
    {
        Name = name;
        Title = title;
        _flow = flow;
        _qos = qos;
        _subs = subs;
        _window = window;
        PayloadBytes = payload;
        DefaultCount = defaultCount;
    }

    public string Name { get; }

    public string Title { get; }

    public string Generator => "mqtt";

    public int PayloadBytes { get; }

    /// <summary>MQTT sessions and QoS 1 state live in JetStream on both nats-server and ours.</summary>
    public bool NeedsJetStream => true;

    public bool ReportsLatency => false;

    public long DefaultCount { get; }

    /// <summary>A new config (a new MQTT port) for every server start.</summary>
    public IReadOnlyList<string> ServerArgs => ["-c", BenchMqtt.NextConfig()];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        BenchMqtt.Prepare(ctx);
        string topic = "bench/mq/" + ctx.RunId;
        string subject = "bench.mq." + ctx.RunId;
        long total = Math.Max(1, ctx.Count);
        // Warm-up (not timed) on the same path: about a second of traffic, fewer messages for QoS 1 and fan-out.
        long warm = Math.Clamp(total / 2, 100, _subs > 1 ? 500 : _qos > 0 ? 10_000 : 300_000);

        // Subscribers first, so that every published message has somewhere to go.
        var counters = new IReceiveCounter[_subs];
        var mqttSubs = new List<MqttSubscriber>();
        var natsSubs = new List<CountingSubscriber>();
        if (_flow == MqttFlow.MqttToNats)
        {
            for (int i = 0; i < _subs; i++)
            {
                // headers: the MQTT side may add Nmqtt-Pub (our gateway does); the size check is on the payload.
                var c = ctx.Connect("sub" + i, headers: true, readBuffer: 1024 * 1024);
                c.Send($"SUB {subject} {i + 1}\r\n");
                c.Flush();
                var s = new CountingSubscriber(c, PayloadBytes);
                natsSubs.Add(s);
                counters[i] = s;
            }
        }
        else
        {
            // Connected and subscribed from up to 8 threads: 1,000 CONNECT + SUBSCRIBE round trips one after the
            // other would make the fan-out row's set-up much longer than its timed part.
            var made = new MqttSubscriber[_subs];
            int setupThreads = Math.Min(8, _subs);
            var setup = new Thread[setupThreads];
            for (int t = 0; t < setupThreads; t++)
            {
                int first = t;
                setup[t] = ctx.StartWorker("mqtt-sub-setup", () =>
                {
                    for (int i = first; i < _subs; i += setupThreads)
                    {
                        var c = BenchMqtt.Connect(ctx, "sub" + i.ToString(CultureInfo.InvariantCulture), readBuffer: _subs > 16 ? 64 * 1024 : 1024 * 1024);
                        c.Subscribe(topic, _qos);
                        made[i] = new MqttSubscriber(c, PayloadBytes);
                    }
                });
            }

            foreach (var t in setup)
            {
                ctx.Join(t, $"{_subs} MQTT subscribers to connect and subscribe");
            }

            mqttSubs.AddRange(made);
            made.CopyTo(counters, 0);
        }

        // Flow window (QoS 0): 4 MB per subscriber on 1:1 rows, 64 KB on fan-out rows (1,000 subscribers' backlogs
        // add up in the broker), never less than two send batches.
        int windowBytes = _subs > 16 ? 64 * 1024 : 4 * 1024 * 1024;
        int chunk = Math.Min(256 * 1024, windowBytes / 4);
        Action<long> publish;
        Func<long> publishEnd;
        FlowGate gate;
        if (_flow == MqttFlow.NatsToMqtt)
        {
            var frame = Frames.Pub(subject, null, PayloadBytes);
            var p = new BulkPublisher(ctx.Connect("pub0"), frame, chunk);
            gate = new FlowGate(counters, Math.Max(2L * p.FramesPerBatch, windowBytes / frame.Length), ctx);
            publish = n => p.PublishAndFlush(n, gate);
            publishEnd = () => p.EndTimestamp;
        }
        else if (_qos == 0)
        {
            var frame = MqttPackets.PublishPacket(topic, 0, PayloadBytes, out _);
            var p = new BulkPublisher(BenchMqtt.Connect(ctx, "pub0"), frame, chunk);
            gate = new FlowGate(counters, Math.Max(2L * p.FramesPerBatch, windowBytes / frame.Length), ctx);
            publish = n => p.PublishAndFlush(n, gate);
            publishEnd = () => p.EndTimestamp;
        }
        else
        {
            // QoS 1: the publisher's window bounds what is in flight; the gate only guards against a runaway.
            var p = new MqttAckedPublisher(BenchMqtt.Connect(ctx, "pub0"), topic, PayloadBytes, _window, ctx);
            gate = new FlowGate(counters, long.MaxValue / 4, ctx);
            ctx.StartWorker("mqtt-puback-reader", () => p.ReadAcks(warm + total));
            publish = n =>
            {
                p.Publish(n);
                p.WaitAcked();
            };
            publishEnd = () => p.EndTimestamp;
        }

        // One thread per subscriber (blocking reads, as the NATS raw generator); small stacks for 1,000 of them.
        // Plain reads: SO_RCVLOWAT batching with a 2 ms timeout was tried on the fan-out row and cost the generator
        // more CPU (1,000 threads waking every 2 ms), not less.
        int stack = _subs > 16 ? 256 * 1024 : 0;
        foreach (var s in mqttSubs)
        {
            ctx.StartWorker("mqtt-sub", () => s.Run(warm, warm + total), stack);
        }

        foreach (var s in natsSubs)
        {
            ctx.StartWorker("nats-sub", () => s.Run(warm, warm + total));
        }

        publish(warm);
        foreach (var s in mqttSubs)
        {
            ctx.Wait(s.WarmDone, "warm-up messages at MQTT subscribers");
        }

        foreach (var s in natsSubs)
        {
            ctx.Wait(s.WarmDone, "warm-up messages at NATS subscribers");
        }

        using var go = new ManualResetEventSlim(false);
        var publisher = ctx.StartWorker("publisher", () =>
        {
            go.Wait();
            publish(total);
        });
        ctx.MarkStart();
        go.Set();
        ctx.Join(publisher, "publisher");
        long end = publishEnd();
        foreach (var s in mqttSubs)
        {
            ctx.Wait(s.Done, $"MQTT subscriber to receive {warm + total} messages (has {s.Received})");
            end = Math.Max(end, s.DoneTimestamp);
        }

        foreach (var s in natsSubs)
        {
            ctx.Wait(s.Done, $"NATS subscriber to receive {warm + total} messages (has {s.Received})");
            end = Math.Max(end, s.DoneTimestamp);
        }

        ctx.MarkEnd(end);
        foreach (var s in mqttSubs)
        {
            s.CheckNoExtra();
        }

        foreach (var s in natsSubs)
        {
            s.CheckNoExtra();
        }

        var r = ctx.Result;
        r.Messages = total;
        r.Deliveries = total * _subs;
        long dups = mqttSubs.Sum(s => s.Duplicates);
        var notes = new List<string>();
        if (gate.Stalls > 0)
        {
            notes.Add($"flow gate stalled {gate.Stalls}x");
        }

        if (dups > 0)
        {
            notes.Add($"{dups} QoS 1 redeliveries (DUP) not counted");
        }

        r.Note = notes.Count > 0 ? string.Join("; ", notes) : null;
        return r;
    }
}
