using System.Runtime.InteropServices;

namespace NatsBroker.Auth;

/// <summary>
/// Ed25519 signature verification (RFC 8032) through the platform's OpenSSL libcrypto, which .NET itself loads on
/// Linux for System.Security.Cryptography. NATS.NKeys verifies in managed code (~100 µs per signature, measured in a
/// warm loop); libcrypto's assembly-optimised curve arithmetic is several times faster, and every nkey or JWT login
/// verifies one or two signatures. OpenSSL 1.1.1+ API: <c>EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519)</c>, then
/// one-shot <c>EVP_DigestVerifyInit</c> (no digest: Ed25519 hashes internally) and <c>EVP_DigestVerify</c>.
/// <see cref="TryLoad"/> returns null where libcrypto or those symbols are missing (then the caller keeps NATS.NKeys).
/// </summary>
internal sealed unsafe class OpenSslEd25519
{
    /// <summary>NID_ED25519 (openssl/obj_mac.h), which EVP_PKEY_ED25519 is defined as.</summary>
    private const int EvpPkeyEd25519 = 1087;

    /// <summary>The sonames tried, newest first (Debian 12 ships libcrypto.so.3; 1.1.1 added raw Ed25519 keys).</summary>
    private static readonly string[] LibraryNames = ["libcrypto.so.3", "libcrypto.so.1.1", "libcrypto.so", "libcrypto.3.dylib", "libcrypto.dylib"];

    private readonly delegate* unmanaged<int, nint, byte*, nuint, nint> _newRawPublicKey;
    private readonly delegate* unmanaged<nint, void> _freeKey;
    private readonly delegate* unmanaged<nint> _newContext;
    private readonly delegate* unmanaged<nint, void> _freeContext;
    private readonly delegate* unmanaged<nint, nint, nint, nint, nint, int> _verifyInit;
    private readonly delegate* unmanaged<nint, byte*, nuint, byte*, nuint, int> _verify;
    private readonly delegate* unmanaged<void> _clearErrors;

    private OpenSslEd25519(nint lib)
    {
        _newRawPublicKey = (delegate* unmanaged<int, nint, byte*, nuint, nint>)NativeLibrary.GetExport(lib, "EVP_PKEY_new_raw_public_key");
        _freeKey = (delegate* unmanaged<nint, void>)NativeLibrary.GetExport(lib, "EVP_PKEY_free");
        _newContext = (delegate* unmanaged<nint>)NativeLibrary.GetExport(lib, "EVP_MD_CTX_new");
        _freeContext = (delegate* unmanaged<nint, void>)NativeLibrary.GetExport(lib, "EVP_MD_CTX_free");
        _verifyInit = (delegate* unmanaged<nint, nint, nint, nint, nint, int>)NativeLibrary.GetExport(lib, "EVP_DigestVerifyInit");
        _verify = (delegate* unmanaged<nint, byte*, nuint, byte*, nuint, int>)NativeLibrary.GetExport(lib, "EVP_DigestVerify");
        _clearErrors = (delegate* unmanaged<void>)NativeLibrary.GetExport(lib, "ERR_clear_error");
    }

    /// <summary>The process-wide instance, or null when libcrypto (1.1.1 or later) cannot be loaded.</summary>
    public static OpenSslEd25519? Shared { get; } = TryLoad(LibraryNames);

    /// <summary>Loads the first of <paramref name="names"/> that has every needed symbol; null when none does.</summary>
    internal static OpenSslEd25519? TryLoad(IEnumerable<string> names)
    {
        foreach (var name in names)
        {
            if (!NativeLibrary.TryLoad(name, out var lib)) continue;
            if (HasExports(lib)) return new OpenSslEd25519(lib);
            NativeLibrary.Free(lib);
        }
        return null;
    }

    private static bool HasExports(nint lib) =>
        NativeLibrary.TryGetExport(lib, "EVP_PKEY_new_raw_public_key", out _)
        && NativeLibrary.TryGetExport(lib, "EVP_PKEY_free", out _)
        && NativeLibrary.TryGetExport(lib, "EVP_MD_CTX_new", out _)
        && NativeLibrary.TryGetExport(lib, "EVP_MD_CTX_free", out _)
        && NativeLibrary.TryGetExport(lib, "EVP_DigestVerifyInit", out _)
        && NativeLibrary.TryGetExport(lib, "EVP_DigestVerify", out _)
        && NativeLibrary.TryGetExport(lib, "ERR_clear_error", out _);

    /// <summary>
    /// True when <paramref name="signature"/> (64 bytes) is <paramref name="publicKey"/>'s (32 raw bytes) Ed25519
    /// signature of <paramref name="message"/>. Any OpenSSL failure (bad point, allocation) counts as not verified;
    /// its error queue is cleared so it cannot leak into .NET's own OpenSSL calls on this thread.
    /// </summary>
    public bool Verify(ReadOnlySpan<byte> publicKey, ReadOnlySpan<byte> message, ReadOnlySpan<byte> signature)
    {
        if (publicKey.Length != 32 || signature.Length != 64) return false;
        nint key = 0, ctx = 0;
        int rc = 0;
        fixed (byte* pk = publicKey)
        fixed (byte* msg = message)
        fixed (byte* sig = signature)
        {
            try
            {
                key = _newRawPublicKey(EvpPkeyEd25519, 0, pk, 32);
                if (key != 0) ctx = _newContext();
                if (ctx != 0 && _verifyInit(ctx, 0, 0, 0, key) == 1)
                {
                    // EVP_DigestVerify wants a non-null buffer even for an empty message.
                    byte empty = 0;
                    rc = _verify(ctx, sig, 64, message.IsEmpty ? &empty : msg, (nuint)message.Length);
                }
            }
            finally
            {
                if (ctx != 0) _freeContext(ctx);
                if (key != 0) _freeKey(key);
            }
        }
        if (rc != 1) _clearErrors();
        return rc == 1;
    }
}
