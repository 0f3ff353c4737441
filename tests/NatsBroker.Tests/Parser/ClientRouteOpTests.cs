using System.Buffers;
using System.Text;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Parser;

/// <summary>
/// A client connection sending route and leaf ops gets what nats-server answers (parser.go OP_START: R, L and A are
/// parseErr for a CLIENT; H-M is not gated, and HMSG_ARG does nothing for a client). Answers checked against 2.14.5
/// with a raw socket: <c>RS+ $G foo</c>, <c>LS+ foo</c>, <c>A+ foo</c>, <c>RMSG $G foo 1</c>, <c>MSG foo 1 1</c> →
/// -ERR 'Unknown Protocol Operation' and close; <c>HMSG foo 0 0\r\n\r\nPING\r\n</c> → PONG.
/// </summary>
public sealed class ClientRouteOpTests
{
    private static List<string> Parse(string input)
    {
        var handler = new RecordingHandler();
        new ProtocolParser(4096).Parse(new ReadOnlySequence<byte>(Encoding.ASCII.GetBytes(input)), handler, out _);
        return handler.Events;
    }

    [Theory]
    [InlineData("RS+ $G foo\r\n")]
    [InlineData("RS- $G foo\r\n")]
    [InlineData("LS+ foo\r\n")]
    [InlineData("LS- foo\r\n")]
    [InlineData("A+ foo\r\n")]
    [InlineData("RMSG $G foo 1\r\nx\r\n")]
    [InlineData("LMSG foo 1\r\nx\r\n")]
    [InlineData("MSG foo 1 1\r\nx\r\n")]
    [InlineData("R\r\n")]
    [InlineData("RS+")]
    public void Route_ops_from_a_client_are_unknown_operations(string input)
    {
        Assert.Equal(["ERROR UnknownOperation"], Parse(input));
    }

    [Theory]
    [InlineData("HMSG foo 0 0\r\n\r\nPING\r\n")]
    [InlineData("HMSG foo 2 2\r\n\r\nPING\r\n")]
    [InlineData("hmsg x\r\n\r\nPING\r\n")]
    [InlineData("HMSG \r\n\r\nPING\r\n")]
    public void A_client_hmsg_is_dropped_with_an_empty_payload(string input)
    {
        Assert.Equal(["PING"], Parse(input));
        var bytes = Encoding.ASCII.GetBytes(input);
        for (int at = 0; at <= bytes.Length; at++)
        {
            var handler = new RecordingHandler();
            SegmentedInput.Feed(new ProtocolParser(4096), handler, bytes, [at, bytes.Length]);
            Assert.Equal(["PING"], handler.Events);
        }
    }

    [Theory]
    [InlineData("HMSG foo 0 0\r\nPING\r\n")]
    [InlineData("HMSG\r\n\r\n")]
    [InlineData("HMSG x\nPING\r\n")]
    [InlineData("HMSG x\r\n\n")]
    [InlineData("HMSGx\r\n\r\n")]
    public void A_client_hmsg_not_followed_by_crlf_is_an_unknown_operation(string input)
    {
        Assert.Equal(["ERROR UnknownOperation"], Parse(input));
    }
}
