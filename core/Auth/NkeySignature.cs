using NATS.NKeys;

namespace NatsBroker.Auth;

/// <summary>
/// Verifies an Ed25519 signature by a public nkey (a CONNECT's signed nonce, a JWT's signature). Through libcrypto
/// (<see cref="OpenSslEd25519"/>) when the platform has it, else through NATS.NKeys. Both paths take the same keys:
/// 56 base32 characters decoding to a public-key prefix byte (server, cluster, operator, account, user or curve, as
/// nkeys' FromPublicKey accepts), 32 key bytes and a little-endian CRC-16/XMODEM of the rest (nkeys crc16.go).
/// </summary>
internal static class NkeySignature
{
    private const int EncodedLength = 56;
    private const int RawLength = 35;

    /// <summary>True when <paramref name="signature"/> is <paramref name="publicKey"/>'s signature of <paramref name="data"/>.</summary>
    public static bool Verify(string publicKey, ReadOnlySpan<byte> data, ReadOnlySpan<byte> signature) =>
        OpenSslEd25519.Shared is { } openSsl ? VerifyWith(openSsl, publicKey, data, signature) : VerifyManaged(publicKey, data, signature);

    /// <summary>The libcrypto path: the key decoded here, the curve arithmetic in OpenSSL.</summary>
    internal static bool VerifyWith(OpenSslEd25519 openSsl, string publicKey, ReadOnlySpan<byte> data, ReadOnlySpan<byte> signature)
    {
        Span<byte> key = stackalloc byte[32];
        return TryDecodePublicKey(publicKey, key) && openSsl.Verify(key, data, signature);
    }

    /// <summary>The fallback: NATS.NKeys decodes the key and verifies in managed code.</summary>
    internal static bool VerifyManaged(string publicKey, ReadOnlySpan<byte> data, ReadOnlySpan<byte> signature)
    {
        if (signature.Length != 64) return false;
        try
        {
            using var kp = KeyPair.FromPublicKey(publicKey);
            return kp.Verify(data.ToArray(), signature.ToArray());
        }
        catch (Exception ex) when (ex is NKeysException or ArgumentException or FormatException or IndexOutOfRangeException)
        {
            return false;
        }
    }

    /// <summary>The 32 raw key bytes of a public nkey; false for anything nkeys' FromPublicKey refuses.</summary>
    internal static bool TryDecodePublicKey(string publicKey, Span<byte> key)
    {
        if (publicKey.Length != EncodedLength) return false;
        Span<byte> raw = stackalloc byte[RawLength];
        foreach (char ch in publicKey)
        {
            // RFC 4648 base32 alphabet, upper case, no padding (what nkeys encodes).
            if (!(ch is >= 'A' and <= 'Z' or >= '2' and <= '7')) return false;
        }
        if (Base32.GetDataLength(publicKey) != RawLength) return false;
        Base32.FromBase32(publicKey, raw);
        if (!IsPublicPrefix(raw[0])) return false;
        ushort crc = (ushort)(raw[33] | raw[34] << 8);
        if (Crc16(raw[..33]) != crc) return false;
        raw.Slice(1, 32).CopyTo(key);
        return true;
    }

    /// <summary>nkeys checkValidPublicPrefixByte (the byte before base32 encoding: kind &lt;&lt; 3).</summary>
    private static bool IsPublicPrefix(byte b) => b is (byte)PrefixByte.Server or (byte)PrefixByte.Cluster or (byte)PrefixByte.Operator
        or (byte)PrefixByte.Account or (byte)PrefixByte.User or (byte)PrefixByte.Curve;

    /// <summary>CRC-16/XMODEM (polynomial 0x1021, initial 0), nkeys crc16.go.</summary>
    private static ushort Crc16(ReadOnlySpan<byte> data)
    {
        ushort crc = 0;
        foreach (byte b in data)
        {
            crc ^= (ushort)(b << 8);
            for (int i = 0; i < 8; i++)
            {
                crc = (crc & 0x8000) != 0 ? (ushort)((crc << 1) ^ 0x1021) : (ushort)(crc << 1);
            }
        }
        return crc;
    }
}
