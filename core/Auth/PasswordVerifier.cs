using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.Auth;

/// <summary>
/// server/auth.go comparePasswords: a configured secret that <see cref="Bcrypt.IsBcryptHash"/> recognises is checked
/// with bcrypt, anything else by equality. Plain comparisons here are constant-time (nats-server uses <c>!=</c>;
/// the outcome is the same, only the timing differs).
/// <para>Successful bcrypt checks are remembered so that a reconnect storm does not re-run bcrypt for every
/// client: the cache holds only an HMAC-SHA256 (random per-process key) of (user, stored hash, password), never
/// the password, is bounded (<see cref="CacheCapacity"/>, oldest out) and forgets entries after
/// <see cref="CacheTtl"/>. Failures are not cached, so a wrong password always costs a full bcrypt, and a changed
/// hash (config reload) never matches an old entry: accept/reject decisions are exactly nats-server's.
/// Trade-off: a memory dump would expose HMACs of recently used passwords, which are cheaper to brute-force
/// than bcrypt; set the capacity to 0 to disable.</para>
/// </summary>
public sealed class PasswordVerifier
{
    public const int DefaultCacheCapacity = 1024;
    public static readonly TimeSpan DefaultCacheTtl = TimeSpan.FromMinutes(10);

    // Created on first use: generating it at construction loaded OpenSSL (libcrypto) into every broker,
    // ~10 ms of start-up and ~4.8 MB of RSS, although only bcrypt users ever need it.
    private byte[]? _hmacKey;
    private readonly Lock _lock = new();
    private readonly Dictionary<CacheKey, long> _verified = []; // value: timestamp when verified
    private readonly TimeProvider _time;
    private readonly long _ttlTicks;

    public PasswordVerifier(int cacheCapacity = DefaultCacheCapacity, TimeSpan? cacheTtl = null, TimeProvider? time = null)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(cacheCapacity);
        CacheCapacity = cacheCapacity;
        CacheTtl = cacheTtl ?? DefaultCacheTtl;
        _time = time ?? TimeProvider.System;
        _ttlTicks = (long)(CacheTtl.TotalSeconds * _time.TimestampFrequency);
    }

    public int CacheCapacity { get; }
    public TimeSpan CacheTtl { get; }

    /// <summary>Number of bcrypt computations actually run (for tests and metrics).</summary>
    public long BcryptRuns => Interlocked.Read(ref _bcryptRuns);
    private long _bcryptRuns;

    public int CachedCount
    {
        get
        {
            lock (_lock) return _verified.Count;
        }
    }

    /// <summary>comparePasswords(server, client); null counts as "". <paramref name="user"/> only scopes the cache.
    /// May run bcrypt: call it off the connection threads (see <see cref="TryCompareWithoutHashing"/>).</summary>
    public bool Compare(string? serverPassword, string? clientPassword, string? user = null)
    {
        if (TryCompareWithoutHashing(serverPassword, clientPassword, user) is bool decided) return decided;
        serverPassword ??= "";
        clientPassword ??= "";
        Interlocked.Increment(ref _bcryptRuns);
        if (!Bcrypt.Verify(clientPassword, serverPassword)) return false;
        if (CacheCapacity == 0) return true;
        var key = KeyFor(user ?? "", serverPassword, clientPassword);
        long now = _time.GetTimestamp();
        lock (_lock)
        {
            if (_verified.Count >= CacheCapacity) EvictLocked(now);
            _verified[key] = now;
        }
        return true;
    }

    /// <summary>
    /// The same decision as <see cref="Compare"/> when it is cheap (a plain secret, or a bcrypt check that
    /// succeeded recently and is cached); null when only a bcrypt computation can decide.
    /// </summary>
    public bool? TryCompareWithoutHashing(string? serverPassword, string? clientPassword, string? user = null)
    {
        serverPassword ??= "";
        clientPassword ??= "";
        if (!Bcrypt.IsBcryptHash(serverPassword)) return FixedTimeEquals(serverPassword, clientPassword);
        if (CacheCapacity == 0) return null;

        var key = KeyFor(user ?? "", serverPassword, clientPassword);
        long now = _time.GetTimestamp();
        lock (_lock)
        {
            if (_verified.TryGetValue(key, out long at))
            {
                if (now - at <= _ttlTicks) return true;
                _verified.Remove(key);
            }
        }
        return null;
    }

    /// <summary>Ordinal equality in time independent of where the strings differ (lengths are hidden too).</summary>
    internal static bool FixedTimeEquals(string a, string b)
    {
        Span<byte> ha = stackalloc byte[32];
        Span<byte> hb = stackalloc byte[32];
        SHA256.HashData(System.Runtime.InteropServices.MemoryMarshal.AsBytes(a.AsSpan()), ha);
        SHA256.HashData(System.Runtime.InteropServices.MemoryMarshal.AsBytes(b.AsSpan()), hb);
        return CryptographicOperations.FixedTimeEquals(ha, hb);
    }

    private CacheKey KeyFor(string user, string hash, string password)
    {
        int len = Encoding.UTF8.GetByteCount(user) + 1 + Encoding.UTF8.GetByteCount(hash) + 1 + Encoding.UTF8.GetByteCount(password);
        byte[] buf = new byte[len];
        try
        {
            int o = Encoding.UTF8.GetBytes(user, buf);
            buf[o++] = 0;
            o += Encoding.UTF8.GetBytes(hash, buf.AsSpan(o));
            buf[o++] = 0;
            Encoding.UTF8.GetBytes(password, buf.AsSpan(o));
            Span<byte> mac = stackalloc byte[32];
            HMACSHA256.HashData(LazyInitializer.EnsureInitialized(ref _hmacKey, static () => RandomNumberGenerator.GetBytes(32)), buf, mac);
            return new CacheKey(
                BitConverter.ToUInt64(mac), BitConverter.ToUInt64(mac[8..]),
                BitConverter.ToUInt64(mac[16..]), BitConverter.ToUInt64(mac[24..]));
        }
        finally
        {
            CryptographicOperations.ZeroMemory(buf);
        }
    }

    private void EvictLocked(long now)
    {
        foreach (var (k, at) in _verified)
        {
            if (now - at > _ttlTicks) _verified.Remove(k);
        }
        if (_verified.Count < CacheCapacity) return;
        // Still full: drop the oldest quarter.
        foreach (var k in _verified.OrderBy(kv => kv.Value).Take(Math.Max(1, CacheCapacity / 4)).Select(kv => kv.Key).ToList())
            _verified.Remove(k);
    }

    private readonly record struct CacheKey(ulong A, ulong B, ulong C, ulong D);
}
