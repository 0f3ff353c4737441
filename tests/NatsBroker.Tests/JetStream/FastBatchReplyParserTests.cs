using System.Text;
using NatsBroker.JetStream.Batching;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// The fast-ingest reply parser that remembers the last reply's fixed part must give exactly the full parse's verdict
/// and fields for every reply, whatever came before it: runs of one batch, interleaved batches, and replies built to
/// share the remembered prefix while breaking the pattern after it.
/// </summary>
public sealed class FastBatchReplyParserTests
{
    private static readonly string[] Prefixes = ["_INBOX.abc", "p", "a.b.c.d", "x" + new string('y', 300)];
    private static readonly string[] Ids = ["ZJ1kqQ4yNG8PZW6Yq1Yd1k", "id2", "", "a.b"];
    private static readonly string[] Flows = ["10", "0", "100", "abc", "99999999", ""];
    private static readonly string[] Gaps = ["ok", "fail", "maybe", ""];
    private static readonly string[] Seqs = ["1", "2", "17", "0", "18446744073709551615", "+5", "007", "", "1.2", "x"];
    private static readonly string[] Ops = ["0", "1", "2", "3", "4", "5", "", "1.1", "01"];

    [Fact]
    public void Gives_the_full_parse_verdict_for_every_reply_in_any_order()
    {
        var rnd = new Random(11);
        var parser = new FastBatchReplyParser();
        string current = Reply(rnd);
        int fast = 0;
        for (int i = 0; i < 200_000; i++)
        {
            // Mostly the next message of the current batch (same fixed part), sometimes another reply altogether.
            string reply = rnd.Next(4) != 0 ? WithTail(current, Pick(rnd, Seqs), Pick(rnd, Ops)) : current = Reply(rnd);
            var bytes = Encoding.ASCII.GetBytes(reply);
            bool want = FastBatchReply.TryParse(bytes, out var expected);
            bool got = parser.TryParse(bytes, out var actual);
            Assert.True(want == got, $"verdict for '{reply}'");
            if (!want) continue;
            Assert.True(expected.Equals(actual), $"fields for '{reply}': {Describe(expected)} against {Describe(actual)}");
            if (expected.Seq > 1) fast++;
        }
        Assert.True(fast > 10_000, $"only {fast} valid continuation replies were generated");
    }

    [Fact]
    public void A_reply_sharing_the_prefix_with_extra_tokens_after_it_is_parsed_in_full()
    {
        var parser = new FastBatchReplyParser();
        Assert.True(parser.TryParse("_INBOX.x.id.10.ok.1.0.$FI"u8, out var first));
        Assert.Equal((1UL, FastBatchReply.OpStart), (first.Seq, first.Op));
        // Same bytes up to the seq token, then "2.1.1": the full parse reads op 1, seq 1 and gap "2", which breaks it.
        Assert.False(parser.TryParse("_INBOX.x.id.10.ok.2.1.1.$FI"u8, out _));
        Assert.True(parser.TryParse("_INBOX.x.id.10.ok.3.1.$FI"u8, out var third));
        Assert.Equal((3UL, FastBatchReply.OpAppend, true, (ushort)10), (third.Seq, third.Op, third.GapOk, third.Flow));
        Assert.Equal("id", Encoding.ASCII.GetString("_INBOX.x.id.10.ok.3.1.$FI"u8[third.Id]));
    }

    private static string Reply(Random rnd)
        => WithTail($"{Pick(rnd, Prefixes)}.{Pick(rnd, Ids)}.{Pick(rnd, Flows)}.{Pick(rnd, Gaps)}.1.0.$FI", "1", "0");

    /// <summary>The reply with its seq and op tokens replaced (everything before the seq token kept).</summary>
    private static string WithTail(string reply, string seq, string op)
    {
        var rest = reply[..^4];
        rest = rest[..rest.LastIndexOf('.')];
        rest = rest[..rest.LastIndexOf('.')];
        return $"{rest}.{seq}.{op}.$FI";
    }

    private static string Pick(Random rnd, string[] from) => from[rnd.Next(from.Length)];

    private static string Describe(FastBatchReply r) => $"(id {r.Id}, flow {r.Flow}, gap {r.GapOk}, seq {r.Seq}, op {r.Op}, seqStart {r.SeqStart})";
}
