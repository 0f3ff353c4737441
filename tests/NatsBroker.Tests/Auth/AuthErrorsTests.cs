using System.Text;
using NatsBroker.Auth;

namespace NatsBroker.Tests.Auth;

public class AuthErrorsTests
{
    private static byte[] B(string s) => Encoding.Latin1.GetBytes(s);

    // Expected strings are what nats-server 2.9.10 sent for these subjects (raw bytes given as Latin-1 chars).
    [Theory]
    [InlineData("bar", "\"bar\"")]
    [InlineData("fo\"o\\x", "\"fo\\\"o\\\\x\"")]
    [InlineData("\u0001a", "\"\\x01a\"")]
    [InlineData("a\u007f", "\"a\\x7f\"")]
    [InlineData("\u00ff", "\"\\xff\"")]                       // invalid UTF-8 byte
    [InlineData("\u00cf\u0080", "\"\u03c0\"")]                 // π is printable
    [InlineData("\u00e2\u0080\u008b", "\"\\u200b\"")]          // zero-width space is not
    [InlineData("\u00c2\u00a0", "\"\\u00a0\"")]                // nor is NBSP
    [InlineData("\u00f0\u009f\u0098\u0080", "\"\U0001F600\"")] // emoji is printable
    [InlineData("a'b", "\"a'b\"")]
    [InlineData("\t\n", "\"\\t\\n\"")]
    public void Quotes_like_go(string raw, string quoted) => Assert.Equal(quoted, AuthErrors.GoQuote(B(raw)));

    [Fact]
    public void Texts_match_nats_server()
    {
        Assert.Equal("Authorization Violation", AuthErrors.AuthorizationViolation);
        Assert.Equal("Authentication Timeout", AuthErrors.AuthenticationTimeout);
        Assert.Equal("Permissions Violation for Publish to \"foo.secret\"", AuthErrors.PublishViolation("foo.secret"u8));
        Assert.Equal("Permissions Violation for Subscription to \"foo.bad\"", AuthErrors.SubscriptionViolation("foo.bad"u8));
        Assert.Equal("Permissions Violation for Subscription to \"q.x\" using queue \"v2\"", AuthErrors.SubscriptionViolation("q.x"u8, "v2"u8));
        Assert.Equal("Permissions Violation for Publish with Reply of \"_R_.x\"", AuthErrors.PublishReplyViolation("_R_.x"u8));
        Assert.Equal("Permissions Violation for Subscription to \"a.b\", too many tokens", AuthErrors.SubscriptionTooManyTokens("a.b"u8));
        Assert.Equal("-ERR 'Authorization Violation'\r\n"u8.ToArray(), AuthErrors.ToErrLine(AuthErrors.AuthorizationViolation));
    }
}
