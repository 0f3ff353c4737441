using System.Text;
using System.Text.Json;
using NATS.Client.Core;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// After a restart a source resumes after the newest origin sequence it holds (its Nats-Stream-Source headers) and a
/// mirror after its last sequence: nothing is copied twice, and what the origin got meanwhile arrives.
/// </summary>
public sealed class SourceRestartTests
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    private static async Task<JsonElement> Api(NatsConnection nats, string subject, string body = "")
    {
        var reply = await nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), replyOpts: new NatsSubOpts { Timeout = Wait });
        return JsonDocument.Parse(reply.Data ?? []).RootElement.Clone();
    }

    private static async Task WaitForLastSeq(NatsConnection nats, string stream, ulong last)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (true)
        {
            var info = await Api(nats, $"$JS.API.STREAM.INFO.{stream}");
            if (info.GetProperty("state").GetProperty("last_seq").GetUInt64() == last) return;
            if (DateTime.UtcNow > deadline) Assert.Fail($"{stream} stuck at {info.GetProperty("state")}");
            await Task.Delay(50);
        }
    }

    [Fact]
    public async Task Sources_and_mirrors_resume_where_they_were_after_a_restart()
    {
        string dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var first = await JsTestServer.StartAsync(dir);
            await Api(first.Nats, "$JS.API.STREAM.CREATE.ORIG", """{"name":"ORIG","subjects":["orig.>"]}""");
            for (int i = 0; i < 3; i++) await first.Nats.RequestAsync<string, byte[]>($"orig.{i}", "x");
            await Api(first.Nats, "$JS.API.STREAM.CREATE.AGG", """{"name":"AGG","sources":[{"name":"ORIG"}]}""");
            await Api(first.Nats, "$JS.API.STREAM.CREATE.COPY", """{"name":"COPY","mirror":{"name":"ORIG"}}""");
            await WaitForLastSeq(first.Nats, "AGG", 3);
            await WaitForLastSeq(first.Nats, "COPY", 3);
            await first.StopKeepingStoreAsync();

            await using var second = await JsTestServer.StartAsync(dir);
            for (int i = 3; i < 5; i++) await second.Nats.RequestAsync<string, byte[]>($"orig.{i}", "y");
            await WaitForLastSeq(second.Nats, "AGG", 5);
            await WaitForLastSeq(second.Nats, "COPY", 5);
            await Task.Delay(300); // a duplicate copy would show up as a sixth message
            var agg = await Api(second.Nats, "$JS.API.STREAM.INFO.AGG");
            Assert.Equal(5ul, agg.GetProperty("state").GetProperty("messages").GetUInt64());
            var fifth = await Api(second.Nats, "$JS.API.STREAM.MSG.GET.AGG", """{"seq":5}""");
            var hdrs = Encoding.UTF8.GetString(fifth.GetProperty("message").GetProperty("hdrs").GetBytesFromBase64());
            Assert.Contains("Nats-Stream-Source: ORIG 5 > > orig.4", hdrs, StringComparison.Ordinal);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (IOException) { }
        }
    }
}
