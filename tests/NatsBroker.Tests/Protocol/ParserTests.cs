using System.Text;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>Parser robustness: case, whitespace, input split at every byte, pipelining.</summary>
public sealed class ParserTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Script =
        "SUB sp.a 1\r\nSUB sp.* q 2\r\nPUB sp.a 5\r\nhello\r\nPUB sp.a reply.to 0\r\n\r\n" +
        "HPUB sp.a 12 17\r\nNATS/1.0\r\n\r\nworld\r\nUNSUB 1\r\nPUB sp.a 3\r\nbye\r\nPING\r\n";

    private static readonly string[] ScriptExpected =
    [
        "MSG sp.a 1 5", "hello", "MSG sp.a 2 5", "hello",
        "MSG sp.a 1 reply.to 0", "", "MSG sp.a 2 reply.to 0", "",
        "HMSG sp.a 1 12 17", "NATS/1.0", "", "world", "HMSG sp.a 2 12 17", "NATS/1.0", "", "world",
        "MSG sp.a 2 3", "bye",
    ];

    private static int s_scriptRuns;

    /// <summary>
    /// Runs the script on subjects of its own (sp000001.a ...): the script's queue group on sp.* would otherwise
    /// be shared with the previous connection's, which the server may not have removed yet when the next one
    /// publishes, so the queue pick could hand a message to the connection that is going away. Fixed width, so
    /// every run has the script's length and the split positions stay the same.
    /// </summary>
    private static async Task<List<string>> RunScript(RawClient c, Func<byte[], Task> send)
    {
        var prefix = "sp" + Interlocked.Increment(ref s_scriptRuns).ToString("D6", System.Globalization.CultureInfo.InvariantCulture) + ".";
        await send(Encoding.ASCII.GetBytes(Script.Replace("sp.", prefix, StringComparison.Ordinal)));
        var got = await c.ReadUntilPongAsync();
        return got.Select(line => line.Replace(prefix, "sp.", StringComparison.Ordinal)).ToList();
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Script_in_one_write(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        Assert.Equal(ScriptExpected, await RunScript(c, b => c.SendBytesAsync(b)));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Script_byte_by_byte(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        Assert.Equal(ScriptExpected, await RunScript(c, b => c.SendChunkedAsync(b, 1, TimeSpan.FromMilliseconds(1))));
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Script_split_at_every_byte_position(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        var length = Encoding.ASCII.GetByteCount(Script) + 6; // RunScript's subject prefix
        // Several positions per connection keep the connection count down while covering every cut.
        for (var start = 1; start < length; start += 3)
        {
            await using var c = await Connected(s, QuietHeaders);
            var cuts = new[] { start, start + 1, start + 2 };
            var got = await RunScript(c, b => c.SendSplitAsync(b, cuts, TimeSpan.FromMilliseconds(2)));
            Assert.True(ScriptExpected.SequenceEqual(got), $"cuts at {string.Join(',', cuts)}: {string.Join(" | ", got)}");
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Connect_split_at_every_byte_position(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        var bytes = Encoding.ASCII.GetBytes("CONNECT {\"verbose\":true,\"pedantic\":false,\"name\":\"split\"}\r\nPING\r\n");
        for (var cut = 1; cut < bytes.Length; cut += 2)
        {
            await using var c = await RawClient.ConnectAsync(s);
            await c.ReadInfoAsync();
            await c.SendSplitAsync(bytes, [cut, cut + 1], TimeSpan.FromMilliseconds(2));
            Assert.Equal(["+OK"], await c.ReadUntilPongAsync());
        }
    }

    [SkippableTheory]
    [MemberData(nameof(CaseVariants))]
    public async Task Ops_are_case_insensitive(ServerKind kind, string sub, string pub, string ping, string unsub)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync($"{sub} ci.x 1\r\n{pub} ci.x 2\r\nhi\r\n{unsub} 1\r\n{pub} ci.x 2\r\nno\r\n{ping}\r\n");
        Assert.Equal(["MSG ci.x 1 2", "hi"], await c.ReadUntilPongAsync());
    }

    public static TheoryData<ServerKind, string, string, string, string> CaseVariants()
    {
        var d = new TheoryData<ServerKind, string, string, string, string>();
        foreach (var k in new[] { ServerKind.Ours, ServerKind.Go })
        {
            d.Add(k, "sub", "pub", "ping", "unsub");
            d.Add(k, "Sub", "Pub", "Ping", "Unsub");
            d.Add(k, "sUb", "pUB", "pInG", "uNsUb");
        }

        return d;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Lowercase_connect_and_hpub(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await RawClient.ConnectAsync(s);
        await c.ReadInfoAsync();
        await c.SendAsync("connect {\"verbose\":false,\"headers\":true}\r\nsub lc.x 1\r\nhpub lc.x 12 14\r\nNATS/1.0\r\n\r\nhi\r\npong\r\nping\r\n");
        Assert.Equal(["HMSG lc.x 1 12 14", "NATS/1.0", "", "hi"], await c.ReadUntilPongAsync());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Arbitrary_spaces_and_tabs_between_arguments(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s, QuietHeaders);
        await c.SendAsync("SUB\tws.x   q \t 1\r\nSUB  ws.x\t\t2\r\nPUB   ws.x\t \t rep    2\r\nhi\r\nHPUB \t ws.x  12\t14\r\nNATS/1.0\r\n\r\nho\r\nUNSUB\t 2 \r\n");
        var lines = await c.PingAsync();
        Assert.Equal(12, lines.Count);
        Assert.Contains("MSG ws.x 1 rep 2", lines);
        Assert.Contains("MSG ws.x 2 rep 2", lines);
        Assert.Contains("HMSG ws.x 1 12 14", lines);
        Assert.Contains("HMSG ws.x 2 12 14", lines);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Ping_with_trailing_garbage_and_bare_lf_are_tolerated(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        await c.SendAsync("PING x\r\n");
        await c.ExpectLineAsync("PONG");
        await c.SendAsync("PING\n");
        await c.ExpectLineAsync("PONG");
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Many_ops_pipelined_in_one_write(ServerKind kind)
    {
        var s = await SharedAsync(kind);
        await using var c = await Connected(s);
        const int N = 2000;
        var sb = new StringBuilder("SUB pl.> 1\r\n");
        for (var i = 0; i < N; i++)
        {
            var p = i.ToString(System.Globalization.CultureInfo.InvariantCulture);
            sb.Append($"PUB pl.{i % 7} {p.Length}\r\n{p}\r\n");
            if (i % 100 == 0)
            {
                sb.Append("PING\r\n");
            }
        }

        await c.SendAsync(sb.ToString());
        for (var i = 0; i < N; i++)
        {
            var m = await c.ExpectMessageAsync(skipPongs: true);
            Assert.Equal((i.ToString(), $"pl.{i % 7}"), (m.PayloadText, m.Subject));
        }

        Assert.Empty(await c.PingAsync());
        Assert.Equal(N / 100, c.PongsSkipped);
    }
}
