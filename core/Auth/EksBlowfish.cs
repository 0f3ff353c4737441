using System.Buffers.Binary;
using System.Runtime.CompilerServices;
using System.Security.Cryptography;

namespace NatsBroker.Auth;

/// <summary>
/// Blowfish with bcrypt's "expensive key schedule" (EksBlowfishSetup). A value type of ~4 KB meant to live on
/// the stack for one hash computation; <see cref="Clear"/> wipes it afterwards.
/// </summary>
internal unsafe struct EksBlowfish
{
    private fixed uint _p[BlowfishPi.PWords];
    private fixed uint _s[BlowfishPi.SWords];

    /// <summary>
    /// state = InitState(); ExpandKey(state, salt, key); repeat 2^cost: ExpandKey(state, 0, key); ExpandKey(state, 0, salt).
    /// The key is the password plus a trailing NUL, read cyclically; only its first 72 bytes ever matter.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public void Setup(ReadOnlySpan<byte> password, ReadOnlySpan<byte> salt, int cost)
    {
        fixed (uint* p = _p)
        fixed (uint* s = _s)
        {
            BlowfishPi.Digits[..BlowfishPi.PWords].CopyTo(new Span<uint>(p, BlowfishPi.PWords));
            BlowfishPi.Digits[BlowfishPi.PWords..].CopyTo(new Span<uint>(s, BlowfishPi.SWords));

            // The key and salt streams are cyclic, so their words for one pass over P are fixed: precompute them.
            // Passwords of 72 bytes or more never reach their NUL: only the first 72 bytes are read.
            int keyLen = password.Length >= Bcrypt.MaxPasswordBytes ? Bcrypt.MaxPasswordBytes : password.Length + 1;
            Span<byte> key = stackalloc byte[Bcrypt.MaxPasswordBytes];
            key.Clear();
            password[..Math.Min(password.Length, Bcrypt.MaxPasswordBytes)].CopyTo(key);
            uint* keyWords = stackalloc uint[BlowfishPi.PWords];
            int pos = 0;
            for (int i = 0; i < BlowfishPi.PWords; i++) keyWords[i] = NextWord(key[..keyLen], ref pos);
            CryptographicOperations.ZeroMemory(key);

            uint* saltWords = stackalloc uint[4];
            for (int i = 0; i < 4; i++) saltWords[i] = BinaryPrimitives.ReadUInt32BigEndian(salt[(4 * i)..]);

            ExpandKey(p, s, keyWords, saltWords);
            ulong rounds = 1UL << cost;
            for (ulong r = 0; r < rounds; r++)
            {
                ExpandKey(p, s, keyWords, null);
                ExpandKeyWithSaltAsKey(p, s, saltWords);
            }
            new Span<uint>(keyWords, BlowfishPi.PWords).Clear();
        }
    }

    public void Encrypt(ref uint left, ref uint right)
    {
        fixed (uint* p = _p)
        fixed (uint* s = _s)
        {
            ulong lr = Encrypt(p, s, left, right);
            left = (uint)(lr >> 32);
            right = (uint)lr;
        }
    }

    public void Clear()
    {
        fixed (uint* p = _p)
        fixed (uint* s = _s)
        {
            new Span<uint>(p, BlowfishPi.PWords).Clear();
            new Span<uint>(s, BlowfishPi.SWords).Clear();
        }
    }

    private static uint NextWord(ReadOnlySpan<byte> data, ref int pos)
    {
        uint w = 0;
        for (int i = 0; i < 4; i++)
        {
            w = (w << 8) | data[pos];
            pos = pos + 1 == data.Length ? 0 : pos + 1;
        }
        return w;
    }

    /// <summary>XOR the key into P, then re-key P and S by chained encryption, mixing in the salt when given.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static void ExpandKey(uint* p, uint* s, uint* keyWords, uint* saltWords)
    {
        for (int i = 0; i < BlowfishPi.PWords; i++) p[i] ^= keyWords[i];
        uint l = 0, r = 0;
        int j = 0;
        for (int i = 0; i < BlowfishPi.PWords; i += 2)
        {
            if (saltWords != null)
            {
                l ^= saltWords[j];
                r ^= saltWords[j + 1];
                j ^= 2;
            }
            ulong lr = Encrypt(p, s, l, r);
            l = (uint)(lr >> 32);
            r = (uint)lr;
            p[i] = l;
            p[i + 1] = r;
        }
        for (int i = 0; i < BlowfishPi.SWords; i += 2)
        {
            if (saltWords != null)
            {
                l ^= saltWords[j];
                r ^= saltWords[j + 1];
                j ^= 2;
            }
            ulong lr = Encrypt(p, s, l, r);
            l = (uint)(lr >> 32);
            r = (uint)lr;
            s[i] = l;
            s[i + 1] = r;
        }
    }

    /// <summary>ExpandKey(state, 0, salt): the 16-byte salt used as the key (its 4 words cycle over P).</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    private static void ExpandKeyWithSaltAsKey(uint* p, uint* s, uint* saltWords)
    {
        for (int i = 0; i < BlowfishPi.PWords; i++) p[i] ^= saltWords[i & 3];
        uint l = 0, r = 0;
        for (int i = 0; i < BlowfishPi.PWords; i += 2)
        {
            ulong lr = Encrypt(p, s, l, r);
            l = (uint)(lr >> 32);
            r = (uint)lr;
            p[i] = l;
            p[i + 1] = r;
        }
        for (int i = 0; i < BlowfishPi.SWords; i += 2)
        {
            ulong lr = Encrypt(p, s, l, r);
            l = (uint)(lr >> 32);
            r = (uint)lr;
            s[i] = l;
            s[i + 1] = r;
        }
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static uint F(uint* s, uint x) =>
        ((s[x >> 24] + (s + 256)[(byte)(x >> 16)]) ^ (s + 512)[(byte)(x >> 8)]) + (s + 768)[(byte)x];

    /// <summary>16 Feistel rounds, unrolled; returns (left &lt;&lt; 32) | right with the final swap folded in.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static ulong Encrypt(uint* p, uint* s, uint xl, uint xr)
    {
        xl ^= p[0];
        xr ^= F(s, xl) ^ p[1];
        xl ^= F(s, xr) ^ p[2];
        xr ^= F(s, xl) ^ p[3];
        xl ^= F(s, xr) ^ p[4];
        xr ^= F(s, xl) ^ p[5];
        xl ^= F(s, xr) ^ p[6];
        xr ^= F(s, xl) ^ p[7];
        xl ^= F(s, xr) ^ p[8];
        xr ^= F(s, xl) ^ p[9];
        xl ^= F(s, xr) ^ p[10];
        xr ^= F(s, xl) ^ p[11];
        xl ^= F(s, xr) ^ p[12];
        xr ^= F(s, xl) ^ p[13];
        xl ^= F(s, xr) ^ p[14];
        xr ^= F(s, xl) ^ p[15];
        xl ^= F(s, xr) ^ p[16];
        return ((ulong)(xr ^ p[17]) << 32) | xl;
    }
}
