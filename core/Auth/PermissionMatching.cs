namespace NatsBroker.Auth;

/// <summary>
/// Subject matching exactly as nats-server's permission checks see it. Permissions live in a Sublist there, and
/// <c>Sublist.Match</c> is also called with SUB subjects that hold wildcards; it then treats the subject's tokens
/// as plain strings: a '*' pattern token matches any one token (even a literal "*" or "&gt;"), a '&gt;' pattern
/// token matches one or more trailing tokens, other tokens compare byte for byte. Consequences (verified against
/// nats-server 2.9.10): allow "foo.*" permits SUB "foo.*" and also SUB "foo.&gt;" (its last token "&gt;" is one token);
/// allow "foo.bar" does not permit SUB "foo.*". A subject with an empty token matches nothing (Sublist returns
/// an empty result).
/// </summary>
internal static class PermissionMatching
{
    private const byte Sep = (byte)'.';

    /// <summary>Could Sublist.Insert store this pattern? (no empty token, '&gt;' only as the last token)</summary>
    public static bool IsInsertable(ReadOnlySpan<byte> pattern)
    {
        if (pattern.IsEmpty) return false;
        while (true)
        {
            int dot = pattern.IndexOf(Sep);
            var token = dot < 0 ? pattern : pattern[..dot];
            if (token.IsEmpty) return false;
            if (dot < 0) return true;
            if (token.Length == 1 && token[0] == (byte)'>') return false;
            pattern = pattern[(dot + 1)..];
        }
    }

    /// <summary>Sublist.Match returns nothing for "", ".a", "a." or "a..b".</summary>
    public static bool HasEmptyToken(ReadOnlySpan<byte> subject) =>
        subject.IsEmpty || subject[0] == Sep || subject[^1] == Sep || subject.IndexOf(".."u8) >= 0;

    /// <summary>
    /// Does the (insertable) pattern match the subject, the subject's tokens taken literally? Callers check
    /// <see cref="HasEmptyToken"/> first.
    /// </summary>
    public static bool Matches(ReadOnlySpan<byte> pattern, ReadOnlySpan<byte> subject)
    {
        while (true)
        {
            int pDot = pattern.IndexOf(Sep);
            var pTok = pDot < 0 ? pattern : pattern[..pDot];
            if (pTok.Length == 1 && pTok[0] == (byte)'>') return true; // subject has at least one token left here
            int sDot = subject.IndexOf(Sep);
            var sTok = sDot < 0 ? subject : subject[..sDot];
            if (!(pTok.Length == 1 && pTok[0] == (byte)'*') && !pTok.SequenceEqual(sTok)) return false;
            if (pDot < 0 || sDot < 0) return pDot < 0 && sDot < 0;
            pattern = pattern[(pDot + 1)..];
            subject = subject[(sDot + 1)..];
        }
    }

    /// <summary>True when some token is exactly '*' or '&gt;' (sublist.go subjectHasWildcard).</summary>
    public static bool HasWildcard(ReadOnlySpan<byte> subject) => !NatsBroker.Subjects.Subject.IsLiteral(subject);

    /// <summary>
    /// sublist.go subjectIsSubsetMatch(subject, test): is every subject <paramref name="subject"/> can match also
    /// matched by <paramref name="test"/>? Token rules copied in behaviour, including that a test token merely
    /// starting with '*' counts as a wildcard there.
    /// </summary>
    public static bool IsSubsetMatch(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> test)
    {
        int subjectTokens = subject.Count(Sep) + 1;
        int testTokens = test.Count(Sep) + 1;
        for (int i = 0; i < testTokens; i++)
        {
            var t2 = Take(ref test);
            if (i >= subjectTokens || t2.IsEmpty) return false;
            if (t2.Length == 1 && t2[0] == (byte)'>') return true;
            var t1 = Take(ref subject);
            if (t1.IsEmpty || (t1.Length == 1 && t1[0] == (byte)'>')) return false;
            if (t1.Length == 1 && t1[0] == (byte)'*')
            {
                if (!(t2.Length == 1 && t2[0] == (byte)'*')) return false;
                continue;
            }
            if (t2[0] != (byte)'*' && !t1.SequenceEqual(t2)) return false;
        }
        return subjectTokens == testTokens;
    }

    /// <summary>
    /// sublist.go SubjectsCollide: could some literal subject match both <paramref name="a"/> and <paramref name="b"/>?
    /// Copied in behaviour, quirks included: a token merely starting with '*' or '&gt;' counts as a wildcard in the
    /// token comparison (more collisions, never fewer), and an empty token never collides. nats-server uses it at SUB
    /// time (client.go loadMsgDenyFilterIfNeeded) to decide whether a subscription's deliveries need the deny check.
    /// </summary>
    public static bool SubjectsCollide(ReadOnlySpan<byte> a, ReadOnlySpan<byte> b)
    {
        if (a.SequenceEqual(b)) return true;
        Analyze(a, out bool pwcA, out bool fwcA, out int lenA);
        Analyze(b, out bool pwcB, out bool fwcB, out int lenB);
        bool literalA = !(pwcA || fwcA), literalB = !(pwcB || fwcB);
        if (literalA && literalB) return false; // unequal literals (compared above)
        if (literalA) return IsSubsetMatch(a, b);
        if (literalB) return IsSubsetMatch(b, a);
        // Both have wildcards: with partials only the lengths must agree; otherwise the shorter needs the '>'.
        if (!fwcA && !fwcB && lenA != lenB) return false;
        if ((lenA < lenB && !fwcA) || (lenB < lenA && !fwcB)) return false;
        int stop = Math.Min(lenA, lenB);
        for (int i = 0; i < stop; i++)
        {
            var t1 = Take(ref a);
            var t2 = Take(ref b);
            // sublist.go tokensCanMatch
            if (t1.IsEmpty || t2.IsEmpty) return false;
            if (t1[0] is (byte)'*' or (byte)'>' || t2[0] is (byte)'*' or (byte)'>') continue;
            if (!t1.SequenceEqual(t2)) return false;
        }
        return true;
    }

    /// <summary>sublist.go analyzeTokens (one-byte '*' / '&gt;' tokens) plus the token count.</summary>
    private static void Analyze(ReadOnlySpan<byte> subject, out bool pwc, out bool fwc, out int tokens)
    {
        pwc = fwc = false;
        tokens = subject.Count(Sep) + 1;
        for (int i = 0; i < tokens; i++)
        {
            var t = Take(ref subject);
            if (t.Length != 1) continue;
            if (t[0] == (byte)'*') pwc = true;
            else if (t[0] == (byte)'>') fwc = true;
        }
    }

    private static ReadOnlySpan<byte> Take(ref ReadOnlySpan<byte> rest)
    {
        int dot = rest.IndexOf(Sep);
        if (dot < 0)
        {
            var last = rest;
            rest = default;
            return last;
        }
        var token = rest[..dot];
        rest = rest[(dot + 1)..];
        return token;
    }
}
