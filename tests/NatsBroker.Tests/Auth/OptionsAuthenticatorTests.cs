using NatsBroker.Auth;
using NatsBroker.Configuration;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Auth;

public class OptionsAuthenticatorTests
{
    // "secret" hashed at cost 4 (checked with libxcrypt); cost 4 keeps the tests fast.
    private const string SecretHash = "$2a$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW";
    private static readonly ClientAuthContext Ctx = new() { ClientId = 1 };

    private static ConnectOptions Connect(string? user = null, string? pass = null, string? token = null) =>
        new() { User = user, Pass = pass, AuthToken = token };

    private static ServerOptions UsersOptions(string? noAuthUser = null) => new()
    {
        Users =
        [
            new UserConfig { User = "plain", Password = "pw", Permissions = new Permissions { Publish = new SubjectPermission { Allow = ["p.>"] } } },
            new UserConfig { User = "hashed", Password = SecretHash },
            new UserConfig { User = "nopass" },
        ],
        NoAuthUser = noAuthUser,
    };

    [Fact]
    public void No_auth_configured_accepts_everyone()
    {
        var a = new OptionsAuthenticator(new ServerOptions());
        Assert.False(a.AuthRequired);
        Assert.True(a.Authenticate(Connect(), Ctx).Success);
        Assert.True(a.Authenticate(Connect("x", "y", "z"), Ctx).Success); // credentials are ignored (verified)
        Assert.True(a.AuthenticateWithoutConnect(Ctx).Success);
    }

    [Theory]
    [InlineData("u", "p", true)]
    [InlineData("u", "x", false)]
    [InlineData("v", "p", false)]
    [InlineData(null, null, false)]
    [InlineData(null, "p", false)]
    public void Single_user(string? user, string? pass, bool ok)
    {
        var a = new OptionsAuthenticator(new ServerOptions { Username = "u", Password = "p" });
        Assert.True(a.AuthRequired);
        var r = a.Authenticate(Connect(user, pass), Ctx);
        Assert.Equal(ok, r.Success);
        if (ok) Assert.Equal("u", r.User);
        Assert.False(a.Authenticate(Connect(token: "p"), Ctx).Success);
    }

    [Fact]
    public void Single_user_with_bcrypt_password()
    {
        var a = new OptionsAuthenticator(new ServerOptions { Username = "u", Password = SecretHash });
        Assert.True(a.Authenticate(Connect("u", "secret"), Ctx).Success);
        Assert.False(a.Authenticate(Connect("u", SecretHash), Ctx).Success);
    }

    [Theory]
    [InlineData("tok", "tok", true)]
    [InlineData("tok", "tak", false)]
    [InlineData("tok", null, false)]
    [InlineData(SecretHash, "secret", true)]
    [InlineData(SecretHash, "nope", false)]
    public void Token(string configured, string? sent, bool ok)
    {
        var a = new OptionsAuthenticator(new ServerOptions { Authorization = configured });
        Assert.Equal(ok, a.Authenticate(Connect(token: sent), Ctx).Success);
        Assert.False(a.Authenticate(Connect(pass: "secret"), Ctx).Success); // a token is not a password (verified)
    }

    [Theory]
    [InlineData("plain", "pw", true)]
    [InlineData("plain", "PW", false)]
    [InlineData("hashed", "secret", true)]
    [InlineData("hashed", SecretHash, false)]
    [InlineData("nopass", null, true)]
    [InlineData("nopass", "x", false)]
    [InlineData("ghost", "pw", false)]
    [InlineData(null, "pw", false)]
    [InlineData(null, null, false)]
    public void Users_list(string? user, string? pass, bool ok)
    {
        var a = new OptionsAuthenticator(UsersOptions());
        var r = a.Authenticate(Connect(user, pass), Ctx);
        Assert.Equal(ok, r.Success);
        if (ok) Assert.Equal(user, r.User);
    }

    [Fact]
    public void Users_get_fresh_permissions_per_connection()
    {
        var a = new OptionsAuthenticator(UsersOptions());
        var r1 = a.Authenticate(Connect("plain", "pw"), Ctx);
        var r2 = a.Authenticate(Connect("plain", "pw"), Ctx);
        Assert.NotNull(r1.Permissions);
        Assert.NotSame(r1.Permissions, r2.Permissions);
        Assert.True(r1.Permissions!.CanPublish("p.x"u8));
        Assert.False(r1.Permissions.CanPublish("q"u8));
        Assert.Null(a.Authenticate(Connect("hashed", "secret"), Ctx).Permissions);
    }

    [Fact]
    public void No_auth_user_applies_only_without_credentials()
    {
        var a = new OptionsAuthenticator(UsersOptions(noAuthUser: "plain"));
        var r = a.Authenticate(Connect(), Ctx);
        Assert.True(r.Success);
        Assert.Equal("plain", r.User);
        Assert.False(r.Permissions!.CanPublish("q"u8)); // with that user's permissions
        Assert.True(a.Authenticate(Connect("", ""), Ctx).Success);        // empty strings count as absent
        Assert.False(a.Authenticate(Connect(pass: "pw"), Ctx).Success);   // a password alone: no user, rejected
        Assert.False(a.Authenticate(Connect(token: "pw"), Ctx).Success);  // a token alone: same
        Assert.True(a.Authenticate(Connect("hashed", "secret"), Ctx).Success);
        Assert.False(a.Authenticate(Connect("hashed", "bad"), Ctx).Success);
        Assert.Equal("plain", a.AuthenticateWithoutConnect(Ctx).User);
    }

    [Fact]
    public void No_auth_user_with_bcrypt_password_is_rejected_on_connect_like_nats_server()
    {
        // nats-server copies the stored hash in as the password and bcrypt-compares the hash with itself.
        var a = new OptionsAuthenticator(UsersOptions(noAuthUser: "hashed"));
        Assert.False(a.Authenticate(Connect(), Ctx).Success);
        Assert.True(a.AuthenticateWithoutConnect(Ctx).Success); // the no-CONNECT path skips the password check
    }

    [Fact]
    public void Without_connect_and_no_no_auth_user_is_a_violation()
    {
        var a = new OptionsAuthenticator(UsersOptions());
        Assert.False(a.AuthenticateWithoutConnect(Ctx).Success);
    }

    [Fact]
    public void Later_duplicate_user_wins()
    {
        var o = new ServerOptions { Users = [new UserConfig { User = "a", Password = "1" }, new UserConfig { User = "a", Password = "2" }] };
        var a = new OptionsAuthenticator(o);
        Assert.False(a.Authenticate(Connect("a", "1"), Ctx).Success);
        Assert.True(a.Authenticate(Connect("a", "2"), Ctx).Success);
    }

    [Fact]
    public void Allow_responses_from_config_reach_the_connection()
    {
        var o = new ServerOptions
        {
            Users = [new UserConfig { User = "svc", Password = "x", Permissions = new Permissions { Subscribe = new SubjectPermission { Allow = ["req"] }, Response = new ResponsePermission() } }],
        };
        var p = new OptionsAuthenticator(o).Authenticate(Connect("svc", "x"), Ctx).Permissions!;
        Assert.False(p.CanPublish("other"u8));
        p.Responses!.OnDelivered("_INBOX.1"u8);
        Assert.True(p.CanPublish("_INBOX.1"u8));
    }
}

public class PasswordVerifierTests
{
    private const string SecretHash = "$2a$04$abcdefghijklmnopqrstuu2r9OfJnfCsdneAXAGHnS4UpFFP8WIrW";

    [Fact]
    public void Plain_comparison_is_exact()
    {
        var v = new PasswordVerifier();
        Assert.True(v.Compare("pw", "pw"));
        Assert.False(v.Compare("pw", "pw "));
        Assert.False(v.Compare("pw", "PW"));
        Assert.True(v.Compare(null, ""));
        Assert.True(v.Compare("$2a$4$short", "$2a$4$short")); // not a bcrypt prefix: plain
        Assert.Equal(0, v.BcryptRuns);
    }

    [Fact]
    public void Successful_bcrypt_checks_are_cached_failures_are_not()
    {
        var clock = new ManualTimeProvider();
        var v = new PasswordVerifier(time: clock);
        Assert.True(v.Compare(SecretHash, "secret", "u"));
        Assert.True(v.Compare(SecretHash, "secret", "u"));
        Assert.True(v.Compare(SecretHash, "secret", "u"));
        Assert.Equal(1, v.BcryptRuns);
        Assert.False(v.Compare(SecretHash, "wrong", "u"));
        Assert.False(v.Compare(SecretHash, "wrong", "u"));
        Assert.Equal(3, v.BcryptRuns);
        Assert.True(v.Compare(SecretHash, "secret", "other-user")); // scoped per user
        Assert.Equal(4, v.BcryptRuns);
        clock.Advance(PasswordVerifier.DefaultCacheTtl + TimeSpan.FromSeconds(1));
        Assert.True(v.Compare(SecretHash, "secret", "u"));
        Assert.Equal(5, v.BcryptRuns);
    }

    [Fact]
    public void Cache_is_bounded_and_can_be_disabled()
    {
        var v = new PasswordVerifier(cacheCapacity: 4);
        for (int i = 0; i < 20; i++) Assert.True(v.Compare(SecretHash, "secret", "u" + i));
        Assert.InRange(v.CachedCount, 1, 4);

        var off = new PasswordVerifier(cacheCapacity: 0);
        Assert.True(off.Compare(SecretHash, "secret"));
        Assert.True(off.Compare(SecretHash, "secret"));
        Assert.Equal(2, off.BcryptRuns);
        Assert.Equal(0, off.CachedCount);
    }
}
