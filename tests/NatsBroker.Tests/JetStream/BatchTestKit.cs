using System.Text;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.JetStream;

/// <summary>Raw-protocol helpers for the batch publish tests: HPUB with batch headers, replies on _R.&gt;, stream admin.</summary>
internal static class BatchTestKit
{
    public static CancellationToken Timeout(int seconds = 10) => new CancellationTokenSource(TimeSpan.FromSeconds(seconds)).Token;

    public static async Task<RawClient> ConnectAsync(JsTestServer t)
    {
        var c = await RawClient.ConnectAsync("127.0.0.1", t.Server.Port);
        await c.HandshakeAsync("""{"verbose":false,"pedantic":false,"headers":true}""");
        await c.SendAsync("SUB _R.> 1\r\n");
        await c.PingAsync();
        return c;
    }

    public static string Batch(string id, ulong seq, string? commit = null) =>
        $"Nats-Batch-Id: {id}\r\nNats-Batch-Sequence: {seq}\r\n" + (commit is null ? "" : $"Nats-Batch-Commit: {commit}\r\n");

    /// <summary>HPUB with the header lines <paramref name="headers"/> ("K: V\r\n" each).</summary>
    public static Task HPubAsync(RawClient c, string subject, string? reply, string headers, string payload = "x")
    {
        string hdr = "NATS/1.0\r\n" + headers + "\r\n";
        int hl = Encoding.UTF8.GetByteCount(hdr);
        int tl = hl + Encoding.UTF8.GetByteCount(payload);
        string r = reply is null ? "" : reply + " ";
        return c.SendAsync($"HPUB {subject} {r}{hl} {tl}\r\n{hdr}{payload}\r\n");
    }

    public static Task PubAsync(RawClient c, string subject, string reply, string payload = "x") =>
        c.SendAsync($"PUB {subject} {reply} {Encoding.UTF8.GetByteCount(payload)}\r\n{payload}\r\n");

    /// <summary>The next reply's payload (and checks it was for <paramref name="reply"/> when given).</summary>
    public static async Task<string> ReplyAsync(RawClient c, string? reply = null)
    {
        var m = await c.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
        if (reply is not null) Assert.Equal(reply, m.Subject);
        return m.PayloadText;
    }

    public static async Task<string> ApiAsync(JsTestServer t, string subject, string body)
    {
        var reply = await t.Nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), cancellationToken: Timeout());
        return Encoding.UTF8.GetString(reply.Data ?? []);
    }

    public static async Task CreateStreamAsync(JsTestServer t, string json)
    {
        using var doc = JsonDocument.Parse(json);
        string name = doc.RootElement.GetProperty("name").GetString()!;
        var r = await ApiAsync(t, $"$JS.API.STREAM.CREATE.{name}", json);
        Assert.DoesNotContain("\"error\"", r, StringComparison.Ordinal);
    }

    public static async Task<long> MessagesAsync(JsTestServer t, string stream) =>
        (await t.Js.GetStreamAsync(stream, cancellationToken: Timeout())).Info.State.Messages;

    public static string Error(int code, int errCode, string description, string stream) =>
        $"{{\"error\":{{\"code\":{code},\"err_code\":{errCode},\"description\":\"{description}\"}},\"stream\":\"{stream}\",\"seq\":0}}";
}
