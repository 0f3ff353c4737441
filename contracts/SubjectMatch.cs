namespace NatsBroker.Contracts;

/// <summary>
/// Subject filter matching on UTF-8 bytes, as nats-server: tokens separated by '.', a '*' token matches one
/// token, a final '>' token matches one or more tokens. An empty filter matches everything.
/// </summary>
public static class SubjectMatch
{
    public static bool IsAll(ReadOnlySpan<byte> filter) => filter.IsEmpty || (filter.Length == 1 && filter[0] == (byte)'>');

    /// <summary>True when no token is exactly '*' or '>'.</summary>
    public static bool IsLiteral(ReadOnlySpan<byte> filter)
    {
        for (int i = 0; i < filter.Length; i++)
        {
            byte c = filter[i];
            if (c is (byte)'*' or (byte)'>'
                && (i == 0 || filter[i - 1] == (byte)'.')
                && (i + 1 == filter.Length || filter[i + 1] == (byte)'.'))
            {
                return false;
            }
        }
        return true;
    }

    public static bool Matches(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> filter)
    {
        if (filter.IsEmpty) return true;
        while (true)
        {
            int fi = filter.IndexOf((byte)'.');
            var ftok = fi < 0 ? filter : filter[..fi];
            if (ftok.Length == 1 && ftok[0] == (byte)'>' && fi < 0) return !subject.IsEmpty;
            if (subject.IsEmpty) return false;
            int si = subject.IndexOf((byte)'.');
            var stok = si < 0 ? subject : subject[..si];
            if (!(ftok.Length == 1 && ftok[0] == (byte)'*') && !ftok.SequenceEqual(stok)) return false;
            if (fi < 0) return si < 0;
            if (si < 0) return false;
            filter = filter[(fi + 1)..];
            subject = subject[(si + 1)..];
        }
    }
}
