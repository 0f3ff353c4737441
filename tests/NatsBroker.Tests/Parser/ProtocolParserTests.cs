using System.Buffers;
using System.Text;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Parser;

public class ProtocolParserTests
{
    private static List<string> ParseAll(string input, int maxControlLine = 4096, Action<RecordingHandler>? setup = null)
    {
        var parser = new ProtocolParser(maxControlLine);
        var h = new RecordingHandler();
        setup?.Invoke(h);
        parser.Parse(new ReadOnlySequence<byte>(Encoding.ASCII.GetBytes(input)), h, out _);
        return h.Events;
    }

    private const string Pipelined =
        "CONNECT {\"verbose\":false}\r\nPING\r\nPONG\r\nSUB foo 1\r\nSUB foo.* q 2\r\nPUB foo 5\r\nhello\r\n" +
        "PUB foo reply 0\r\n\r\nHPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\nHPUB foo r 12 12\r\nNATS/1.0\r\n\r\n\r\nUNSUB 1\r\nUNSUB 2 10\r\n+OK\r\n";

    private static readonly string[] PipelinedEvents =
    [
        "CONNECT {\"verbose\":false}", "PING", "PONG", "SUB foo [] 1", "SUB foo.* [q] 2", "PUB foo [] -1 hello",
        "PUB foo [reply] -1 ", "PUB foo [] 12 NATS/1.0\r\n\r\nhi", "PUB foo [r] 12 NATS/1.0\r\n\r\n", "UNSUB 1 -1", "UNSUB 2 10",
    ];

    [Fact]
    public void Parses_many_pipelined_ops_in_one_read() => Assert.Equal(PipelinedEvents, ParseAll(Pipelined));

    [Fact]
    public void A_handler_that_stops_the_parser_gets_the_rest_back_unexamined()
    {
        // A CONNECT awaiting its password check stops the parser; the rest must come back on the next read at
        // once (examined == consumed), then parse normally once the handler lets it.
        var input = new ReadOnlySequence<byte>(Encoding.ASCII.GetBytes(Pipelined));
        var parser = new ProtocolParser(4096);
        var h = new RecordingHandler { PauseAfterConnect = true };
        var consumed = parser.Parse(input, h, out var examined);
        Assert.Equal(["CONNECT {\"verbose\":false}"], h.Events);
        Assert.Equal(consumed, examined);
        var rest = input.Slice(consumed);
        Assert.StartsWith("PING\r\n", Encoding.ASCII.GetString(rest.ToArray()), StringComparison.Ordinal);

        h.PauseAfterConnect = false;
        h.IsClosing = false;
        consumed = parser.Parse(rest, h, out examined);
        Assert.Equal(PipelinedEvents, h.Events);
        Assert.Equal(rest.End, consumed);
    }

    [Fact]
    public void Parses_input_split_at_every_byte_position()
    {
        var input = Encoding.ASCII.GetBytes(Pipelined);
        for (int split = 1; split < input.Length; split++)
        {
            var parser = new ProtocolParser(4096);
            var h = new RecordingHandler();
            SegmentedInput.Feed(parser, h, input, [split, input.Length]);
            Assert.Equal(PipelinedEvents, h.Events);
        }
    }

    [Fact]
    public void Parses_input_fed_one_byte_at_a_time()
    {
        var input = Encoding.ASCII.GetBytes(Pipelined);
        var parser = new ProtocolParser(4096);
        var h = new RecordingHandler();
        SegmentedInput.Feed(parser, h, input, Enumerable.Repeat(1, input.Length));
        Assert.Equal(PipelinedEvents, h.Events);
    }

    [Fact]
    public void Parses_random_chunkings()
    {
        var input = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat(Pipelined, 5)));
        var rng = new Random(42);
        for (int round = 0; round < 200; round++)
        {
            var parser = new ProtocolParser(4096);
            var h = new RecordingHandler();
            SegmentedInput.Feed(parser, h, input, Enumerable.Range(0, input.Length).Select(_ => rng.Next(1, 40)));
            Assert.Equal(Enumerable.Repeat(PipelinedEvents, 5).SelectMany(e => e), h.Events);
        }
    }

    [Theory]
    [InlineData("ping\r\n", "PING")]
    [InlineData("PiNg\r\n", "PING")]
    [InlineData("PING\n", "PING")]
    [InlineData("PINGxyz\r\n", "PING")]
    [InlineData("pong\r\n", "PONG")]
    [InlineData("sub  foo \t bar   7 \r\n", "SUB foo [bar] 7")]
    [InlineData("pub\tfoo\t\t2\r\nhi\r\n", "PUB foo [] -1 hi")]
    [InlineData("unsub 5\r\n", "UNSUB 5 -1")]
    [InlineData("UNSUB 5 x\r\n", "UNSUB 5 -1")]
    [InlineData("connect   {}\r\n", "CONNECT {}")]
    public void Ops_are_case_insensitive_and_whitespace_tolerant(string input, string expected)
        => Assert.Equal([expected], ParseAll(input));

    [Theory]
    [InlineData("FOO\r\n")]
    [InlineData("PUB\r\n")]
    [InlineData("PU\r\n")]
    [InlineData("\r\n")]
    [InlineData("MSG foo 1 2\r\nhi\r\n")]
    [InlineData("SUBfoo 1\r\n")]
    public void Unknown_operations_are_reported(string input)
        => Assert.Equal("ERROR UnknownOperation", ParseAll(input).Last());

    [Fact]
    public void Bad_payload_terminator_is_an_unknown_operation()
        => Assert.Equal(["ERROR UnknownOperation"], ParseAll("PUB foo 2\r\nhiX\r\n"));

    [Theory]
    [InlineData("PUB foo\r\n")]
    [InlineData("PUB foo bar baz 2\r\n")]
    [InlineData("PUB foo -1\r\n")]
    [InlineData("PUB foo 1234567890\r\n")]
    [InlineData("SUB foo\r\n")]
    [InlineData("SUB a b c d\r\n")]
    [InlineData("UNSUB\t \r\n")]
    [InlineData("HPUB foo 5 2\r\n")]
    public void Bad_arguments_close_without_error_text(string input)
        => Assert.Equal(["ERROR BadArguments"], ParseAll(input));

    [Fact]
    public void Hpub_requires_header_support()
        => Assert.Equal(["ERROR BadArguments"], ParseAll("HPUB foo 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", setup: h => h.Headers = false));

    [Fact]
    public void Oversized_payload_is_rejected_before_it_arrives()
        => Assert.Equal(["ERROR MaxPayloadViolation"], ParseAll("PUB foo 2000\r\n", setup: h => h.Max = 1000));

    [Fact]
    public void Long_control_line_is_rejected()
    {
        Assert.Equal(["ERROR MaxControlLineExceeded"], ParseAll("SUB " + new string('a', 200) + " 1\r\n", maxControlLine: 100));
        // Without a newline the parser must not buffer forever.
        Assert.Equal(["ERROR MaxControlLineExceeded"], ParseAll("SUB " + new string('a', 300), maxControlLine: 100));
    }

    [Fact]
    public void Ops_before_connect_are_an_authorization_violation_when_auth_is_required()
    {
        Assert.Equal(["ERROR AuthorizationViolation"], ParseAll("PING\r\n", setup: h => h.AuthRequired = true));
        Assert.Equal(["CONNECT {}", "PING"], ParseAll("CONNECT {}\r\nPING\r\n", setup: h => h.AuthRequired = true));
    }

    [Fact]
    public void Incomplete_payload_waits_and_does_not_consume()
    {
        var parser = new ProtocolParser(4096);
        var h = new RecordingHandler();
        var seq = new ReadOnlySequence<byte>("PUB foo 10\r\nhel"u8.ToArray());
        var consumed = parser.Parse(seq, h, out var examined);
        Assert.Empty(h.Events);
        Assert.Equal(seq.End, examined);
        // The control line was consumed; the parser keeps its state for the payload.
        Assert.Equal(12, seq.Slice(0, consumed).Length);
    }

    [Fact]
    public void Steady_state_parsing_allocates_nothing()
    {
        var parser = new ProtocolParser(4096);
        var h = new CountingHandler();
        var input = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("PUB foo.bar 16\r\n0123456789abcdef\r\nPING\r\nHPUB a r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n", 100)));
        var seq = new ReadOnlySequence<byte>(input);
        var split = SegmentedInput.Create(input[..1000], input[1000..]);
        for (int i = 0; i < 100; i++) { parser.Parse(seq, h, out _); parser.Parse(split, h, out _); }
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 1000; i++) { parser.Parse(seq, h, out _); parser.Parse(split, h, out _); }
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        Assert.Equal(0, allocated);
        Assert.True(h.Pubs > 0);
    }

    private sealed class CountingHandler : IProtocolHandler
    {
        public int Pubs;
        public bool IsClosing => false;
        public bool HeadersEnabled => true;
        public int MaxPayload => 1 << 20;
        public bool RejectBeforeConnect() => false;
        public void OnConnect(ReadOnlySpan<byte> json) { }
        public void OnInfo(ReadOnlySpan<byte> json) { }
        public void OnPing() { }
        public void OnPong() { }
        public void OnClientError(ReadOnlySpan<byte> text) { }
        public void OnPubArgs(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, int totalSize) { }
        public void OnPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload) => Pubs++;
        public void OnSub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, ReadOnlySpan<byte> sid) { }
        public void OnUnsub(ReadOnlySpan<byte> sid, long max) { }
        public void OnProtocolError(ProtocolError error) { }
    }
}
