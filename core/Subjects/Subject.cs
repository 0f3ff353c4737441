namespace NatsBroker.Subjects;

/// <summary>
/// Subject grammar helpers, on UTF-8 bytes (server/sublist.go: IsValidSubject, IsValidLiteralSubject,
/// subjectIsLiteral, matchLiteral). Tokens are separated by '.', '*' matches one token, '>' matches one or
/// more trailing tokens. A token that merely contains '*' or '>' ("foo*") is a literal token.
/// </summary>
public static class Subject
{
    public const byte Separator = (byte)'.';
    public const byte PartialWildcard = (byte)'*';
    public const byte FullWildcard = (byte)'>';

    /// <summary>
    /// A subject valid for SUB (wildcards allowed): no empty token, '>' only as the last token, no whitespace.
    /// </summary>
    public static bool IsValid(ReadOnlySpan<byte> subject)
    {
        if (subject.IsEmpty) return false;
        bool sawFullWildcard = false;
        int start = 0;
        for (int i = 0; i <= subject.Length; i++)
        {
            if (i < subject.Length && subject[i] != Separator) continue;
            var token = subject[start..i];
            if (token.IsEmpty || sawFullWildcard) return false;
            if (token.Length > 1)
            {
                if (token.IndexOfAny(" \t\r\n\f"u8) >= 0) return false;
            }
            else
            {
                switch (token[0])
                {
                    case FullWildcard: sawFullWildcard = true; break;
                    case (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n' or (byte)'\f': return false;
                }
            }
            start = i + 1;
        }
        return true;
    }

    /// <summary>A subject valid for PUB: valid and without wildcard tokens.</summary>
    public static bool IsValidLiteral(ReadOnlySpan<byte> subject) => IsValid(subject) && IsLiteral(subject);

    /// <summary>True when no token is exactly '*' or '>'.</summary>
    public static bool IsLiteral(ReadOnlySpan<byte> subject)
    {
        for (int i = 0; i < subject.Length; i++)
        {
            byte c = subject[i];
            if (c is PartialWildcard or FullWildcard
                && (i == 0 || subject[i - 1] == Separator)
                && (i + 1 == subject.Length || subject[i + 1] == Separator))
            {
                return false;
            }
        }
        return true;
    }

    /// <summary>Does the literal subject match the (possibly wildcard) pattern?</summary>
    public static bool Matches(ReadOnlySpan<byte> pattern, ReadOnlySpan<byte> literal)
    {
        while (true)
        {
            int pEnd = pattern.IndexOf(Separator);
            int lEnd = literal.IndexOf(Separator);
            var pTok = pEnd < 0 ? pattern : pattern[..pEnd];
            var lTok = lEnd < 0 ? literal : literal[..lEnd];
            if (pTok.Length == 1 && pTok[0] == FullWildcard) return !lTok.IsEmpty || lEnd >= 0;
            if (!(pTok.Length == 1 && pTok[0] == PartialWildcard) && !pTok.SequenceEqual(lTok)) return false;
            if (pEnd < 0 || lEnd < 0) return pEnd < 0 && lEnd < 0;
            pattern = pattern[(pEnd + 1)..];
            literal = literal[(lEnd + 1)..];
        }
    }

    /// <summary>Number of tokens in a subject.</summary>
    public static int CountTokens(ReadOnlySpan<byte> subject) => subject.IsEmpty ? 0 : subject.Count(Separator) + 1;

    public static bool IsValid(string subject) => IsValid(System.Text.Encoding.UTF8.GetBytes(subject));
    public static bool IsValidLiteral(string subject) => IsValidLiteral(System.Text.Encoding.UTF8.GetBytes(subject));
    public static bool Matches(string pattern, string literal) =>
        Matches(System.Text.Encoding.UTF8.GetBytes(pattern), System.Text.Encoding.UTF8.GetBytes(literal));
}
