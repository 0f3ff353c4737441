using NATS.NKeys;
using NatsBroker.Auth.Jwt;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// The verified-user-JWT cache: a good token is decoded once and served again; a token with any part changed is
/// another key, verified afresh and refused; refused tokens are never kept; the cache stays within its bound.
/// </summary>
public sealed class UserJwtCacheTests
{
    private static readonly KeyPair Account = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair UserKey = KeyPair.CreatePair(PrefixByte.User);

    /// <summary>The token with the character at <paramref name="index"/> (counted from the end when negative) changed.</summary>
    private static string Tamper(string token, int index)
    {
        int i = index < 0 ? token.Length + index : index;
        char c = token[i] == 'A' ? 'B' : 'A';
        return token[..i] + c + token[(i + 1)..];
    }

    [Fact]
    public void A_verified_token_is_decoded_once_and_served_again()
    {
        var cache = new UserJwtCache();
        string jwt = JwtFactory.User(Account, UserKey);
        var first = cache.Decode(jwt);
        Assert.NotNull(first);
        Assert.Equal(UserKey.GetPublicKey(), first.Subject);
        Assert.Equal(Account.GetPublicKey(), first.Issuer);
        Assert.Same(first, cache.Decode(jwt));
        Assert.Equal(1, cache.Count);
    }

    [Fact]
    public void A_tampered_signature_or_payload_is_refused_even_after_the_good_token_was_cached()
    {
        var cache = new UserJwtCache();
        string jwt = JwtFactory.User(Account, UserKey);
        Assert.NotNull(cache.Decode(jwt));
        int payloadAt = jwt.IndexOf('.', StringComparison.Ordinal) + 10;
        Assert.Null(cache.Decode(Tamper(jwt, -5)));
        Assert.Null(cache.Decode(Tamper(jwt, payloadAt)));
        // Signed by a key other than the issuer it names.
        string forged = JwtFactory.User(KeyPair.CreatePair(PrefixByte.Account), UserKey);
        string[] parts = forged.Split('.');
        string[] good = jwt.Split('.');
        Assert.Null(cache.Decode(good[0] + "." + good[1] + "." + parts[2]));
        Assert.Null(cache.Decode(""));
        Assert.Null(cache.Decode(null));
        Assert.Equal(1, cache.Count);
    }

    [Fact]
    public void The_cache_stays_within_its_bound()
    {
        var cache = new UserJwtCache(capacity: 4);
        for (int i = 0; i < 10; i++)
        {
            Assert.NotNull(cache.Decode(JwtFactory.User(Account, KeyPair.CreatePair(PrefixByte.User))));
            Assert.InRange(cache.Count, 1, 4);
        }
    }
}
