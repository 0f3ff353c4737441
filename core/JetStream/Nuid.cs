using System.Security.Cryptography;

namespace NatsBroker.JetStream;

/// <summary>
/// NATS unique ids (nats-io/nuid): 22 base62 characters, a random 12-character prefix and a 10-character sequence
/// advanced by a random increment; the prefix is renewed when the sequence runs out. Advisories carry one as "id".
/// </summary>
internal static class Nuid
{
    private const string Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    private const int PrefixLength = 12, SequenceLength = 10;
    private const long MaxSequence = 839_299_365_868_340_224; // 62^10
    private static readonly Lock Gate = new();
    private static readonly char[] Prefix = new char[PrefixLength];
    private static long _sequence, _increment;

    static Nuid() => Renew();

    public static string Next()
    {
        Span<char> id = stackalloc char[PrefixLength + SequenceLength];
        long seq;
        lock (Gate)
        {
            _sequence += _increment;
            if (_sequence >= MaxSequence) Renew();
            seq = _sequence;
            Prefix.CopyTo(id);
        }
        for (int i = id.Length - 1; i >= PrefixLength; i--)
        {
            id[i] = Digits[(int)(seq % 62)];
            seq /= 62;
        }
        return new string(id);
    }

    private static void Renew()
    {
        for (int i = 0; i < PrefixLength; i++) Prefix[i] = Digits[RandomNumberGenerator.GetInt32(62)];
        _sequence = RandomNumberGenerator.GetInt32(int.MaxValue) * 1000L % MaxSequence;
        _increment = 33 + RandomNumberGenerator.GetInt32(333 - 33);
    }
}
