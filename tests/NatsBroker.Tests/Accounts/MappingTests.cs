using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>Subject mappings, top-level (global account) and per account, against both servers: same subjects out.</summary>
public sealed class MappingTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Config = """
        mappings {
          "orders.*.*": "bucket.{{wildcard(2)}}.{{wildcard(1)}}"
          "legacy.*": "old.$1"
          "part.*": "p.{{partition(7,1)}}.{{wildcard(1)}}"
          "split.*": "s.{{split(1,-)}}"
          "left.*": "l.{{splitfromleft(1,2)}}"
          "slice.*": "c.{{slicefromleft(1,2)}}"
          "half": [{destination: "half.a", weight: 50%}, {destination: "half.b", weight: 50%}]
        }
        authorization { users: [{user: g, password: g}] }
        accounts { A: { users: [{user: a, password: a}], mappings: { "x": "y" } } }
        """;

    private const string G = """{"verbose":false,"pedantic":false,"user":"g","pass":"g"}""";
    private const string A = """{"verbose":false,"pedantic":false,"user":"a","pass":"a"}""";

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Publishes_are_routed_to_the_mapped_subjects(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var c = await Connected(s, G);
        await c.SendLineAsync("SUB > 1");
        await c.PingAsync();
        var cases = new (string From, string To)[]
        {
            ("orders.east.42", "bucket.42.east"),
            ("legacy.q", "old.q"),
            ("part.customer-17", ""),
            ("split.a-b-c", "s.a.b.c"),
            ("left.abcdef", "l.ab.cdef"),
            ("slice.abcde", "c.ab.cd.e"),
            ("x", "x"), // account A's mapping does not apply in the global account
        };
        foreach (var (from, to) in cases)
        {
            await c.SendAsync($"PUB {from} 1\r\nm\r\n");
            var m = await c.ExpectMessageAsync(skipPongs: true);
            Output.WriteLine($"{from} -> {m.Subject}");
            if (to.Length > 0) Assert.Equal(to, m.Subject);
            else Assert.Matches(@"^p\.[0-6]\.customer-17$", m.Subject);
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Partitions_and_weights_agree_with_nats_server(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var c = await Connected(s, G);
        await c.SendLineAsync("SUB > 1");
        await c.PingAsync();
        // Partition numbers are FNV-1a of the token: fixed values both servers must produce.
        foreach (var key in new[] { "k1", "k2", "order-99" })
        {
            await c.SendAsync($"PUB part.{key} 1\r\nm\r\n");
            var m = await c.ExpectMessageAsync(skipPongs: true);
            Assert.Equal(ExpectedPartition(key, 7), int.Parse(m.Subject.Split('.')[1], System.Globalization.CultureInfo.InvariantCulture));
        }
        var seen = new HashSet<string>();
        for (int i = 0; i < 60; i++) await c.SendAsync("PUB half 1\r\nm\r\n");
        for (int i = 0; i < 60; i++) seen.Add((await c.ExpectMessageAsync(skipPongs: true)).Subject);
        // 50/50 over 60 publishes: both destinations seen (chance of missing one is 2^-59), never the source.
        Assert.Equal(["half.a", "half.b"], seen.Order(StringComparer.Ordinal));
    }

    /// <summary>Go's hash/fnv New32a over the token, modulo the partition count (nats-server getHashPartition).</summary>
    private static int ExpectedPartition(string key, int n)
    {
        uint h = 2166136261;
        foreach (byte b in System.Text.Encoding.UTF8.GetBytes(key))
        {
            h ^= b;
            h *= 16777619;
        }
        return (int)(h % (uint)n);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Account_mappings_apply_inside_the_account(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var c = await Connected(s, A);
        await c.SendLineAsync("SUB > 1");
        await c.PingAsync();
        await c.SendAsync("PUB x 1\r\nm\r\n");
        Assert.Equal("y", (await c.ExpectMessageAsync(skipPongs: true)).Subject);
    }
}
