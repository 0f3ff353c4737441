namespace NatsBroker.MqttGateway;

/// <summary>NATS subject matching (a filter with <c>*</c> and a final <c>&gt;</c> against a literal subject), on UTF-8 bytes.</summary>
internal static class SubjectMatch
{
    public static bool Matches(ReadOnlySpan<byte> filter, ReadOnlySpan<byte> subject)
    {
        while (true)
        {
            int f = filter.IndexOf((byte)'.');
            var ft = f < 0 ? filter : filter[..f];
            if (ft.Length == 1 && ft[0] == (byte)'>') return !subject.IsEmpty;
            if (subject.IsEmpty) return false;
            int s = subject.IndexOf((byte)'.');
            var st = s < 0 ? subject : subject[..s];
            if (!(ft.Length == 1 && ft[0] == (byte)'*') && !ft.SequenceEqual(st)) return false;
            if (f < 0 || s < 0) return f < 0 && s < 0;
            filter = filter[(f + 1)..];
            subject = subject[(s + 1)..];
        }
    }
}
