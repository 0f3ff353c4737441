using System.Text;
using System.Text.Json;
using NATS.Client.Core;

namespace NatsBroker.Tests.JetStream;

/// <summary>One broker for the class: mirrors, sources, subject transforms and republish through the raw API.</summary>
public sealed class MirrorSourceRepublishFixture : IAsyncLifetime
{
    internal JsTestServer Server { get; private set; } = null!;
    public async Task InitializeAsync() => Server = await JsTestServer.StartAsync();
    public async Task DisposeAsync() => await Server.DisposeAsync();
}

/// <summary>
/// Mirrors keep the origin's sequences and timestamps and follow it; sources add Nats-Stream-Source and apply
/// filters and subject transforms; stream subject_transform rewrites stored subjects; republish sends each stored
/// message again with nats-server's headers (nats-server stream.go).
/// </summary>
public sealed class MirrorSourceRepublishTests(MirrorSourceRepublishFixture fixture) : IClassFixture<MirrorSourceRepublishFixture>
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);
    private NatsConnection Nats => fixture.Server.Nats;

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

    private async Task<JsonElement> WaitForState(string stream, Func<JsonElement, bool> done)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (true)
        {
            var info = await Ok($"$JS.API.STREAM.INFO.{stream}");
            if (done(info)) return info;
            if (DateTime.UtcNow > deadline) Assert.Fail($"{stream} did not get there: {info}");
            await Task.Delay(50);
        }
    }

    private async Task<JsonElement> Get(string stream, ulong seq) =>
        (await Ok($"$JS.API.STREAM.MSG.GET.{stream}", $$"""{"seq":{{seq}}}""")).GetProperty("message");

    private static string Headers(JsonElement msg) =>
        msg.TryGetProperty("hdrs", out var h) ? Encoding.UTF8.GetString(h.GetBytesFromBase64()) : "";

    [Fact]
    public async Task Mirror_keeps_sequences_and_timestamps_follows_the_origin_and_answers_direct_gets_for_it()
    {
        await Ok("$JS.API.STREAM.CREATE.MO", """{"name":"MO","subjects":["mo.>"],"storage":"memory","allow_direct":true}""");
        for (int i = 1; i <= 4; i++) await Nats.RequestAsync<string, byte[]>($"mo.{i}", $"m{i}");
        await Ok("$JS.API.STREAM.MSG.DELETE.MO", """{"seq":2}""");

        var created = await Ok("$JS.API.STREAM.CREATE.MM", """{"name":"MM","storage":"memory","mirror":{"name":"MO"}}""");
        Assert.True(created.GetProperty("config").GetProperty("mirror_direct").GetBoolean()); // inherited from the origin
        Assert.False(created.GetProperty("config").TryGetProperty("subjects", out _));
        var info = await WaitForState("MM", i => i.GetProperty("state").GetProperty("last_seq").GetUInt64() == 4);
        Assert.Equal(3ul, info.GetProperty("state").GetProperty("messages").GetUInt64());
        Assert.Equal("MO", info.GetProperty("mirror").GetProperty("name").GetString());

        var original = await Get("MO", 3);
        var mirrored = await Get("MM", 3);
        Assert.Equal("mo.3", mirrored.GetProperty("subject").GetString());
        Assert.Equal(original.GetProperty("time").GetString(), mirrored.GetProperty("time").GetString());
        var gap = await Api("$JS.API.STREAM.MSG.GET.MM", """{"seq":2}""");
        Assert.Equal(10037, gap.GetProperty("error").GetProperty("err_code").GetInt32());

        await Nats.RequestAsync<string, byte[]>("mo.5", "m5");
        await WaitForState("MM", i => i.GetProperty("state").GetProperty("last_seq").GetUInt64() == 5
            && i.GetProperty("mirror").GetProperty("lag").GetUInt64() == 0);

        var update = await Api("$JS.API.STREAM.UPDATE.MM", """{"name":"MM","storage":"memory","mirror":{"name":"OTHER"}}""");
        Assert.Equal(10055, update.GetProperty("error").GetProperty("err_code").GetInt32());

        // With the origin gone, the mirror (mirror_direct) answers direct gets addressed to it.
        await Ok("$JS.API.STREAM.DELETE.MO");
        var direct = await Nats.RequestAsync<byte[], byte[]>("$JS.API.DIRECT.GET.MO", """{"seq":5}"""u8.ToArray(), replyOpts: new NatsSubOpts { Timeout = Wait });
        Assert.Equal("m5", Encoding.UTF8.GetString(direct.Data ?? []));
        Assert.Equal("mo.5", direct.Headers?["Nats-Subject"].ToString());
    }

    [Fact]
    public async Task Sources_filter_transform_and_mark_each_copy_with_Nats_Stream_Source()
    {
        await Ok("$JS.API.STREAM.CREATE.SO", """{"name":"SO","subjects":["so.>"],"storage":"memory"}""");
        var hdr = new NatsHeaders { ["Nats-Expected-Stream"] = "SO", ["App"] = "1" };
        await Nats.RequestAsync<string, byte[]>("so.a", "a1", headers: hdr);
        await Nats.RequestAsync<string, byte[]>("so.b", "b1");
        await Nats.RequestAsync<string, byte[]>("so.a", "a2");

        await Ok("$JS.API.STREAM.CREATE.ST", """
            {"name":"ST","subjects":["st.own"],"storage":"memory",
             "sources":[{"name":"SO","subject_transforms":[{"src":"so.a","dest":"from.a"}]},{"name":"SO2","filter_subject":"x.>"}]}
            """);
        var info = await WaitForState("ST", i => i.GetProperty("state").GetProperty("messages").GetUInt64() == 2);
        Assert.Equal(2, info.GetProperty("sources").GetArrayLength());

        var first = await Get("ST", 1);
        Assert.Equal("from.a", first.GetProperty("subject").GetString());
        var h = Headers(first);
        Assert.Contains("Nats-Stream-Source: SO 1 so.a from.a so.a\r\n", h, StringComparison.Ordinal);
        Assert.Contains("App: 1\r\n", h, StringComparison.Ordinal);
        Assert.DoesNotContain("Nats-Expected-Stream", h, StringComparison.Ordinal);
        Assert.Contains("Nats-Stream-Source: SO 3 so.a from.a so.a", Headers(await Get("ST", 2)), StringComparison.Ordinal);

        // Its own subjects still store, and a source created later (SO2) is picked up.
        await Nats.RequestAsync<string, byte[]>("st.own", "own");
        await Ok("$JS.API.STREAM.CREATE.SO2", """{"name":"SO2","subjects":["x.>"],"storage":"memory"}""");
        await Nats.RequestAsync<string, byte[]>("x.1", "x");
        await WaitForState("ST", i => i.GetProperty("state").GetProperty("messages").GetUInt64() == 4);
        Assert.Equal("x.1", (await Get("ST", 4)).GetProperty("subject").GetString());

        var dup = await Api("$JS.API.STREAM.CREATE.SD", """{"name":"SD","sources":[{"name":"SO"},{"name":"SO"}]}""");
        Assert.Equal(10140, dup.GetProperty("error").GetProperty("err_code").GetInt32());
        var cycle = await Api("$JS.API.STREAM.CREATE.SO3", """{"name":"SO3","subjects":["so3"],"sources":[{"name":"SO3"}]}""");
        Assert.Equal(10052, cycle.GetProperty("error").GetProperty("err_code").GetInt32());
    }

    [Fact]
    public async Task Subject_transform_rewrites_stored_subjects_and_republish_sends_copies_with_headers()
    {
        await Ok("$JS.API.STREAM.CREATE.TR", """
            {"name":"TR","subjects":["in.>"],"storage":"memory","subject_transform":{"src":"in.*.>","dest":"stored.{{wildcard(1)}}.>"},
             "republish":{"src":"stored.>","dest":"rp.>"}}
            """);
        await using var rp = await Nats.SubscribeCoreAsync<string>("rp.>");
        await Nats.PingAsync();
        var ack1 = await Nats.RequestAsync<string, byte[]>("in.a.x", "one");
        await Nats.RequestAsync<string, byte[]>("in.a.x", "two");
        Assert.Contains("\"seq\":1", Encoding.UTF8.GetString(ack1.Data!), StringComparison.Ordinal);
        Assert.Equal("stored.a.x", (await Get("TR", 1)).GetProperty("subject").GetString());

        using var cts = new CancellationTokenSource(Wait);
        var m1 = await rp.Msgs.ReadAsync(cts.Token);
        var m2 = await rp.Msgs.ReadAsync(cts.Token);
        Assert.Equal("rp.a.x", m1.Subject); // the tokens "stored.>" matched, after "rp."
        Assert.Equal("one", m1.Data);
        Assert.Equal("TR", m1.Headers!["Nats-Stream"].ToString());
        Assert.Equal("stored.a.x", m1.Headers["Nats-Subject"].ToString());
        Assert.Equal("1", m1.Headers["Nats-Sequence"].ToString());
        Assert.Equal("0", m1.Headers["Nats-Last-Sequence"].ToString());
        Assert.True(DateTime.TryParse(m1.Headers["Nats-Time-Stamp"].ToString(), out _));
        Assert.Equal("1", m2.Headers!["Nats-Last-Sequence"].ToString());

        await Ok("$JS.API.STREAM.CREATE.HO", """{"name":"HO","subjects":["ho.>"],"storage":"memory","republish":{"src":"ho.>","dest":"hrp.>","headers_only":true}}""");
        await using var hrp = await Nats.SubscribeCoreAsync<byte[]>("hrp.>");
        await Nats.PingAsync();
        await Nats.RequestAsync<string, byte[]>("ho.1", "12345");
        var h = await hrp.Msgs.ReadAsync(cts.Token);
        Assert.Empty(h.Data ?? []);
        Assert.Equal("5", h.Headers!["Nats-Msg-Size"].ToString());

        var loop = await Api("$JS.API.STREAM.CREATE.LOOP", """{"name":"LOOP","subjects":["loop.>"],"republish":{"src":">","dest":"loop.x"}}""");
        Assert.Equal("stream configuration for republish destination forms a cycle", loop.GetProperty("error").GetProperty("description").GetString());
        var bad = await Api("$JS.API.STREAM.CREATE.BADTR", """{"name":"BADTR","subjects":["b.>"],"subject_transform":{"src":"b.>","dest":"c.*"}}""");
        Assert.Equal(10156, bad.GetProperty("error").GetProperty("err_code").GetInt32());
    }
}
