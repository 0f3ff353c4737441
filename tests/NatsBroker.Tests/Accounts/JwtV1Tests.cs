using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// v1 JWTs (header alg "ed25519", signature over the payload part, type at the top level) in operator mode: nats-server
/// 2.x migrates them (nats-io/jwt v2 decoder.go), and nats.node's own auth tests ("auth - jwt", "creds", "custom")
/// configure the server with such tokens. Both servers must accept them, and refuse one whose signature covers the
/// header too (a v2 signature on a v1 claim).
/// </summary>
public sealed class JwtV1Tests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair A = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair ASigner = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Alice = KeyPair.CreatePair(PrefixByte.User);

    private static readonly string Config = $$"""
        operator: {{JwtFactory.EncodeV1(Op, Op.GetPublicKey(), "operator")}}
        resolver: MEMORY
        resolver_preload: {
          {{A.GetPublicKey()}}: {{JwtFactory.EncodeV1(Op, A.GetPublicKey(), "account", new JsonObject
          {
              ["limits"] = new JsonObject { ["subs"] = -1, ["conn"] = -1, ["imports"] = -1, ["exports"] = -1, ["data"] = -1, ["payload"] = -1, ["wildcards"] = true },
              ["signing_keys"] = new JsonArray(ASigner.GetPublicKey()),
          })}}
        }
        """;

    private async Task<NatsConnection> ConnectAsync(ServerProcess s, string jwt, string dir, string name)
    {
        string creds = Path.Combine(dir, name + ".creds");
        await File.WriteAllTextAsync(creds, JwtFactory.Creds(jwt, Alice));
        var c = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { CredsFile = creds }, MaxReconnectRetry = 0 });
        await c.ConnectAsync();
        return c;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task V1_operator_account_and_user_tokens_are_accepted(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        string dir = Directory.CreateTempSubdirectory("v1creds").FullName;
        try
        {
            string direct = JwtFactory.EncodeV1(A, Alice.GetPublicKey(), "user", new JsonObject { ["pub"] = new JsonObject(), ["sub"] = new JsonObject() });
            string viaSigner = JwtFactory.EncodeV1(ASigner, Alice.GetPublicKey(), "user", new JsonObject(), issuerAccount: A.GetPublicKey());
            await using var one = await ConnectAsync(s, direct, dir, "direct");
            await using var two = await ConnectAsync(s, viaSigner, dir, "signer");
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
            // Both land in account A (the signing key's issuer_account): a message crosses between them.
            await using var sub = await one.SubscribeCoreAsync<string>("v1.greet", cancellationToken: cts.Token);
            await one.PingAsync(cts.Token);
            await two.PublishAsync("v1.greet", "hello", cancellationToken: cts.Token);
            var msg = await sub.Msgs.ReadAsync(cts.Token);
            Assert.Equal("hello", msg.Data);
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task V1_user_signed_over_header_and_payload_is_refused(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        string good = JwtFactory.EncodeV1(A, Alice.GetPublicKey(), "user");
        var parts = good.Split('.');
        var sig = new byte[64];
        A.Sign(System.Text.Encoding.ASCII.GetBytes(parts[0] + "." + parts[1]), sig);
        string wrong = parts[0] + "." + parts[1] + "." + JwtFactory.B64(sig);
        string dir = Directory.CreateTempSubdirectory("v1creds").FullName;
        try
        {
            var ex = await Assert.ThrowsAnyAsync<Exception>(async () => await (await ConnectAsync(s, wrong, dir, "wrong")).DisposeAsync());
            Output.WriteLine(ex.ToString());
            Assert.Contains("Authorization Violation", ex.ToString(), StringComparison.OrdinalIgnoreCase);
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }
}
