using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Scripted raw pulls, acks and consumer infos for the differential tests against nats-server 2.14.5: every message
/// a pull's inbox receives, written as one comparable line (status code and description with the pull headers, or
/// the delivered payload with the ack subject's numbers but not its timestamp).
/// </summary>
internal sealed class PullScript(NatsConnection nats, string stream) : IAsyncDisposable
{
    private static readonly string[] ComparedHeaders = ["Nats-Pending-Messages", "Nats-Pending-Bytes", "Nats-Last-Consumer", "Nats-Last-Stream", "Nats-Subject"];

    public NatsConnection Nats { get; } = nats;
    public string Stream { get; } = stream;

    /// <summary>Starts our broker or nats-server 2.14.5 (-js, own store directory).</summary>
    public static Task<ServerProcess> StartAsync(bool oracle, ITestOutputHelper output)
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        var options = new ServerStartOptions { ExtraArgs = ["-js", "-sd", dir] };
        return oracle
            ? ServerProcess.StartAsync(ServerKind.Go, options with { GoBinary = Prerequisites.RequireOracle214(output) }, output)
            : ServerProcess.StartAsync(ServerKind.Ours, options, output);
    }

    public static async Task<PullScript> ConnectAsync(ServerProcess server, string stream, string storage = "memory")
    {
        var nats = new NatsConnection(new NatsOpts { Url = server.Url, RequestTimeout = TimeSpan.FromSeconds(5) });
        await nats.ConnectAsync();
        var s = new PullScript(nats, stream);
        await s.ApiAsync($"$JS.API.STREAM.CREATE.{stream}", $$"""{"name":"{{stream}}","subjects":["{{stream}}.>"],"storage":"{{storage}}"}""");
        return s;
    }

    public async Task<JsonElement> ApiAsync(string subject, string body = "")
    {
        var reply = await Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body));
        using var doc = JsonDocument.Parse(reply.Data ?? []);
        return doc.RootElement.Clone();
    }

    public async Task PublishAsync(string subject, string payload) =>
        await Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(payload));

    /// <summary>Creates a durable consumer from a JSON config (without braces); the answer's error, if any, as a line.</summary>
    public async Task<string> ConsumerAsync(string name, string config)
    {
        var body = $$"""{"stream_name":"{{Stream}}","config":{"durable_name":"{{name}}",""" + config + "}}";
        var r = await ApiAsync($"$JS.API.CONSUMER.CREATE.{Stream}.{name}", body);
        return r.TryGetProperty("error", out var e) ? $"create {name}: error {e.GetProperty("err_code")} {e.GetProperty("description")}" : $"create {name}: {Figures(r)}";
    }

    /// <summary>Consumer info figures: delivered, ack floor, num_pending / ack_pending / redelivered / waiting.</summary>
    public async Task<string> InfoAsync(string name) => Figures(await ApiAsync($"$JS.API.CONSUMER.INFO.{Stream}.{name}"));

    public static string Figures(JsonElement i)
    {
        if (i.TryGetProperty("error", out var e)) return $"error {e.GetProperty("err_code")}";
        var d = i.GetProperty("delivered");
        var a = i.GetProperty("ack_floor");
        return $"delivered ({d.GetProperty("consumer_seq")},{d.GetProperty("stream_seq")}) ack_floor ({a.GetProperty("consumer_seq")},{a.GetProperty("stream_seq")}) " +
            $"pending {i.GetProperty("num_pending")} ack_pending {i.GetProperty("num_ack_pending")} redelivered {i.GetProperty("num_redelivered")} waiting {i.GetProperty("num_waiting")}";
    }

    /// <summary>
    /// Publishes <paramref name="body"/> to <paramref name="subject"/> with a fresh inbox as reply and reads the inbox
    /// until a final status (4xx / 5xx) or <paramref name="quietMs"/> without anything, and returns the lines (repeated
    /// heartbeats count once); delivered messages also go to <paramref name="delivered"/>.
    /// </summary>
    public async Task<List<string>> RequestAsync(string subject, string body, int quietMs = 400, List<NatsMsg<byte[]>>? delivered = null)
    {
        // Not under the connection's own inbox prefix, which its request muxer listens to.
        var inbox = "_PULL." + Guid.NewGuid().ToString("N");
        await using var sub = await Nats.SubscribeCoreAsync<byte[]>(inbox);
        await Nats.PingAsync();
        await Nats.PublishAsync(subject, Encoding.UTF8.GetBytes(body), replyTo: inbox);
        var lines = new List<string>();
        using var overall = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        while (!overall.IsCancellationRequested)
        {
            using var quiet = CancellationTokenSource.CreateLinkedTokenSource(overall.Token);
            quiet.CancelAfter(quietMs);
            NatsMsg<byte[]> m;
            try { m = await sub.Msgs.ReadAsync(quiet.Token); }
            catch (OperationCanceledException) { break; }
            var line = Line(m);
            if (lines.Count == 0 || lines[^1] != line || !line.StartsWith("100 ", StringComparison.Ordinal)) lines.Add(line);
            if (m.Headers?.Code is >= 400) break;
            if (m.ReplyTo is not null) delivered?.Add(m);
        }
        return lines;
    }

    public Task<List<string>> PullAsync(string consumer, string body, int quietMs = 400, List<NatsMsg<byte[]>>? delivered = null) =>
        RequestAsync($"$JS.API.CONSUMER.MSG.NEXT.{Stream}.{consumer}", body, quietMs, delivered);

    /// <summary>An ack (with a reply, so the double-ack answer or its absence is seen).</summary>
    public Task<List<string>> AckAsync(NatsMsg<byte[]> m, string body) => RequestAsync(m.ReplyTo!, body, 250);

    private string Line(NatsMsg<byte[]> m)
    {
        var h = m.Headers;
        if (h is not null && h.Code != 0)
        {
            var sb = new StringBuilder().Append(h.Code).Append(' ').Append(h.MessageText);
            foreach (var k in ComparedHeaders)
            {
                if (h.TryGetValue(k, out var v)) sb.Append(" | ").Append(k).Append(": ").Append(WithoutTimestamp(v.ToString()));
            }
            return sb.ToString();
        }
        var data = m.Data is { Length: > 32 } big ? $"<{big.Length} bytes>" : Encoding.UTF8.GetString(m.Data ?? []);
        if (m.ReplyTo is null) return $"reply '{data}'";
        // $JS.ACK.<stream>.<consumer>.<delivered>.<sseq>.<dseq>.<ts>.<pending>: all but the timestamp.
        var t = m.ReplyTo.Split('.');
        return t.Length == 9 ? $"{data} delivered {t[4]} sseq {t[5]} dseq {t[6]} pending {t[8]}" : $"{data} reply {m.ReplyTo}";
    }

    /// <summary>An ack subject named in a header, its delivery timestamp masked (it differs between servers).</summary>
    private static string WithoutTimestamp(string value)
    {
        var t = value.Split('.');
        if (t.Length == 9 && value.StartsWith("$JS.ACK.", StringComparison.Ordinal)) t[7] = "<ts>";
        return string.Join('.', t);
    }

    public ValueTask DisposeAsync() => Nats.DisposeAsync();
}
