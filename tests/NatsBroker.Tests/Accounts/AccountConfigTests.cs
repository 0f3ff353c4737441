using NatsBroker.Configuration;

namespace NatsBroker.Tests.Accounts;

/// <summary>The accounts block as configuration: users moved into their accounts, imports checked against exports.</summary>
public sealed class AccountConfigTests
{
    private static ServerOptions Load(string text)
    {
        var opts = new ServerOptions();
        ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), opts);
        return opts;
    }

    private static string Fail(string text) =>
        Assert.Throws<ConfigException>(() => Load(text)).Message;

    [Fact]
    public void Users_belong_to_their_account_and_limits_are_read()
    {
        var o = Load("""
            accounts { A: { users: [{user: a, password: x}], limits: { max_connections: 3, max_payload: 100 } } }
            authorization { users: [{user: g, password: y}] }
            """);
        Assert.Equal("A", o.Users.Single(u => u.User == "a").Account);
        Assert.Null(o.Users.Single(u => u.User == "g").Account);
        var a = Assert.Single(o.Accounts);
        Assert.Equal((3, 100, -1), (a.MaxConnections, a.MaxPayload, a.MaxSubscriptions));
    }

    [Fact]
    public void Imports_need_an_existing_exporting_account()
    {
        Assert.Contains("imports from unknown account \"Z\"",
            Fail("accounts { B: { imports: [{stream: {account: Z, subject: x}}] } }"), StringComparison.Ordinal);
        Assert.Contains("is not authorized by account \"A\"",
            Fail("accounts { A: { exports: [{stream: \"x.>\", accounts: [C]}] }, B: { imports: [{stream: {account: A, subject: \"x.y\"}}] } }"),
            StringComparison.Ordinal);
        Assert.Contains("failed to create mapping transform",
            Fail("accounts { A: { exports: [{stream: \"x.>\"}] }, B: { imports: [{stream: {account: A, subject: \"x.>\"}, to: \"got\"}] } }"),
            StringComparison.Ordinal);
    }

    [Fact]
    public void Duplicate_users_across_accounts_are_refused()
    {
        Assert.Contains("Duplicate user \"u\"",
            Fail("accounts { A: { users: [{user: u, password: x}] }, B: { users: [{user: u, password: y}] } }"), StringComparison.Ordinal);
    }
}
