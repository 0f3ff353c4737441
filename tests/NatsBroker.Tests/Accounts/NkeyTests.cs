using System.Text;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>NKey users against both servers: nonce in INFO, signed CONNECT accepted, wrong signature or key refused.</summary>
public sealed class NkeyTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair User = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Other = KeyPair.CreatePair(PrefixByte.User);

    private static string Config => $$"""
        accounts {
          A: { users: [{nkey: {{User.GetPublicKey()}}}] }
        }
        authorization { users: [{user: g, password: g}] }
        """;

    private static string Sign(KeyPair kp, string nonce)
    {
        var sig = new byte[64];
        kp.Sign(Encoding.ASCII.GetBytes(nonce), sig);
        return Convert.ToBase64String(sig).TrimEnd('=').Replace('+', '-').Replace('/', '_');
    }

    private static string Connect(string nkey, string sig) =>
        $$"""{"verbose":false,"pedantic":false,"nkey":"{{nkey}}","sig":"{{sig}}"}""";

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Signed_nonce_is_accepted_and_lands_in_the_users_account(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var c = await RawClient.ConnectAsync(s);
        var info = await c.ReadInfoAsync();
        string nonce = info.GetProperty("nonce").GetString()!;
        Assert.True(info.GetProperty("auth_required").GetBoolean());
        await c.SendLineAsync("CONNECT " + Connect(User.GetPublicKey(), Sign(User, nonce)));
        await c.SendLineAsync("SUB nk 1");
        Assert.Empty(await c.PingAsync());
        // A global-account client does not reach it.
        await using var g = await Connected(s, """{"verbose":false,"pedantic":false,"user":"g","pass":"g"}""");
        await g.SendAsync("PUB nk 1\r\nx\r\n");
        await g.PingAsync();
        await c.SendAsync("PUB nk 1\r\ny\r\n");
        Assert.Equal("y", (await c.ExpectMessageAsync()).PayloadText);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Wrong_signature_unknown_key_and_missing_signature_are_refused(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        foreach (var (key, signer) in new[] { (User, Other), (Other, Other), (User, (KeyPair?)null) })
        {
            await using var c = await RawClient.ConnectAsync(s);
            var info = await c.ReadInfoAsync();
            string nonce = info.GetProperty("nonce").GetString()!;
            string sig = signer is null ? "" : Sign(signer, nonce);
            await c.SendLineAsync("CONNECT " + Connect(key!.GetPublicKey(), sig));
            await c.ExpectErrAsync("Authorization Violation");
            await c.ExpectClosedAsync();
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_signature_of_another_nonce_is_refused(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var c = await RawClient.ConnectAsync(s);
        var info = await c.ReadInfoAsync();
        string nonce = info.GetProperty("nonce").GetString()!;
        await c.SendLineAsync("CONNECT " + Connect(User.GetPublicKey(), Sign(User, nonce + "x")));
        await c.ExpectErrAsync("Authorization Violation");
    }

    [Fact]
    public void Config_rejects_a_key_that_is_not_a_user_key()
    {
        var opts = new NatsBroker.Configuration.ServerOptions();
        var account = KeyPair.CreatePair(PrefixByte.Account).GetPublicKey();
        var ex = Assert.Throws<NatsBroker.Configuration.ConfigException>(() =>
            NatsBroker.Configuration.ConfigLoader.Apply(NatsBroker.Configuration.ConfigParser.Parse($"authorization {{ users: [{{nkey: {account}}}] }}", "t.conf"), opts));
        Assert.Contains("Not a valid public nkey for a user", ex.Message, StringComparison.Ordinal);
    }
}
