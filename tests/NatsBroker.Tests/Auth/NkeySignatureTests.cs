using System.Text;
using NATS.NKeys;
using NatsBroker.Auth;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// Ed25519 verification of nkey signatures through libcrypto and through the NATS.NKeys fallback: both must accept
/// a real signature and refuse a signature, message or key with one bit changed.
/// </summary>
public sealed class NkeySignatureTests
{
    private static readonly KeyPair User = KeyPair.CreatePair(PrefixByte.User);
    private static readonly byte[] Nonce = Encoding.ASCII.GetBytes("qLpGOhK8zc9FbHU");

    private static byte[] Sign(KeyPair kp, byte[] data)
    {
        var sig = new byte[64];
        kp.Sign(data, sig);
        return sig;
    }

    private static byte[] Flip(byte[] data, int bit)
    {
        var copy = (byte[])data.Clone();
        copy[bit / 8] ^= (byte)(1 << (bit % 8));
        return copy;
    }

    /// <summary>Both paths; the libcrypto one must exist here (Linux with .NET: libcrypto is a .NET dependency).</summary>
    public static TheoryData<string> Paths => new() { "libcrypto", "nkeys" };

    private static bool Verify(string path, string key, byte[] data, byte[] sig) => path switch
    {
        "libcrypto" => NkeySignature.VerifyWith(OpenSslEd25519.Shared ?? throw new InvalidOperationException("libcrypto did not load"), key, data, sig),
        _ => NkeySignature.VerifyManaged(key, data, sig),
    };

    [Fact]
    public void Libcrypto_is_loaded_on_linux()
    {
        Assert.True(!OperatingSystem.IsLinux() || OpenSslEd25519.Shared is not null, "libcrypto's Ed25519 did not load");
    }

    [Theory, MemberData(nameof(Paths))]
    public void A_valid_signature_is_accepted(string path)
    {
        Assert.True(Verify(path, User.GetPublicKey(), Nonce, Sign(User, Nonce)));
    }

    [Theory, MemberData(nameof(Paths))]
    public void A_signature_with_one_flipped_bit_is_refused(string path)
    {
        var sig = Sign(User, Nonce);
        foreach (int bit in new[] { 0, 7, 100, 255, 256, 300, 511 })
        {
            Assert.False(Verify(path, User.GetPublicKey(), Nonce, Flip(sig, bit)), $"bit {bit}");
        }
    }

    [Theory, MemberData(nameof(Paths))]
    public void Another_message_or_another_key_is_refused(string path)
    {
        var sig = Sign(User, Nonce);
        Assert.False(Verify(path, User.GetPublicKey(), Flip(Nonce, 3), sig));
        Assert.False(Verify(path, KeyPair.CreatePair(PrefixByte.User).GetPublicKey(), Nonce, sig));
    }

    [Theory, MemberData(nameof(Paths))]
    public void Truncated_signatures_and_malformed_keys_are_refused(string path)
    {
        var sig = Sign(User, Nonce);
        string key = User.GetPublicKey();
        Assert.False(Verify(path, key, Nonce, sig[..63]));
        Assert.False(Verify(path, key, Nonce, []));
        // A changed last character breaks the CRC; lower case is not base32; a seed is not a public key.
        Assert.False(Verify(path, key[..^1] + (key[^1] == 'A' ? 'B' : 'A'), Nonce, sig));
        Assert.False(Verify(path, key.ToLowerInvariant(), Nonce, sig));
        Assert.False(Verify(path, User.GetSeed(), Nonce, sig));
        Assert.False(Verify(path, "", Nonce, sig));
    }

    [Theory]
    [InlineData(PrefixByte.User)]
    [InlineData(PrefixByte.Account)]
    [InlineData(PrefixByte.Operator)]
    [InlineData(PrefixByte.Server)]
    public void Every_public_key_kind_verifies_on_both_paths(PrefixByte kind)
    {
        var kp = KeyPair.CreatePair(kind);
        var data = Encoding.ASCII.GetBytes("header.payload");
        var sig = Sign(kp, data);
        Assert.True(Verify("libcrypto", kp.GetPublicKey(), data, sig));
        Assert.True(Verify("nkeys", kp.GetPublicKey(), data, sig));
        Assert.False(Verify("libcrypto", kp.GetPublicKey(), data, Flip(sig, 42)));
    }

    [Fact]
    public void An_empty_message_verifies_through_libcrypto()
    {
        var sig = Sign(User, []);
        Assert.True(Verify("libcrypto", User.GetPublicKey(), [], sig));
        Assert.False(Verify("libcrypto", User.GetPublicKey(), [], Flip(sig, 1)));
    }

    [Fact]
    public void A_library_without_the_symbols_is_not_used()
    {
        // No such library, and one without Ed25519: both leave the NATS.NKeys fallback in charge.
        Assert.Null(OpenSslEd25519.TryLoad(["libnatsbroker-no-such-library.so.9"]));
        Assert.Null(OpenSslEd25519.TryLoad(["libc.so.6"]));
    }
}
