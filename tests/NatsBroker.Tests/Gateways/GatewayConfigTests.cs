using NatsBroker.Configuration;

namespace NatsBroker.Tests.Gateways;

/// <summary>The core's part of the gateway keys: tls {} (served by the terminator), proxies (ADR-55), gateways (ours).</summary>
public sealed class GatewayConfigTests
{
    private static ServerOptions Load(string text)
    {
        var o = new ServerOptions();
        ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), o);
        return o;
    }

    private static string Fail(string text) =>
        Assert.Throws<ConfigException>(() => Load(text)).Message;

    [Fact]
    public void Tls_block_hands_the_client_port_to_the_terminator()
    {
        Assert.True(Load("tls { cert_file: a, key_file: b }").TlsConfigured);
        Assert.False(Load("port: 1").TlsConfigured);
        Assert.Equal("t.conf:1:1: invalid value for \"tls\": expected a map, got boolean true", Fail("tls: true"));
    }

    [Fact]
    public void Proxies_trusted_keys_are_checked_as_nkeys()
    {
        using var kp = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
        var o = Load($$"""proxies { trusted = [ { key: "{{kp.GetPublicKey()}}" } ] }""");
        Assert.Equal([kp.GetPublicKey()], o.TrustedProxies);
        Assert.Contains("invalid proxy key \"UNOTAKEY\"", Fail("proxies { trusted = [ { key: UNOTAKEY } ] }"), StringComparison.Ordinal);
        Assert.Contains("unknown field \"bogus\"", Fail("proxies { bogus: 1 }"), StringComparison.Ordinal);
        Assert.Contains("expected proxies' trusted entry to be a map/struct", Fail("proxies { trusted = [ x ] }"), StringComparison.Ordinal);
    }

    [Fact]
    public void Gateways_managed_switch()
    {
        Assert.True(Load("gateways { managed: external, seed_file: \"/etc/x.nk\" }").GatewaysManagedExternally);
        Assert.False(Load("gateways { managed: supervised }").GatewaysManagedExternally);
        Assert.Contains("expected \"supervised\" or \"external\"", Fail("gateways { managed: sometimes }"), StringComparison.Ordinal);
        Assert.Contains("unknown field \"x\"", Fail("gateways { x: 1 }"), StringComparison.Ordinal);
    }
}
