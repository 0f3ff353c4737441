using NatsBroker.Configuration;

namespace NatsBroker.Tests.Gateways;

/// <summary>The core's part of the protocol gateway keys: tls {} (served by the terminator), proxies (ADR-55), protocol_gateways (ours; old name gateways).</summary>
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

    private static (ServerOptions Options, IReadOnlyList<ConfigError> Warnings) LoadWithWarnings(string text)
    {
        var o = new ServerOptions();
        var warnings = ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), o);
        return (o, warnings);
    }

    [Fact]
    public void Protocol_gateways_is_the_key_and_gateways_its_alias_with_one_warning()
    {
        // The new key: same switches, no warning.
        var (o, warnings) = LoadWithWarnings("protocol_gateways { managed: external, seed_file: \"/etc/x.nk\" }");
        Assert.True(o.GatewaysManagedExternally);
        Assert.Empty(warnings);
        Assert.False(LoadWithWarnings("protocol_gateways { managed: supervised }").Options.GatewaysManagedExternally);
        Assert.Contains("expected \"supervised\" or \"external\"", Fail("protocol_gateways { managed: sometimes }"), StringComparison.Ordinal);
        Assert.Contains("unknown field \"x\"", Fail("protocol_gateways { x: 1 }"), StringComparison.Ordinal);

        // The old key: the same behaviour, and exactly one warning, at the key, naming the new one.
        (o, warnings) = LoadWithWarnings("port: 1\ngateways { managed: external }");
        Assert.True(o.GatewaysManagedExternally);
        var warning = Assert.Single(warnings);
        Assert.StartsWith("t.conf:2:1: ", warning.ToString(), StringComparison.Ordinal);
        Assert.Contains("protocol_gateways", warning.ToString(), StringComparison.Ordinal);

        // nats-server's own gateway {} (super-cluster gateways) is not an alias of either: still refused.
        Assert.Throws<ConfigException>(() => Load("gateway { name: A, port: 7222 }"));
    }

    [Fact]
    public void A_gateway_process_finds_its_seed_under_either_key()
    {
        // The environment wins over the file (a supervised gateway's key); with it set this test could not see the file.
        Assert.Null(Environment.GetEnvironmentVariable(NatsBroker.Gateways.Link.GatewayEnvironment.SeedVariable));
        var seedFile = Path.GetTempFileName();
        try
        {
            using var kp = NATS.NKeys.KeyPair.CreatePair(NATS.NKeys.PrefixByte.User);
            File.WriteAllText(seedFile, kp.GetSeed());
            foreach (var key in new[] { "protocol_gateways", "gateways" })
            {
                var tree = ConfigParser.Parse($$"""
                    unix_socket: "/tmp/x.sock"
                    {{key}} { seed_file: "{{seedFile}}" }
                    """, "t.conf");
                var env = NatsBroker.Gateways.Link.GatewayEnvironment.Resolve(tree);
                Assert.Equal(kp.GetSeed(), env.Seed);
            }
            // Neither key: the error names the new one.
            var none = Assert.Throws<ConfigException>(() => NatsBroker.Gateways.Link.GatewayEnvironment.Resolve(ConfigParser.Parse("unix_socket: \"/tmp/x.sock\"", "t.conf")));
            Assert.Contains("protocol_gateways { seed_file", none.Message, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(seedFile);
        }
    }
}
