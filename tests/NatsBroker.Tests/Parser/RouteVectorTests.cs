using System.Runtime.CompilerServices;
using System.Text;
using NatsBroker.Protocol;
using static NatsBroker.Tests.Parser.RouteParserHarness;

namespace NatsBroker.Tests.Parser;

/// <summary>
/// What flowed on real routes and leaf node connections, captured with a TCP proxy between nats-server nodes
/// (RouteVectors/capture/run.sh: nodes A and B in cluster c1 with account PIN pinned on 2.14.5, leaf node L of
/// cluster "leafc" on A, subscribers on B and L, publishers on A and L, then the subscribers stopped). Every stream
/// parses with no error, split anywhere, and the writer turns what the parser read back into the same bytes.
/// </summary>
public sealed class RouteVectorTests
{
    public static TheoryData<string, string> Streams()
    {
        var data = new TheoryData<string, string>();
        foreach (var version in new[] { "v2.14.5", "v2.9.10" })
        {
            foreach (var file in Directory.GetFiles(Path.Combine(VectorDirectory(), version), "*.bin").Order(StringComparer.Ordinal))
            {
                data.Add(version, Path.GetFileName(file));
            }
        }
        return data;
    }

    [Fact]
    public void Both_versions_were_captured()
    {
        // The theory below must not pass by finding nothing: both captures hold routes and a leaf connection.
        foreach (var version in new[] { "v2.14.5", "v2.9.10" })
        {
            var files = Directory.GetFiles(Path.Combine(VectorDirectory(), version), "*.bin").Select(Path.GetFileName).ToList();
            Assert.Contains("leaf-conn1.solicitor-to-acceptor.bin", files);
            Assert.Contains("route-conn1.acceptor-to-solicitor.bin", files);
        }
        // 2.14.5 pools routes (default pool_size 3, plus one per pinned account): five connections between A and B.
        Assert.Equal(10, Directory.GetFiles(Path.Combine(VectorDirectory(), "v2.14.5"), "route-*.bin").Length);
        Assert.Equal(2, Directory.GetFiles(Path.Combine(VectorDirectory(), "v2.9.10"), "route-*.bin").Length);
    }

    [Theory]
    [MemberData(nameof(Streams))]
    public void A_captured_stream_parses_split_anywhere_and_writes_back_byte_for_byte(string version, string file)
    {
        var path = Path.Combine(VectorDirectory(), version, file);
        var input = File.ReadAllBytes(path);
        var kind = file.StartsWith("leaf-", StringComparison.Ordinal) ? ConnectionKind.Leaf : ConnectionKind.Route;
        // A pinned route's account is named in the soliciting side's INFO (route_account) and holds both ways.
        string pinned = kind == ConnectionKind.Route ? RouteAccount(Path.Combine(VectorDirectory(), version, SolicitorFile(file))) : "";
        Action<RouteRecordingHandler> setup = h =>
        {
            h.LearnFromInfo = true;
            h.Pinned = pinned;
        };

        var whole = Whole(kind, input, setup);
        Assert.DoesNotContain(whole.Events, e => e.StartsWith("ERROR", StringComparison.Ordinal));
        Assert.NotEmpty(whole.Events);

        var expected = input;
        if (version == "v2.9.10" && kind == ConnectionKind.Route)
        {
            // 2.9.10 writes a route LS- with an empty origin field and its separator: "LS-  ACC1 leaf.q lq". The
            // parser reads it (blanks split fields), and the writer writes the single-space form 2.14.5 writes.
            var text = Encoding.Latin1.GetString(input);
            if (file.StartsWith("route-conn1.acceptor", StringComparison.Ordinal)) Assert.Contains("\nLS-  ACC1 ", text, StringComparison.Ordinal);
            expected = Encoding.Latin1.GetBytes(text.Replace("\nLS-  ", "\nLS- ", StringComparison.Ordinal));
        }
        Assert.Equal(Encoding.Latin1.GetString(expected), Encoding.Latin1.GetString(whole.Rewritten.ToArray()));

        AssertSameAtEverySplit(kind, input, whole.Events, setup, stride: 11);
    }

    [Fact]
    public void The_captures_hold_every_route_and_leaf_form()
    {
        // Guards the theory above against captures that miss a form: these are the forms the writer must match.
        string All(string version) => string.Concat(Directory.GetFiles(Path.Combine(VectorDirectory(), version), "*.bin")
            .Select(f => Encoding.Latin1.GetString(File.ReadAllBytes(f))));
        var v214 = All("v2.14.5");
        var v29 = All("v2.9.10");
        // {Q}: the two queue groups, in the order that capture's node walked its map ("q1 q2" or "q2 q1").
        foreach (var form in new[] { "\nRS+ ACC1 bar q1 1\r\n", "\nRS- ACC1 bar q1\r\n", "\nRMSG ACC1 bar + rep.3 {Q} 11\r\n",
            "\nHMSG ACC1 bar | {Q} 18 27\r\n", "\nLS+ leafc ACC1 leaf.q lq 1\r\n", "\nLMSG leafc ACC1 bar | {Q} 18 30\r\n",
            "\nLMSG leaf.q | lq 7\r\n", "\nLS+ bar q1 1\r\n" })
        {
            Assert.Contains(form.Replace("{Q}", "q1 q2", StringComparison.Ordinal), v214, StringComparison.Ordinal);
            Assert.Contains(form.Replace("{Q}", "q2 q1", StringComparison.Ordinal), v29, StringComparison.Ordinal);
        }
        // 2.14.5 only: the pinned account's route leaves the account out; LS- carries the origin (lnocu).
        Assert.Contains("\nRS+ pinq pq 1\r\n", v214, StringComparison.Ordinal);
        Assert.Contains("\nRMSG pinq + r.p pq 7\r\n", v214, StringComparison.Ordinal);
        Assert.Contains("\nLS- leafc ACC1 leaf.q lq\r\n", v214, StringComparison.Ordinal);
        Assert.Contains("\nRS+ PIN pinq pq 1\r\n", v29, StringComparison.Ordinal);
        Assert.Contains("\nLS-  ACC1 leaf.q lq\r\n", v29, StringComparison.Ordinal);
    }

    private static string SolicitorFile(string file) => file.Replace("acceptor-to-solicitor", "solicitor-to-acceptor", StringComparison.Ordinal);

    private static string RouteAccount(string solicitorFile)
    {
        var text = Encoding.Latin1.GetString(File.ReadAllBytes(solicitorFile));
        const string key = "\"route_account\":\"";
        int i = text.IndexOf(key, StringComparison.Ordinal);
        if (i < 0) return "";
        int start = i + key.Length;
        return text[start..text.IndexOf('"', start)];
    }

    /// <summary>The vectors live beside this source file (they are read from the checkout, not copied to the output).</summary>
    private static string VectorDirectory([CallerFilePath] string source = "")
    {
        var dir = Path.Combine(Path.GetDirectoryName(source)!, "RouteVectors");
        Assert.True(Directory.Exists(dir), $"route test vectors not found at {dir}");
        return dir;
    }
}
