using System.Globalization;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// What a durable pull consumer of a file stream delivers batch by batch, read off the wire: exactly the next
/// messages, in order, each with the ack subject nats-server gives it
/// (<c>$JS.ACK.&lt;stream&gt;.&lt;consumer&gt;.&lt;delivered&gt;.&lt;sseq&gt;.&lt;dseq&gt;.&lt;ts&gt;.&lt;pending&gt;</c>, consumer.go
/// ackReplyT), acks taken per message, and a redelivery after ack_wait counted in both numbers.
/// </summary>
public sealed class PullDeliveryTests
{
    private static CancellationToken Timeout(int seconds = 20) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    private sealed record Delivery(string Subject, string Payload, string Stream, string Consumer, ulong Delivered, ulong StreamSeq, ulong ConsumerSeq, long Ts, ulong Pending, string Reply, string? Header);

    private static Delivery Parse(NatsMsg<string> m, string stream, string consumer)
    {
        string prefix = $"$JS.ACK.{stream}.{consumer}.";
        Assert.StartsWith(prefix, m.ReplyTo);
        var t = m.ReplyTo![prefix.Length..].Split('.');
        Assert.Equal(5, t.Length);
        return new Delivery(m.Subject, m.Data!, stream, consumer, ulong.Parse(t[0], CultureInfo.InvariantCulture), ulong.Parse(t[1], CultureInfo.InvariantCulture),
            ulong.Parse(t[2], CultureInfo.InvariantCulture), long.Parse(t[3], CultureInfo.InvariantCulture), ulong.Parse(t[4], CultureInfo.InvariantCulture), m.ReplyTo,
            m.Headers is { } h && h.TryGetValue("X-N", out var v) ? v.ToString() : null);
    }

    /// <summary>One MSG.NEXT request of <paramref name="batch"/>, read until <paramref name="expect"/> messages came.</summary>
    private static async Task<List<Delivery>> FetchAsync(JsTestServer t, string stream, string consumer, int batch, int expect, string inbox)
    {
        await using var sub = await t.Nats.SubscribeCoreAsync<string>(inbox, cancellationToken: Timeout());
        await t.Nats.PublishAsync($"$JS.API.CONSUMER.MSG.NEXT.{stream}.{consumer}", $$"""{"batch":{{batch}},"expires":5000000000}""", replyTo: inbox, cancellationToken: Timeout());
        var got = new List<Delivery>();
        var ct = Timeout();
        while (got.Count < expect)
        {
            var m = await sub.Msgs.ReadAsync(ct);
            Assert.False(m.Headers?.Code is >= 400, $"status {m.Headers?.Code} {m.Headers?.MessageText} after {got.Count} messages");
            if (m.Headers?.Code == 100) continue; // heartbeat
            got.Add(Parse(m, stream, consumer));
        }
        return got;
    }

    [Fact]
    public async Task Batches_deliver_exactly_the_next_messages_with_their_ack_subjects_and_acks_count_per_message()
    {
        await using var t = await JsTestServer.StartAsync();
        const int total = 1_200;
        await t.Js.CreateStreamAsync(new StreamConfig("PD", ["pd.>"]) { Storage = StreamConfigStorage.File }, Timeout());
        long before = (DateTime.UtcNow - DateTime.UnixEpoch).Ticks * 100;
        for (int i = 1; i <= total; i++)
        {
            // Every tenth message has a header block, delivered with it.
            var headers = i % 10 == 0 ? new NatsHeaders { ["X-N"] = $"h{i}" } : null;
            (await t.Js.PublishAsync($"pd.{i % 7}", $"m{i}", headers: headers, cancellationToken: Timeout())).EnsureSuccess();
        }
        long after = (DateTime.UtcNow - DateTime.UnixEpoch).Ticks * 100;
        await t.Js.CreateOrUpdateConsumerAsync("PD", new ConsumerConfig("bench") { AckPolicy = ConsumerConfigAckPolicy.Explicit, AckWait = TimeSpan.FromSeconds(4) }, Timeout());

        var first = await FetchAsync(t, "PD", "bench", 500, 500, "_INBOX.pd.1");
        for (int i = 0; i < first.Count; i++)
        {
            var d = first[i];
            ulong seq = (ulong)i + 1;
            Assert.Equal(($"pd.{seq % 7}", $"m{seq}", seq % 10 == 0 ? $"h{seq}" : null), (d.Subject, d.Payload, d.Header));
            Assert.Equal((1ul, seq, seq, (ulong)total - seq), (d.Delivered, d.StreamSeq, d.ConsumerSeq, d.Pending));
            Assert.InRange(d.Ts, before, after); // the stored message's timestamp
            if (i > 0) Assert.True(d.Ts >= first[i - 1].Ts);
        }

        // Ack all but the last one; the next batch goes on where the first ended.
        foreach (var d in first.Take(499)) await t.Nats.PublishAsync(d.Reply, "+ACK", cancellationToken: Timeout());
        var second = await FetchAsync(t, "PD", "bench", 500, 500, "_INBOX.pd.2");
        Assert.Equal(Enumerable.Range(501, 500).Select(i => (ulong)i), second.Select(d => d.StreamSeq));
        Assert.Equal(Enumerable.Range(501, 500).Select(i => (ulong)i), second.Select(d => d.ConsumerSeq));
        Assert.All(second, d => Assert.Equal(1ul, d.Delivered));
        foreach (var d in second) await t.Nats.PublishAsync(d.Reply, "+ACK", cancellationToken: Timeout());

        // The unacked message comes back after ack_wait, first, as delivery 2 under a new consumer sequence; then the rest.
        await Task.Delay(4_300);
        var third = await FetchAsync(t, "PD", "bench", 500, 201, "_INBOX.pd.3");
        Assert.Equal((500ul, 1_001ul, 2ul), (third[0].StreamSeq, third[0].ConsumerSeq, third[0].Delivered));
        Assert.Equal(("m500", "h500"), (third[0].Payload, third[0].Header));
        Assert.Equal(Enumerable.Range(1_001, 200).Select(i => (ulong)i), third.Skip(1).Select(d => d.StreamSeq));
        Assert.Equal(0ul, third[^1].Pending);
        foreach (var d in third) await t.Nats.PublishAsync(d.Reply, "+ACK", cancellationToken: Timeout());

        var info = await WaitForAckFloorAsync(t, "PD", "bench", total);
        Assert.Equal(0, info.NumAckPending);
        Assert.Equal(0ul, info.NumPending);
        Assert.Equal(((ulong)total + 1, (ulong)total), (info.Delivered.ConsumerSeq, info.Delivered.StreamSeq));
    }

    [Fact]
    public async Task Long_and_non_ascii_names_get_working_ack_subjects()
    {
        await using var t = await JsTestServer.StartAsync();
        // 255-character names (the limit) are 520 bytes of ack prefix; non-ASCII ones are longer still in UTF-8.
        string stream = "STRÖM" + new string('s', 250);
        string consumer = "wörker" + new string('c', 249);
        Assert.Equal((255, 255), (stream.Length, consumer.Length));
        await t.Js.CreateStreamAsync(new StreamConfig(stream, ["names.>"]) { Storage = StreamConfigStorage.Memory }, Timeout());
        for (int i = 1; i <= 3; i++) (await t.Js.PublishAsync($"names.{i}", $"n{i}", cancellationToken: Timeout())).EnsureSuccess();
        await t.Js.CreateOrUpdateConsumerAsync(stream, new ConsumerConfig(consumer) { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());

        var got = await FetchAsync(t, stream, consumer, 10, 3, "_INBOX.names");
        Assert.Equal(["n1", "n2", "n3"], got.Select(d => d.Payload));
        Assert.Equal([1ul, 2ul, 3ul], got.Select(d => d.StreamSeq));
        foreach (var d in got) await t.Nats.PublishAsync(d.Reply, "+ACK", cancellationToken: Timeout());

        var info = await WaitForAckFloorAsync(t, stream, consumer, 3);
        Assert.Equal(0, info.NumAckPending);
    }

    private static async Task<ConsumerInfo> WaitForAckFloorAsync(JsTestServer t, string stream, string consumer, ulong floor)
    {
        var ct = Timeout();
        while (true)
        {
            var c = await t.Js.GetConsumerAsync(stream, consumer, ct);
            if (c.Info.AckFloor.StreamSeq >= floor) return c.Info;
            await Task.Delay(50, ct);
        }
    }
}
