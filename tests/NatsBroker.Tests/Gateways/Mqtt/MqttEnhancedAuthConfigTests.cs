using NatsBroker.Configuration;
using NatsBroker.MqttGateway;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary><c>mqtt { enhanced_authentication {} }</c> and the users SCRAM-SHA-256 reads from the rest of the config.</summary>
public sealed class MqttEnhancedAuthConfigTests
{
    [Fact]
    public void The_block_and_the_configured_users_are_read()
    {
        var o = MqttConfig.Load(ConfigParser.Parse("""
            mqtt {
              port: -1
              enhanced_auth { methods: ["X-A", "X-B"], subject: "auth.mqtt", timeout: "750ms", user: svc, password: p, scram_iterations: 8192 }
            }
            authorization { users: [ { user: alice, password: secret }, { user: num, password: 1234 }, { nkey: "UABC" } ] }
            accounts { A: { users: [ { user: bob, pass: "$2a$10$yfkaAhzbz0xG9JHWW9/vyenrwr7KlnlnE9UWIu5toamTZ07fV.x22" } ] }, B: {} }
            """));
        var a = o.EnhancedAuth;
        Assert.Equal(["X-A", "X-B"], a.Methods);
        Assert.Equal("auth.mqtt", a.Subject);
        Assert.Equal(TimeSpan.FromMilliseconds(750), a.Timeout);
        Assert.Equal(("svc", "p"), (a.User, a.Password));
        Assert.True(a.Scram);
        Assert.Equal(8192, a.ScramIterations);
        Assert.Equal(new Dictionary<string, string> { ["alice"] = "secret", ["num"] = "1234", ["bob"] = "$2a$10$yfkaAhzbz0xG9JHWW9/vyenrwr7KlnlnE9UWIu5toamTZ07fV.x22" },
            o.Users);
        Assert.Equal(ScramCredentials.Lookup.Hashed, new ScramCredentials(o).Find("bob", out _));
        Assert.Equal(ScramCredentials.Lookup.Found, new ScramCredentials(o).Find("alice", out var keys));
        Assert.Equal(8192, keys!.Iterations);
    }

    [Fact]
    public void The_blocks_own_user_is_the_only_scram_user_and_a_token_leaves_none()
    {
        var o = MqttConfig.Load(ConfigParser.Parse("""
            mqtt { authorization { user: m, password: mp } }
            authorization { users: [ { user: alice, password: secret } ] }
            """));
        var scram = new ScramCredentials(o);
        Assert.Equal(ScramCredentials.Lookup.Found, scram.Find("m", out _));
        Assert.Equal(ScramCredentials.Lookup.Unknown, scram.Find("alice", out _));
        var token = MqttConfig.Load(ConfigParser.Parse("mqtt { authorization { token: t } }\nauthorization { user: alice, password: secret }"));
        Assert.Equal(ScramCredentials.Lookup.Unknown, new ScramCredentials(token).Find("alice", out _));
    }

    [Fact]
    public void Mistakes_are_errors()
    {
        var e = Assert.Throws<ConfigException>(() => MqttConfig.Load(ConfigParser.Parse("""
            mqtt { enhanced_authentication { methods: ["X", "SCRAM-SHA-256"], timeout: "-1s", scram_iterations: 10, bogus: 1 } }
            """)));
        Assert.Contains("\"methods\" need a \"subject\"", e.Message, StringComparison.Ordinal);
        Assert.Contains("SCRAM-SHA-256 is built in", e.Message, StringComparison.Ordinal);
        Assert.Contains("invalid value for \"timeout\"", e.Message, StringComparison.Ordinal);
        Assert.Contains("invalid value for \"scram_iterations\"", e.Message, StringComparison.Ordinal);
        Assert.Contains("unknown field \"bogus\" in mqtt enhanced_authentication", e.Message, StringComparison.Ordinal);
        // With the built-in off, the hook may take SCRAM-SHA-256.
        var o = MqttConfig.Load(ConfigParser.Parse("mqtt { enhanced_auth { scram_sha_256: false, methods: \"SCRAM-SHA-256\", subject: s } }"));
        Assert.False(o.EnhancedAuth.Scram);
        Assert.Equal(["SCRAM-SHA-256"], o.EnhancedAuth.Methods);
    }
}
