using NatsBroker.Auth;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// <see cref="Bcrypt"/> (BCrypt.Net-Next plus nats-server's rules around it) against published vectors, libxcrypt
/// and x/crypto's decisions as nats-server 2.9.10 makes them.
/// </summary>
public class BcryptTests
{
    // Published vectors (jBCrypt / OpenBSD regress / openwall), re-checked against glibc's libxcrypt crypt().
    [Theory]
    [InlineData("", "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.")]
    [InlineData("", "$2a$08$HqWuK6/Ng6sg9gQzbLrgb.Tl.ZHfXLhvt/SgVyWhQqgqcZ7ZuUtye")]
    [InlineData("a", "$2a$06$m0CrhHm10qJ3lXRY.5zDGO3rS2KdeeWLuGmsfGlMfOxih58VYVfxe")]
    [InlineData("abc", "$2a$06$If6bvum7DFjUnE9p2uDeDu0YHzrHM6tf.iqN8.yx.jNN1ILEf7h0i")]
    [InlineData("abcdefghijklmnopqrstuvwxyz", "$2a$06$.rCVZVOThsIa97pEDOxvGuRRgzG64bvtJ0938xuqzv18d3ZpQhstC")]
    [InlineData("~!@#$%^&*()      ~!@#$%^&*()PNBFRD", "$2a$06$fPIsBO8qRqkjj273rfaOI.HtSV9jLDpTbZn782DC6/t7qT67P6FfO")]
    [InlineData("password", "$2a$05$bvIG6Nmid91Mu9RcmmWZfO5HJIMCT8riNW0hEp8f6/FuA2/mHZFpe")]
    [InlineData("U*U", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.E5YPO9kmyuRGyh0XouQYb4YMJKvyOeW")]
    [InlineData("", "$2a$05$CCCCCCCCCCCCCCCCCCCCC.7uG0VCzI2bS7j6ymqJi9CdcdxiRTWNy")]
    [InlineData("ππππππππ", "$2a$10$.TtQJ4Jr6isd4Hp.mVfZeuh6Gws4rOQ/vdBczhDx.19NFK0Y84Dle")]
    [InlineData("correct horse", "$2y$04$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")]
    [InlineData("correct horse", "$2b$04$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")]
    public void Verifies_known_vectors(string password, string hash)
    {
        Assert.True(Bcrypt.Verify(password, hash));
        Assert.False(Bcrypt.Verify(password + "x", hash));
    }

    [Fact]
    public void Reproduces_vector_from_salt()
    {
        // The library hashes "" with salt "DCq7YPn5Rq63x1Lad4cll." at cost 6: the whole string must round-trip.
        const string expected = "$2a$06$DCq7YPn5Rq63x1Lad4cll.TV4S6ytwfsfvkgY8jIucDrjc8deX1s.";
        Assert.Equal(expected, BCrypt.Net.BCrypt.HashPassword("", expected[..29]));
    }

    [Fact]
    public void All_nats_minor_versions_verify_alike()
    {
        // x/crypto ignores the minor version; nats-server routes $2a$ $2b$ $2x$ $2y$ to it.
        const string tail = "$04$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e";
        foreach (var minor in "abxy")
            Assert.True(Bcrypt.Verify("correct horse", "$2" + minor + tail));
        Assert.False(Bcrypt.Verify("correct horse", "$2c" + tail));
    }

    [Fact]
    public void Only_first_72_bytes_count()
    {
        // Same salt and first 72 bytes: same hash (vector checked with libxcrypt).
        const string h = "$2b$04$abcdefghijklmnopqrstuuBzzIgyKkz7xMWYSzkIjUSnxEQFQ0WNe";
        Assert.True(Bcrypt.Verify(new string('a', 72), h));
        Assert.True(Bcrypt.Verify(new string('a', 72) + "b", h));
        Assert.False(Bcrypt.Verify(new string('a', 71), h));
        Assert.True(Bcrypt.Verify(new string('a', 71), "$2b$04$abcdefghijklmnopqrstuuMCu.k1vM/ywQwiONaEn3oEMlZoCVBd6"));
    }

    [Theory]
    [InlineData("$2a$03$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")] // cost below 4
    [InlineData("$2a$32$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")] // cost above 31
    [InlineData("$2a$04$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6")]  // short
    [InlineData("$2a$04$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e.")] // long
    [InlineData("$2a$04$abcdefghijklmnopqrst!ujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")] // bad salt char
    [InlineData("$2a$04$abcdefghijklmnopqrst\u00e9ujydOTSfIH/d5oUHpsygqV5X9xJLQc6")] // non-ASCII salt char
    [InlineData("$2a$04$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc\u00e9")] // non-ASCII hash char
    [InlineData("$2a$99$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")] // cost far out of range
    [InlineData("$2a$04$")] // prefix only
    [InlineData("$2a$04$abcdefghijklmnopqrstuu")] // salt, no hash
    [InlineData("$2a$4$abcdefghijklmnopqrstuujydOTSfIH/d5oUHpsygqV5X9xJLQc6e")]
    [InlineData("")]
    [InlineData("correct horse")]
    public void Malformed_hashes_never_verify(string hash) => Assert.False(Bcrypt.Verify("correct horse", hash));

    [Theory]
    [InlineData("$2a$11$abc", true)]
    [InlineData("$2b$04$", true)]
    [InlineData("$2x$10$", true)]
    [InlineData("$2y$10$", true)]
    [InlineData("$2c$10$", false)]
    [InlineData("$2a$1$", false)]
    [InlineData("$2$10$", false)]
    [InlineData("$3a$10$", false)]
    [InlineData("2a$10$", false)]
    [InlineData("plain", false)]
    public void Recognises_hashes_like_nats_server(string value, bool isHash) => Assert.Equal(isHash, Bcrypt.IsBcryptHash(value));

    [Fact]
    public void Hash_round_trips_with_random_salt()
    {
        var h1 = Bcrypt.Hash("s3cr3t", 4);
        var h2 = Bcrypt.Hash("s3cr3t", 4);
        Assert.NotEqual(h1, h2);
        Assert.StartsWith("$2a$04$", h1, StringComparison.Ordinal);
        Assert.Equal(60, h1.Length);
        Assert.True(Bcrypt.Verify("s3cr3t", h1));
        Assert.True(Bcrypt.Verify("s3cr3t", h2));
        Assert.False(Bcrypt.Verify("s3cr3T", h1));
    }

    [SkippableFact]
    public void Agrees_with_system_crypt()
    {
        // libxcrypt (glibc crypt via perl) is an independent bcrypt implementation.
        var perl = NatsBroker.Tests.Infrastructure.Prerequisites.RequireProgram("perl");
        var rng = new Random(42);
        for (int i = 0; i < 6; i++)
        {
            var pw = new string(Enumerable.Range(0, rng.Next(0, 80)).Select(_ => (char)rng.Next(33, 127)).ToArray());
            var salt = BCrypt.Net.BCrypt.GenerateSalt(4, 'b');
            var ours = BCrypt.Net.BCrypt.HashPassword(pw, salt);
            var theirs = ExternalProgram.Run(perl, "-e", "print crypt($ARGV[0], $ARGV[1])", pw, salt);
            Assert.Equal(theirs, ours);
            Assert.True(Bcrypt.Verify(pw, theirs));
        }
    }

    [Fact]
    public void Verify_does_not_care_about_unused_salt_bits()
    {
        // The 22nd salt char carries 2 useful bits; x/crypto decodes leniently (Go's non-strict base64), so do we.
        const string alphabet = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        var h = Bcrypt.Hash("pw", 4);
        int v = alphabet.IndexOf(h[28], StringComparison.Ordinal);
        var twin = string.Concat(h.AsSpan(0, 28), alphabet[v ^ 1].ToString(), h.AsSpan(29));
        Assert.NotEqual(h, twin);
        Assert.True(Bcrypt.Verify("pw", twin));
    }
}
