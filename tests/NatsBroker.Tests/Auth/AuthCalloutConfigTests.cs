using NATS.NKeys;
using NatsBroker.Configuration;

namespace NatsBroker.Tests.Auth;

/// <summary><c>authorization { auth_callout {} }</c> as server/opts.go parseAuthCallout reads it, with its error texts.</summary>
public sealed class AuthCalloutConfigTests
{
    private static readonly string Issuer = KeyPair.CreatePair(PrefixByte.Account).GetPublicKey();
    private static readonly string XKey = KeyPair.CreatePair(PrefixByte.Curve).GetPublicKey();

    private static ServerOptions Load(string text)
    {
        var opts = new ServerOptions();
        ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), opts);
        return opts;
    }

    private static string Fail(string text) => Assert.Throws<ConfigException>(() => Load(text)).Message;

    [Fact]
    public void Every_field_is_read_and_the_account_defaults_to_the_global_one()
    {
        var o = Load($$"""
            accounts { AUTH: { users: [{user: auth, password: pwd}] }, APP: {} }
            authorization { auth_callout { issuer: {{Issuer}}, account: AUTH, auth_users: [auth], xkey: {{XKey}}, allowed_accounts: [APP] } }
            """);
        var ac = o.AuthCallout!;
        Assert.Equal((Issuer, "AUTH", XKey), (ac.Issuer, ac.Account, ac.XKey));
        Assert.Equal(["auth"], ac.AuthUsers);
        Assert.Equal(["APP"], ac.AllowedAccounts);

        var g = Load($$"""authorization { users: [{user: auth, password: pwd}], auth_callout { issuer: {{Issuer}}, auth_users: [auth] } }""");
        Assert.Equal("$G", g.AuthCallout!.Account);
    }

    [Fact]
    public void Missing_or_invalid_fields_are_errors()
    {
        Assert.Contains("Authorization callouts require an issuer to be specified",
            Fail("authorization { auth_callout { auth_users: [a] } }"), StringComparison.Ordinal);
        Assert.Contains("Authorization callouts require authorized users to be specified",
            Fail($$"""authorization { auth_callout { issuer: {{Issuer}} } }"""), StringComparison.Ordinal);
        Assert.Contains("Expected callout user to be a valid public account nkey, got \"UNKNOWN\"",
            Fail("authorization { auth_callout { issuer: UNKNOWN, auth_users: [a] } }"), StringComparison.Ordinal);
        Assert.Contains($"Expected callout xkey to be a valid public xkey, got \"{Issuer}\"",
            Fail($$"""authorization { auth_callout { issuer: {{Issuer}}, auth_users: [a], xkey: {{Issuer}} } }"""), StringComparison.Ordinal);
        Assert.Contains("auth_callout allowed account \"NOPE\" not found in configured accounts",
            Fail($$"""authorization { auth_callout { issuer: {{Issuer}}, auth_users: [a], allowed_accounts: [NOPE] } }"""), StringComparison.Ordinal);
        Assert.Contains("Unknown field \"bogus\" parsing authorization callout",
            Fail($$"""authorization { auth_callout { issuer: {{Issuer}}, auth_users: [a], bogus: 1 } }"""), StringComparison.Ordinal);
    }
}
