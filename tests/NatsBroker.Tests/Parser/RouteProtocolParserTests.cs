using NatsBroker.Protocol;
using static NatsBroker.Tests.Parser.RouteParserHarness;

namespace NatsBroker.Tests.Parser;

/// <summary>
/// The route and leaf node ops, each parsed whole and split at every byte, and their malformed forms, against the
/// grammar and checks of nats-server's route.go / leafnode.go / parser.go (v2.14.5; v2.9.10 where it differs).
/// </summary>
public sealed class RouteProtocolParserTests
{
    // "P" = the route is pinned to account PIN (2.10+ route_account); "U" = the peer advertised lnocu.
    private static readonly (string Flags, string Input, string Expected)[] OpCases =
    [
        // Route: account in the line.
        ("R", "RS+ ACC1 foo\r\n", "Sub o= a=ACC1 s=foo q= w=0 args=ACC1 foo"),
        ("R", "RS+ ACC1 bar q1 2\r\n", "Sub o= a=ACC1 s=bar q=q1 w=2 args=ACC1 bar q1 2"),
        ("R", "RS+ ACC1 bar q1 x\r\n", "Sub o= a=ACC1 s=bar q=q1 w=-1 args=ACC1 bar q1 x"),
        ("R", "RS- ACC1 foo.>\r\n", "Unsub o= a=ACC1 s=foo.> q= w=0 args=ACC1 foo.>"),
        ("R", "RS- ACC1 bar q1\r\n", "Unsub o= a=ACC1 s=bar q=q1 w=0 args=ACC1 bar q1"),
        ("R", "LS+ leafc ACC1 leaf.sub\r\n", "LeafSub o=leafc a=ACC1 s=leaf.sub q= w=0 args=leafc ACC1 leaf.sub"),
        ("R", "LS+ leafc ACC1 leaf.q lq 1\r\n", "LeafSub o=leafc a=ACC1 s=leaf.q q=lq w=1 args=leafc ACC1 leaf.q lq 1"),
        ("R", "LS- ACC1 leaf.q lq\r\n", "LeafUnsub o= a=ACC1 s=leaf.q q=lq w=0 args=ACC1 leaf.q lq"),
        ("R", "LS-  ACC1 leaf.q lq\r\n", "LeafUnsub o= a=ACC1 s=leaf.q q=lq w=0 args=ACC1 leaf.q lq"),
        ("RU", "LS- leafc ACC1 leaf.q lq\r\n", "LeafUnsub o=leafc a=ACC1 s=leaf.q q=lq w=0 args=leafc ACC1 leaf.q lq"),
        ("R", "RMSG ACC1 foo.x 5\r\nhello\r\n", "Msg o= a=ACC1 s=foo.x r= q=[] h=-1 n=5 hello"),
        ("R", "RMSG ACC1 foo.y rep.1 9\r\nwithreply\r\n", "Msg o= a=ACC1 s=foo.y r=rep.1 q=[] h=-1 n=9 withreply"),
        ("R", "RMSG ACC1 bar | q2 q1 6\r\nqueued\r\n", "Msg o= a=ACC1 s=bar r= q=[q2,q1] h=-1 n=6 queued"),
        ("R", "RMSG ACC1 bar + rep.3 q2 q1 11\r\nqueuedreply\r\n", "Msg o= a=ACC1 s=bar r=rep.3 q=[q2,q1] h=-1 n=11 queuedreply"),
        ("R", "RMSG ACC1 bar + rep.3 11\r\nqueuedreply\r\n", "Msg o= a=ACC1 s=bar r=rep.3 q=[] h=-1 n=11 queuedreply"),
        ("R", "RMSG ACC1 bar | a b c d e f g h 1\r\nx\r\n", "Msg o= a=ACC1 s=bar r= q=[a,b,c,d,e,f,g,h] h=-1 n=1 x"),
        ("R", "RMSG ACC1 empty 0\r\n\r\n", "Msg o= a=ACC1 s=empty r= q=[] h=-1 n=0 "),
        ("R", "HMSG ACC1 foo.h 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a=ACC1 s=foo.h r= q=[] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("R", "HMSG ACC1 foo.h rep.2 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a=ACC1 s=foo.h r=rep.2 q=[] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("R", "HMSG ACC1 bar | q2 q1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a=ACC1 s=bar r= q=[q2,q1] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("R", "HMSG ACC1 bar + rr lq 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a=ACC1 s=bar r=rr q=[lq] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("R", "LMSG leafc ACC1 foo.fromleaf 0 8\r\nfromleaf\r\n", "OriginMsg o=leafc a=ACC1 s=foo.fromleaf r= q=[] h=0 n=8 fromleaf"),
        ("R", "LMSG leafc ACC1 foo.fromleaf lr 0 1\r\nx\r\n", "OriginMsg o=leafc a=ACC1 s=foo.fromleaf r=lr q=[] h=0 n=1 x"),
        ("R", "LMSG leafc ACC1 bar | q2 q1 0 9\r\nfromleafq\r\n", "OriginMsg o=leafc a=ACC1 s=bar r= q=[q2,q1] h=0 n=9 fromleafq"),
        ("R", "LMSG leafc ACC1 bar + r q1 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "OriginMsg o=leafc a=ACC1 s=bar r=r q=[q1] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        // Route pinned to PIN: no account in the line (captured from 2.14.5: "RS+ pin.*", "RMSG pinq + r.p pq 7").
        ("RP", "RS+ pin.*\r\n", "Sub o= a=PIN s=pin.* q= w=0 args=pin.*"),
        ("RP", "RS+ pinq pq 1\r\n", "Sub o= a=PIN s=pinq q=pq w=1 args=pinq pq 1"),
        ("RP", "RS- pinq pq\r\n", "Unsub o= a=PIN s=pinq q=pq w=0 args=pinq pq"),
        ("RP", "LS+ leafc foo\r\n", "LeafSub o=leafc a=PIN s=foo q= w=0 args=leafc foo"),
        ("RPU", "LS- leafc foo\r\n", "LeafUnsub o=leafc a=PIN s=foo q= w=0 args=leafc foo"),
        ("RP", "RMSG pin.a 6\r\npinned\r\n", "Msg o= a=PIN s=pin.a r= q=[] h=-1 n=6 pinned"),
        ("RP", "RMSG pinq + r.p pq 7\r\npinnedq\r\n", "Msg o= a=PIN s=pinq r=r.p q=[pq] h=-1 n=7 pinnedq"),
        ("RP", "HMSG pin.b 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a=PIN s=pin.b r= q=[] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("RP", "LMSG leafc foo 0 1\r\nx\r\n", "OriginMsg o=leafc a=PIN s=foo r= q=[] h=0 n=1 x"),
        // Case and blanks as nats-server's byte machine takes them.
        ("R", "rs+ ACC1 foo\r\n", "Sub o= a=ACC1 s=foo q= w=0 args=ACC1 foo"),
        ("R", "Rs+\t ACC1\t\tfoo  \r\n", "Sub o= a=ACC1 s=foo q= w=0 args=ACC1\t\tfoo  "),
        ("R", "rmsg\tACC1  foo 1\nx\r\n", "Msg o= a=ACC1 s=foo r= q=[] h=-1 n=1 x"),
        ("R", "lMsG leafc ACC1 foo 0 1\r\nx\r\n", "OriginMsg o=leafc a=ACC1 s=foo r= q=[] h=0 n=1 x"),
        // The client set, on a route.
        ("R", "PING\r\n", "PING"),
        ("R", "PONG\r\n", "PONG"),
        ("R", "INFO {\"a\":1} \r\n", "INFO {\"a\":1} "),
        ("R", "CONNECT {\"b\":2}\r\n", "CONNECT {\"b\":2}"),
        ("R", "-ERR 'Unknown Account'\r\n", "-ERR 'Unknown Account'"),
        ("R", "+OK\r\nPING\r\n", "PING"),
        // Dropped on a route, as SUB_ARG / UNSUB_ARG / ASUB_ARG do nothing for a ROUTER.
        ("R", "SUB foo 1\r\nUNSUB 1\r\nA+ $G\r\nA- $G\r\nPING\r\n", "PING"),
        ("R", "PUB foo 1\r\nx\r\n", "Pub o= a= s=foo r= q=[] h=-1 n=1 x"),
        ("R", "HPUB foo r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderPub o= a= s=foo r=r q=[] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        // Leaf connections: one account, no origin; RS+/SUB are LS+, RS-/UNSUB are LS-, RMSG is LMSG.
        ("L", "LS+ foo\r\n", "Sub o= a= s=foo q= w=0 args=foo"),
        ("L", "LS+ bar q1 1\r\n", "Sub o= a= s=bar q=q1 w=1 args=bar q1 1"),
        ("L", "RS+ foo\r\n", "Sub o= a= s=foo q= w=0 args=foo"),
        ("L", "SUB foo\r\n", "Sub o= a= s=foo q= w=0 args=foo"),
        ("L", "LS- bar q1\r\n", "Unsub o= a= s=bar q=q1 w=0 args=bar q1"),
        ("L", "RS- foo\r\n", "Unsub o= a= s=foo q= w=0 args=foo"),
        ("L", "UNSUB foo\r\n", "Unsub o= a= s=foo q= w=0 args=foo"),
        ("L", "LS- a b c d\r\n", "Unsub o= a= s=a q=b w=0 args=a b c d"),
        ("L", "LMSG leaf.sub 6\r\ntoleaf\r\n", "Msg o= a= s=leaf.sub r= q=[] h=-1 n=6 toleaf"),
        ("L", "RMSG leaf.sub 6\r\ntoleaf\r\n", "Msg o= a= s=leaf.sub r= q=[] h=-1 n=6 toleaf"),
        ("L", "LMSG foo.fromleaf lr 1\r\nx\r\n", "Msg o= a= s=foo.fromleaf r=lr q=[] h=-1 n=1 x"),
        ("L", "LMSG leaf.q | lq 7\r\ntoleafq\r\n", "Msg o= a= s=leaf.q r= q=[lq] h=-1 n=7 toleafq"),
        ("L", "LMSG leaf.q + rr lq 1\r\nx\r\n", "Msg o= a= s=leaf.q r=rr q=[lq] h=-1 n=1 x"),
        ("L", "HMSG leaf.q + rr lq 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a= s=leaf.q r=rr q=[lq] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("L", "HMSG foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", "HeaderMsg o= a= s=foo r= q=[] h=12 n=14 NATS/1.0\r\n\r\nhi"),
        ("L", "PUB foo r 1\r\nx\r\n", "Pub o= a= s=foo r=r q=[] h=-1 n=1 x"),
    ];

    public static TheoryData<string, string, string> Ops
    {
        get
        {
            var data = new TheoryData<string, string, string>();
            foreach (var (flags, input, expected) in OpCases) data.Add(flags, input, expected);
            return data;
        }
    }

    internal static Action<RouteRecordingHandler> Setup(string flags) => h =>
    {
        if (flags.Contains('P', StringComparison.Ordinal)) h.Pinned = "PIN";
        if (flags.Contains('U', StringComparison.Ordinal)) h.Lnocu = true;
    };

    internal static ConnectionKind KindOf(string flags) => flags[0] == 'L' ? ConnectionKind.Leaf : ConnectionKind.Route;

    [Theory]
    [MemberData(nameof(Ops))]
    public void Each_op_parses_whole_and_split_at_every_byte(string flags, string input, string expected)
    {
        var bytes = B(input);
        var handler = Whole(KindOf(flags), bytes, Setup(flags));
        Assert.Equal([expected], handler.Events);
        AssertSameAtEverySplit(KindOf(flags), bytes, handler.Events, Setup(flags));
    }

    [Fact]
    public void Pipelined_ops_parse_the_same_in_one_read_split_anywhere_and_one_byte_at_a_time()
    {
        // Every route case back to back, but the -ERR (which closes).
        var cases = OpCases.Where(c => c.Flags == "R" && !c.Input.StartsWith('-')).ToArray();
        var bytes = B(string.Concat(cases.Select(c => c.Input)));
        var whole = Whole(ConnectionKind.Route, bytes);
        Assert.Equal(cases.Select(c => c.Expected), whole.Events);
        AssertSameAtEverySplit(ConnectionKind.Route, bytes, whole.Events, stride: 7);

        var oneByte = new RouteRecordingHandler(ConnectionKind.Route);
        Feed(new RouteProtocolParser(ConnectionKind.Route, MaxControlLine), oneByte, bytes, Enumerable.Repeat(1, bytes.Length));
        Assert.Equal(whole.Events, oneByte.Events);
    }

    public static TheoryData<string, string, string> Malformed => new()
    {
        // Wrong field counts: processRemoteSub / parseUnsubProto / process*MsgArgs "Parse Error" -> close, no -ERR.
        { "R", "RS+ ACC1\r\n", "BadArguments" },
        { "R", "RS+ ACC1 foo q1\r\n", "BadArguments" },
        { "R", "RS+ ACC1 foo q1 1 x\r\n", "BadArguments" },
        { "RP", "RS+ pinq pq\r\n", "BadArguments" },
        { "R", "RS- ACC1\r\n", "BadArguments" },
        { "R", "RS- ACC1 foo q1 x\r\n", "BadArguments" },
        { "R", "LS+ leafc ACC1\r\n", "BadArguments" },
        { "R", "LS+ leafc ACC1 foo q\r\n", "BadArguments" },
        { "RU", "LS- o ACC1 foo q1 x\r\n", "BadArguments" },
        { "R", "RMSG ACC1 foo\r\n", "BadArguments" },
        { "RP", "RMSG foo\r\n", "BadArguments" },
        { "R", "HMSG ACC1 foo 5\r\n", "BadArguments" },
        { "R", "LMSG leafc ACC1 foo 8\r\n", "BadArguments" },
        { "L", "LS+ foo q1\r\n", "BadArguments" },
        { "L", "LS+ foo q1 1 x\r\n", "BadArguments" },
        { "L", "LMSG foo\r\n", "BadArguments" },
        { "L", "HMSG foo 1\r\n", "BadArguments" },
        { "R", "PUB foo a b 1\r\n", "BadArguments" },
        // Bad sizes: parseSize is 1 to 9 digits.
        { "R", "RMSG ACC1 foo x\r\n", "BadArguments" },
        { "R", "RMSG ACC1 foo -1\r\n", "BadArguments" },
        { "R", "RMSG ACC1 foo 1234567890\r\n", "BadArguments" },
        { "R", "HMSG ACC1 foo x 4\r\n", "BadArguments" },
        { "R", "HMSG ACC1 foo 5 4\r\n", "BadArguments" },
        { "R", "LMSG leafc ACC1 foo 9 8\r\n", "BadArguments" },
        { "L", "HMSG foo 1 0\r\n", "BadArguments" },
        { "L", "LMSG foo 1x\r\n", "BadArguments" },
        // Reply indicator: one byte, '+' or '|'.
        { "R", "RMSG ACC1 foo ++ q 1\r\n", "BadArguments" },
        { "R", "RMSG ACC1 foo * q 1\r\n", "BadArguments" },
        { "R", "HMSG ACC1 foo * q 0 1\r\n", "BadArguments" },
        { "L", "LMSG foo x q 1\r\n", "BadArguments" },
        // Payload terminator checked positionally (MSG_END_R / MSG_END_N) -> parseErr.
        { "R", "RMSG ACC1 foo 1\r\nxx\r\n", "UnknownOperation" },
        { "R", "HMSG ACC1 foo 0 1\r\nx\n\r\n", "UnknownOperation" },
        // Ops not known for the kind, or a missing separator -> parseErr.
        { "R", "RS+\r\n", "UnknownOperation" },
        { "R", "RSX foo\r\n", "UnknownOperation" },
        { "R", "RMSGfoo\r\n", "UnknownOperation" },
        { "R", "MSG foo 1 1\r\n", "UnknownOperation" },
        { "R", "RX\r\n", "UnknownOperation" },
        { "R", "A* foo\r\n", "UnknownOperation" },
        { "R", "-ERR\r\n", "UnknownOperation" },
        { "R", "\r\n", "UnknownOperation" },
        { "R", "XYZ", "UnknownOperation" },
        { "L", "MSG foo 1\r\n", "UnknownOperation" },
        // Leaf messages are held to max_payload (1000 here); route messages are not (mpay -1).
        { "L", "LMSG foo 1001\r\n", "MaxPayloadViolation" },
        { "L", "HMSG foo 0 1001\r\n", "MaxPayloadViolation" },
        { "L", "PUB foo 1001\r\n", "MaxPayloadViolation" },
    };

    [Theory]
    [MemberData(nameof(Malformed))]
    public void Malformed_forms_get_the_error_nats_server_gives(string flags, string input, string error)
    {
        var bytes = B(input);
        var setup = Setup(flags) + (Action<RouteRecordingHandler>)(h => h.Max = 1000);
        var handler = Whole(KindOf(flags), bytes, setup);
        Assert.Equal(["ERROR " + error], handler.Events);
        AssertSameAtEverySplit(KindOf(flags), bytes, handler.Events, setup);
    }

    [Fact]
    public void Route_messages_are_not_held_to_max_payload()
    {
        var handler = Whole(ConnectionKind.Route, B("RMSG ACC1 foo 3\r\nabc\r\n"), h => h.Max = 1);
        Assert.Equal(["Msg o= a=ACC1 s=foo r= q=[] h=-1 n=3 abc"], handler.Events);
    }

    [Fact]
    public void Hpub_needs_header_support()
    {
        var handler = Whole(ConnectionKind.Route, B("HPUB foo 0 0\r\n\r\n"), h => h.Headers = false);
        Assert.Equal(["ERROR BadArguments"], handler.Events);
    }

    [Fact]
    public void An_accepted_route_must_send_connect_first()
    {
        Assert.Equal(["ERROR AuthorizationViolation"], Whole(ConnectionKind.Route, B("RS+ ACC1 foo\r\n"), h => h.ExpectConnect = true).Events);
        Assert.Equal(["ERROR AuthorizationViolation"], Whole(ConnectionKind.Route, B("PI"), h => h.ExpectConnect = true).Events);
        Assert.Equal(["CONNECT {}", "PING"], Whole(ConnectionKind.Route, B("CONNECT {}\r\nPING\r\n"), h => h.ExpectConnect = true).Events);
    }

    [Fact]
    public void A_leaf_negotiating_compression_may_send_info_before_connect()
    {
        Action<RouteRecordingHandler> setup = h => { h.ExpectConnect = true; h.InfoBeforeConnectAllowed = true; };
        Assert.Equal(["INFO {}", "ERROR AuthorizationViolation"], Whole(ConnectionKind.Leaf, B("INFO {}\r\nLS+ foo\r\n"), setup).Events);
        Assert.Equal(["INFO {}", "CONNECT {}", "Sub o= a= s=foo q= w=0 args=foo"],
            Whole(ConnectionKind.Leaf, B("INFO {}\r\nCONNECT {}\r\nLS+ foo\r\n"), setup).Events);
    }

    [Fact]
    public void Control_lines_over_the_limit_fail_whole_or_partial()
    {
        var longLine = B("RS+ ACC1 " + new string('x', 200) + "\r\n");
        Assert.Equal(["ERROR MaxControlLineExceeded"], Whole(ConnectionKind.Route, longLine, maxControlLine: 64).Events);
        var partial = B("RMSG ACC1 " + new string('x', 200));
        Assert.Equal(["ERROR MaxControlLineExceeded"], Whole(ConnectionKind.Route, partial, maxControlLine: 64).Events);
        // Within the limit: nothing yet, the parser waits for the newline.
        Assert.Empty(Whole(ConnectionKind.Route, partial).Events);
    }

    [Fact]
    public void A_handler_that_closes_stops_the_parser_before_the_next_op()
    {
        var handler = Whole(ConnectionKind.Route, B("-ERR 'x'\r\nPING\r\n"));
        Assert.Equal(["-ERR 'x'"], handler.Events);
    }

    [Fact]
    public void The_client_kind_is_the_client_parser()
    {
        Assert.Throws<ArgumentException>(() => new RouteProtocolParser(ConnectionKind.Client, 4096));
    }
}
