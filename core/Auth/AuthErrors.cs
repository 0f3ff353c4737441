using System.Globalization;
using System.Text;

namespace NatsBroker.Auth;

/// <summary>
/// The exact <c>-ERR</c> texts nats-server 2.9.10 sends for auth and permission failures (server/client.go:
/// authViolation, authTimeout, pubPermissionViolation, subPermissionViolation, replySubjectViolation,
/// maxTokensViolation), checked against the real server over raw TCP. Subjects and queues are quoted the way
/// Go's <c>%q</c> quotes them (<see cref="GoQuote"/>). On the wire each is sent as <c>-ERR '&lt;text&gt;'\r\n</c>.
/// <para>Which close the connection: <see cref="AuthorizationViolation"/>, <see cref="AuthenticationTimeout"/>
/// and <see cref="AuthenticationExpired"/> (sent, then the connection is closed). Every "Permissions Violation"
/// leaves the connection open: the offending PUB is dropped / the SUB is not created, and the next PING still
/// gets its PONG.</para>
/// </summary>
public static class AuthErrors
{
    /// <summary>Bad or missing credentials in CONNECT, or a non-CONNECT first op while auth is required. Closes.</summary>
    public const string AuthorizationViolation = "Authorization Violation";

    /// <summary>No CONNECT within the authorization timeout (default 2s). Closes.</summary>
    public const string AuthenticationTimeout = "Authentication Timeout";

    /// <summary>A user JWT expired while connected. Closes.</summary>
    public const string AuthenticationExpired = "User Authentication Expired";

    /// <summary>A new account JWT revoked the connected user (server/accounts.go). Closes.</summary>
    public const string AuthenticationRevoked = "User Authentication Revoked";

    /// <summary>Queue group name reserved for the system; clients may not queue-subscribe with it (client.go sysGroup).</summary>
    public const string SystemQueueGroup = "_sys_";

    /// <summary><c>Permissions Violation for Publish to "subj"</c>. Does not close.</summary>
    public static string PublishViolation(ReadOnlySpan<byte> subject) =>
        "Permissions Violation for Publish to " + GoQuote(subject);

    /// <summary>
    /// <c>Permissions Violation for Subscription to "subj"</c>, or with a queue group
    /// <c>Permissions Violation for Subscription to "subj" using queue "q"</c>. Does not close.
    /// </summary>
    public static string SubscriptionViolation(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue = default) =>
        queue.IsEmpty
            ? "Permissions Violation for Subscription to " + GoQuote(subject)
            : "Permissions Violation for Subscription to " + GoQuote(subject) + " using queue " + GoQuote(queue);

    /// <summary><c>Permissions Violation for Publish with Reply of "reply"</c>: a client used a reserved reply prefix. Does not close.</summary>
    public static string PublishReplyViolation(ReadOnlySpan<byte> reply) =>
        "Permissions Violation for Publish with Reply of " + GoQuote(reply);

    /// <summary><c>Permissions Violation for Subscription to "subj", too many tokens</c> (max_sub_tokens). Does not close.</summary>
    public static string SubscriptionTooManyTokens(ReadOnlySpan<byte> subject) =>
        "Permissions Violation for Subscription to " + GoQuote(subject) + ", too many tokens";

    /// <summary>Sent when a config reload revokes an existing subscription: <c>... to "subj" (sid "1")</c>. Does not close.</summary>
    public static string SubscriptionRevoked(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> sid) =>
        "Permissions Violation for Subscription to " + GoQuote(subject) + " (sid " + GoQuote(sid) + ")";

    /// <summary>The protocol line for an error text: <c>-ERR '&lt;text&gt;'\r\n</c> (client.go sendErr).</summary>
    public static byte[] ToErrLine(string text) => Encoding.UTF8.GetBytes("-ERR '" + text + "'\r\n");

    /// <summary>
    /// Go's <c>strconv.Quote</c> (what <c>%q</c> prints) over raw bytes: double quotes; <c>\"</c> and <c>\\</c>;
    /// <c>\a \b \f \n \r \t \v</c>; other control bytes and DEL as <c>\xNN</c>; invalid UTF-8 byte by byte as
    /// <c>\xNN</c>; printable runes (letters, marks, numbers, punctuation, symbols, ASCII space) as is; other runes as
    /// <c>\uNNNN</c> / <c>\UNNNNNNNN</c>. Hex digits are lower case.
    /// </summary>
    public static string GoQuote(ReadOnlySpan<byte> value)
    {
        var sb = new StringBuilder(value.Length + 2);
        sb.Append('"');
        while (!value.IsEmpty)
        {
            var status = Rune.DecodeFromUtf8(value, out var rune, out int consumed);
            if (status != System.Buffers.OperationStatus.Done)
            {
                // Go decodes an invalid sequence one byte at a time (RuneError, width 1).
                AppendHex(sb, 'x', value[0], 2);
                value = value[1..];
                continue;
            }
            value = value[consumed..];
            int r = rune.Value;
            if (r is '"' or '\\')
            {
                sb.Append('\\').Append((char)r);
            }
            else if (IsGoPrint(rune))
            {
                sb.Append(rune.ToString());
            }
            else
            {
                switch (r)
                {
                    case 0x07: sb.Append(@"\a"); break;
                    case 0x08: sb.Append(@"\b"); break;
                    case 0x0C: sb.Append(@"\f"); break;
                    case 0x0A: sb.Append(@"\n"); break;
                    case 0x0D: sb.Append(@"\r"); break;
                    case 0x09: sb.Append(@"\t"); break;
                    case 0x0B: sb.Append(@"\v"); break;
                    default:
                        if (r < ' ' || r == 0x7F) AppendHex(sb, 'x', r, 2);
                        else if (r < 0x10000) AppendHex(sb, 'u', r, 4);
                        else AppendHex(sb, 'U', r, 8);
                        break;
                }
            }
        }
        sb.Append('"');
        return sb.ToString();
    }

    public static string GoQuote(string value) => GoQuote(Encoding.UTF8.GetBytes(value));

    private static void AppendHex(StringBuilder sb, char kind, int value, int digits) =>
        sb.Append('\\').Append(kind).Append(value.ToString("x" + digits.ToString(CultureInfo.InvariantCulture), CultureInfo.InvariantCulture));

    /// <summary>Go's unicode.IsPrint: categories L, M, N, P, S, plus U+0020 (other spaces are not printable).</summary>
    private static bool IsGoPrint(Rune rune)
    {
        if (rune.Value == ' ') return true;
        return Rune.GetUnicodeCategory(rune) switch
        {
            UnicodeCategory.UppercaseLetter or UnicodeCategory.LowercaseLetter or UnicodeCategory.TitlecaseLetter
                or UnicodeCategory.ModifierLetter or UnicodeCategory.OtherLetter => true,
            UnicodeCategory.NonSpacingMark or UnicodeCategory.SpacingCombiningMark or UnicodeCategory.EnclosingMark => true,
            UnicodeCategory.DecimalDigitNumber or UnicodeCategory.LetterNumber or UnicodeCategory.OtherNumber => true,
            UnicodeCategory.ConnectorPunctuation or UnicodeCategory.DashPunctuation or UnicodeCategory.OpenPunctuation
                or UnicodeCategory.ClosePunctuation or UnicodeCategory.InitialQuotePunctuation
                or UnicodeCategory.FinalQuotePunctuation or UnicodeCategory.OtherPunctuation => true,
            UnicodeCategory.MathSymbol or UnicodeCategory.CurrencySymbol or UnicodeCategory.ModifierSymbol
                or UnicodeCategory.OtherSymbol => true,
            _ => false,
        };
    }
}
