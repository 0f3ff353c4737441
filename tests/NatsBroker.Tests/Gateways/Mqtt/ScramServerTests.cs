using System.Text;
using NatsBroker.MqttGateway;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>The gateway's SCRAM-SHA-256 server side (ScramSha256Exchange) against the test's RFC-checked client, in process.</summary>
public sealed class ScramServerTests
{
    private static ScramCredentials Credentials()
    {
        var options = new MqttOptions();
        options.Users["bob"] = "pw";
        options.Users["carol"] = Clients.NatsJs.BcryptHash;
        return new ScramCredentials(options);
    }

    private static EnhancedAuthContext Context => new("c1", "127.0.0.1:1", null, false);

    [Fact]
    public async Task A_full_exchange_succeeds_as_the_user_and_the_server_signature_verifies()
    {
        var server = new ScramSha256Exchange(Credentials(), Context);
        var client = new ScramClient("bob", "pw");
        var first = await server.StepAsync(client.First(), default);
        Assert.Equal(EnhancedAuthOutcome.Continue, first.Outcome);
        Assert.EndsWith(",i=4096", Encoding.UTF8.GetString(first.Data!), StringComparison.Ordinal);
        var final = await server.StepAsync(client.Final(first.Data!), default);
        Assert.Equal(EnhancedAuthOutcome.Success, final.Outcome);
        Assert.Equal(new EnhancedAuthIdentity("bob", "pw", null), final.Identity);
        Assert.True(client.VerifyServerFinal(final.Data));
    }

    [Fact]
    public async Task A_wrong_proof_a_changed_nonce_and_a_bcrypt_user_are_refused()
    {
        var credentials = Credentials();
        var wrong = new ScramSha256Exchange(credentials, Context);
        var client = new ScramClient("bob", "nope");
        var first = await wrong.StepAsync(client.First(), default);
        Assert.Equal(new EnhancedAuthStep(EnhancedAuthOutcome.Fail, null, 0x87, null), await wrong.StepAsync(client.Final(first.Data!), default));

        var changed = new ScramSha256Exchange(credentials, Context);
        client = new ScramClient("bob", "pw");
        first = await changed.StepAsync(client.First(), default);
        var final = Encoding.UTF8.GetString(client.Final(first.Data!));
        int r = final.IndexOf(",r=", StringComparison.Ordinal) + 3;
        var tampered = final[..r] + "X" + final[(r + 1)..];
        Assert.Equal(EnhancedAuthOutcome.Fail, (await changed.StepAsync(Encoding.UTF8.GetBytes(tampered), default)).Outcome);

        var hashed = new ScramSha256Exchange(credentials, Context);
        Assert.Equal(0x8C, (await hashed.StepAsync(new ScramClient("carol", "x").First(), default)).Reason);
        var bound = new ScramSha256Exchange(credentials, Context);
        Assert.Equal(EnhancedAuthOutcome.Fail, (await bound.StepAsync("p=tls-unique,,n=bob,r=abc"u8.ToArray(), default)).Outcome);
    }

    [Fact]
    public async Task An_unknown_user_gets_a_stable_salt_and_fails_only_at_the_proof()
    {
        var credentials = Credentials();
        string Salt(EnhancedAuthStep s) => Encoding.UTF8.GetString(s.Data!).Split(',')[1];
        var a = await new ScramSha256Exchange(credentials, Context).StepAsync(new ScramClient("nobody", "x").First(), default);
        var server = new ScramSha256Exchange(credentials, Context);
        var client = new ScramClient("nobody", "x");
        var b = await server.StepAsync(client.First(), default);
        Assert.Equal(EnhancedAuthOutcome.Continue, b.Outcome);
        Assert.Equal(Salt(a), Salt(b));
        Assert.Equal(EnhancedAuthOutcome.Fail, (await server.StepAsync(client.Final(b.Data!), default)).Outcome);
    }
}
