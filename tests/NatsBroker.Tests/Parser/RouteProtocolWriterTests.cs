using System.Text;
using NatsBroker.Protocol;
using static NatsBroker.Tests.Parser.RouteParserHarness;

namespace NatsBroker.Tests.Parser;

/// <summary>The route op writer: exact lines for each form, and writer → parser round trips over the combinations.</summary>
public sealed class RouteProtocolWriterTests
{
    private static string Interest(RouteProtocolWriter.InterestOp op, string origin, string account, string subject, string queue, int weight)
    {
        var buf = new byte[RouteProtocolWriter.InterestLength(op, B(origin), B(account), B(subject), B(queue), weight)];
        int n = RouteProtocolWriter.WriteInterest(buf, op, B(origin), B(account), B(subject), B(queue), weight);
        Assert.Equal(buf.Length, n);
        return Encoding.ASCII.GetString(buf);
    }

    private static string Header(ConnectionKind to, string origin, string account, string subject, string reply, string queues, int hdr, int size)
    {
        var buf = new byte[RouteProtocolWriter.MessageHeaderLength(to, B(origin), B(account), B(subject), B(reply), B(queues), hdr, size)];
        int n = RouteProtocolWriter.WriteMessageHeader(buf, to, B(origin), B(account), B(subject), B(reply), B(queues), hdr, size);
        Assert.Equal(buf.Length, n);
        return Encoding.ASCII.GetString(buf);
    }

    [Fact]
    public void Interest_lines_are_written_as_nats_server_writes_them()
    {
        Assert.Equal("RS+ ACC1 foo.>\r\n", Interest(RouteProtocolWriter.InterestOp.RouteSub, "", "ACC1", "foo.>", "", 0));
        Assert.Equal("RS+ ACC1 bar q1 1\r\n", Interest(RouteProtocolWriter.InterestOp.RouteSub, "", "ACC1", "bar", "q1", 1));
        Assert.Equal("RS+ pinq pq 12345\r\n", Interest(RouteProtocolWriter.InterestOp.RouteSub, "", "", "pinq", "pq", 12345));
        Assert.Equal("RS- ACC1 bar q1\r\n", Interest(RouteProtocolWriter.InterestOp.RouteUnsub, "", "ACC1", "bar", "q1", 7));
        Assert.Equal("LS+ leafc ACC1 leaf.q lq 1\r\n", Interest(RouteProtocolWriter.InterestOp.LeafSub, "leafc", "ACC1", "leaf.q", "lq", 1));
        Assert.Equal("LS- leafc ACC1 leaf.q lq\r\n", Interest(RouteProtocolWriter.InterestOp.LeafUnsub, "leafc", "ACC1", "leaf.q", "lq", 1));
        Assert.Equal("LS- ACC1 leaf.sub\r\n", Interest(RouteProtocolWriter.InterestOp.LeafUnsub, "", "ACC1", "leaf.sub", "", 0));
        Assert.Equal("LS+ bar q2 1\r\n", Interest(RouteProtocolWriter.InterestOp.LeafSub, "", "", "bar", "q2", 1));
    }

    [Fact]
    public void Message_lines_are_written_as_nats_server_writes_them()
    {
        Assert.Equal("RMSG ACC1 foo.x 5\r\n", Header(ConnectionKind.Route, "", "ACC1", "foo.x", "", "", -1, 5));
        Assert.Equal("RMSG ACC1 foo.y rep.1 9\r\n", Header(ConnectionKind.Route, "", "ACC1", "foo.y", "rep.1", "", -1, 9));
        Assert.Equal("RMSG ACC1 bar | q2 q1 6\r\n", Header(ConnectionKind.Route, "", "ACC1", "bar", "", "q2 q1", -1, 6));
        Assert.Equal("RMSG ACC1 bar + rep.3 q2 q1 11\r\n", Header(ConnectionKind.Route, "", "ACC1", "bar", "rep.3", "q2 q1", -1, 11));
        Assert.Equal("RMSG pinq + r.p pq 7\r\n", Header(ConnectionKind.Route, "", "", "pinq", "r.p", "pq", -1, 7));
        Assert.Equal("HMSG ACC1 foo.h rep.2 18 26\r\n", Header(ConnectionKind.Route, "", "ACC1", "foo.h", "rep.2", "", 18, 26));
        Assert.Equal("HMSG pin.b 18 27\r\n", Header(ConnectionKind.Route, "", "", "pin.b", "", "", 18, 27));
        Assert.Equal("LMSG leafc ACC1 foo.fromleaf 0 8\r\n", Header(ConnectionKind.Route, "leafc", "ACC1", "foo.fromleaf", "", "", -1, 8));
        Assert.Equal("LMSG leafc ACC1 bar | q2 q1 18 30\r\n", Header(ConnectionKind.Route, "leafc", "ACC1", "bar", "", "q2 q1", 18, 30));
        Assert.Equal("LMSG leaf.q | lq 7\r\n", Header(ConnectionKind.Leaf, "", "ignored", "leaf.q", "", "lq", -1, 7));
        Assert.Equal("HMSG leaf.q + rr lq 18 28\r\n", Header(ConnectionKind.Leaf, "", "", "leaf.q", "rr", "lq", 18, 28));
    }

    [Fact]
    public void Written_interest_parses_back_to_its_fields()
    {
        int cases = 0;
        foreach (var pinned in new[] { "", "PIN" })
        foreach (var lnocu in new[] { false, true })
        foreach (var op in Enum.GetValues<RouteProtocolWriter.InterestOp>())
        foreach (var queue in new[] { "", "grp" })
        {
            bool leafOp = op is RouteProtocolWriter.InterestOp.LeafSub or RouteProtocolWriter.InterestOp.LeafUnsub;
            bool sub = op is RouteProtocolWriter.InterestOp.RouteSub or RouteProtocolWriter.InterestOp.LeafSub;
            string origin = op == RouteProtocolWriter.InterestOp.LeafSub || (op == RouteProtocolWriter.InterestOp.LeafUnsub && lnocu) ? "clu" : "";
            string account = pinned.Length > 0 ? "" : "ACC";
            int weight = sub && queue.Length > 0 ? 42 : 0;
            var line = Interest(op, origin, account, "a.b.>", queue, weight);
            var handler = Whole(ConnectionKind.Route, B(line), h => { h.Pinned = pinned; h.Lnocu = lnocu; });
            var kind = leafOp ? (sub ? "LeafSub" : "LeafUnsub") : (sub ? "Sub" : "Unsub");
            var expectedAccount = pinned.Length > 0 ? pinned : account;
            Assert.Equal([$"{kind} o={origin} a={expectedAccount} s=a.b.> q={queue} w={weight} args={line[4..^2]}"], handler.Events);
            Assert.Equal(line, Encoding.ASCII.GetString(handler.Rewritten.ToArray()));
            cases++;
        }
        Assert.Equal(32, cases);
    }

    [Fact]
    public void Written_messages_parse_back_to_their_fields()
    {
        int cases = 0;
        var payload = "NATS/1.0\r\n\r\nbody"u8.ToArray();
        foreach (var to in new[] { ConnectionKind.Route, ConnectionKind.Leaf })
        foreach (var pinned in new[] { "", "PIN" })
        foreach (var origin in new[] { "", "clu" })
        foreach (var reply in new[] { "", "_INBOX.x" })
        foreach (var queues in new[] { "", "q1", "q1 q2 q3 q4 q5 q6 q7" })
        foreach (var hdr in new[] { -1, 12 })
        {
            if (to == ConnectionKind.Leaf && (pinned.Length > 0 || origin.Length > 0)) continue;
            string account = to == ConnectionKind.Route && pinned.Length == 0 ? "ACC" : "";
            var line = Header(to, origin, account, "sub.j", reply, queues, hdr, payload.Length);
            var input = B(line).Concat(payload).Concat("\r\n"u8.ToArray()).ToArray();
            Action<RouteRecordingHandler> setup = h => h.Pinned = to == ConnectionKind.Route ? pinned : "";
            var handler = Whole(to, input, setup);
            var op = origin.Length > 0 ? "OriginMsg" : hdr >= 0 ? "HeaderMsg" : "Msg";
            int expectedHdr = origin.Length > 0 ? Math.Max(hdr, 0) : hdr;
            var expectedAccount = to == ConnectionKind.Route ? (pinned.Length > 0 ? pinned : account) : "";
            Assert.Equal([$"{op} o={origin} a={expectedAccount} s=sub.j r={reply} q=[{queues.Replace(' ', ',')}] h={expectedHdr} n={payload.Length} "
                + Encoding.ASCII.GetString(payload)], handler.Events);
            Assert.Equal(Encoding.ASCII.GetString(input), Encoding.ASCII.GetString(handler.Rewritten.ToArray()));
            AssertSameAtEverySplit(to, input, handler.Events, setup);
            cases++;
        }
        Assert.Equal(48 + 12, cases);
    }
}
