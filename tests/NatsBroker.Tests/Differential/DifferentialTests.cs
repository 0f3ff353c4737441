using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Differential;

public static class TranscriptData
{
    public static TheoryData<string> All()
    {
        var d = new TheoryData<string>();
        foreach (var n in Transcript.AllNames())
        {
            d.Add(n);
        }

        return d;
    }

    /// <summary>The transcripts nats-server 2.9.10 answers as 2.14.5 does (no <c>%since</c> line).</summary>
    public static TheoryData<string> SameIn29()
    {
        var d = new TheoryData<string>();
        foreach (var n in Transcript.AllNames())
        {
            if (Transcript.Load(n).Since is null) d.Add(n);
        }

        return d;
    }

    /// <summary>Line-by-line diff for failure messages.</summary>
    public static string Diff(string expectedLabel, string expected, string actualLabel, string actual)
    {
        var e = expected.Split('\n');
        var a = actual.Split('\n');
        var sb = new System.Text.StringBuilder();
        sb.AppendLine($"--- {expectedLabel}\n+++ {actualLabel}");
        for (var i = 0; i < Math.Max(e.Length, a.Length); i++)
        {
            var el = i < e.Length ? e[i] : "<none>";
            var al = i < a.Length ? a[i] : "<none>";
            sb.AppendLine(el == al ? "  " + el : $"- {el}\n+ {al}");
        }

        return sb.ToString();
    }
}

/// <summary>
/// Each transcript played against our broker and nats-server (Debian's 2.9.10, then 2.14.5): normalized outputs must
/// be equal.
/// </summary>
public sealed class DifferentialTests(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    [SkippableTheory]
    [MemberData(nameof(TranscriptData.SameIn29), MemberType = typeof(TranscriptData))]
    public async Task Ours_matches_nats_server(string name)
    {
        Prerequisites.RequireServer(ServerKind.Go, output);
        await CompareAsync(name, goBinary: null);
    }

    [SkippableTheory]
    [MemberData(nameof(TranscriptData.All), MemberType = typeof(TranscriptData))]
    public async Task Ours_matches_nats_server_2_14(string name)
    {
        await CompareAsync(name, Prerequisites.RequireOracle214(output));
    }

    private async Task CompareAsync(string name, string? goBinary)
    {
        var t = Transcript.Load(name);
        var goServer = await pool.GetAsync(ServerKind.Go, t.Config, goBinary: goBinary);
        var oursServer = await pool.GetAsync(ServerKind.Ours, t.Config);
        var results = await Task.WhenAll(TranscriptPlayer.PlayAsync(t, goServer), TranscriptPlayer.PlayAsync(t, oursServer));
        output.WriteLine("nats-server:\n" + results[0]);
        if (results[0] != results[1])
        {
            Assert.Fail(TranscriptData.Diff("nats-server " + goServer, results[0], "ours " + oursServer, results[1]));
        }
    }
}

/// <summary>
/// Sanity of the normalization: the same transcript against two nats-server processes must render identically
/// (otherwise the differential test would compare noise).
/// </summary>
public sealed class DifferentialSanityTests(ITestOutputHelper output, ServerPool pool) : IClassFixture<ServerPool>
{
    [SkippableTheory]
    [MemberData(nameof(TranscriptData.All), MemberType = typeof(TranscriptData))]
    public async Task Go_vs_go_is_identical(string name)
    {
        Prerequisites.RequireServer(ServerKind.Go, output);

        var t = Transcript.Load(name);
        var first = await pool.GetAsync(ServerKind.Go, t.Config, instance: 1);
        var second = await pool.GetAsync(ServerKind.Go, t.Config, instance: 2);
        var results = await Task.WhenAll(TranscriptPlayer.PlayAsync(t, first), TranscriptPlayer.PlayAsync(t, second));
        output.WriteLine(results[0]);
        if (results[0] != results[1])
        {
            Assert.Fail(TranscriptData.Diff("go #1", results[0], "go #2", results[1]));
        }

        Assert.DoesNotContain("[invalid json]", results[0], StringComparison.Ordinal);
    }

    [SkippableFact]
    public void There_are_at_least_30_transcripts_and_all_parse()
    {
        var names = Transcript.AllNames().ToList();
        Assert.True(names.Count >= 30, $"only {names.Count} transcripts");
        foreach (var n in names)
        {
            Assert.NotEmpty(Transcript.Load(n).Steps.Concat([new TranscriptStep(StepKind.Sleep, "", [])]));
        }
    }

    [SkippableFact]
    public void Info_normalization_masks_ids_and_keeps_contract_values()
    {
        var a = TranscriptPlayer.NormalizeInfo("""INFO {"server_id":"A","server_name":"A","version":"2.9.10","proto":1,"go":"go1.19","host":"127.0.0.1","port":1,"headers":true,"max_payload":1048576,"client_id":4,"client_ip":"127.0.0.1"}""");
        var b = TranscriptPlayer.NormalizeInfo("""INFO {"server_id":"B","server_name":"B","version":"0.1.0","proto":1,"host":"127.0.0.1","port":2,"headers":true,"max_payload":1048576,"client_id":99,"client_ip":"127.0.0.1"}""");
        Assert.Equal(a, b);
        var c = TranscriptPlayer.NormalizeInfo("""INFO {"server_id":"B","server_name":"B","version":"0.1.0","proto":1,"host":"127.0.0.1","port":2,"headers":true,"max_payload":1024,"client_id":99,"client_ip":"127.0.0.1"}""");
        Assert.NotEqual(a, c);
    }
}
