using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NATS.NKeys;
using NatsBroker.Tests.Accounts;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// Operator mode: an account JWT's JetStream limits (<c>limits.mem_storage / disk_storage / streams / consumer</c>)
/// enable JetStream for that account with those limits; an account JWT without them has none. Run against ours and
/// nats-server 2.9.10 with the same config and JWTs.
/// </summary>
public sealed class OperatorJetStreamTests(ITestOutputHelper output)
{
    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Sys = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Js = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Plain = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair JsUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair PlainUser = KeyPair.CreatePair(PrefixByte.User);

    private static string Config(string storeDir)
    {
        string op = JwtFactory.Operator(Op, Sys.GetPublicKey());
        string sys = JwtFactory.Account(Op, Sys, name: "SYS");
        string js = JwtFactory.Account(Op, Js, new JsonObject
        {
            ["limits"] = new JsonObject
            {
                ["subs"] = -1, ["data"] = -1, ["payload"] = -1, ["imports"] = -1, ["exports"] = -1, ["wildcards"] = true, ["conn"] = -1, ["leaf"] = -1,
                ["mem_storage"] = 0, ["disk_storage"] = 100_000, ["streams"] = 1, ["consumer"] = 2,
            },
        }, name: "JS");
        string plain = JwtFactory.Account(Op, Plain, name: "PLAIN");
        return $$"""
            operator: {{op}}
            system_account: {{Sys.GetPublicKey()}}
            jetstream { store_dir: "{{storeDir}}" }
            resolver: MEMORY
            resolver_preload: {
              {{Sys.GetPublicKey()}}: {{sys}}
              {{Js.GetPublicKey()}}: {{js}}
              {{Plain.GetPublicKey()}}: {{plain}}
            }
            """;
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Account_jwt_limits_enable_and_limit_JetStream(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var dir = Directory.CreateTempSubdirectory("natsbroker-opjs-").FullName;
        try
        {
            await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Config(Path.Combine(dir, "store")) }, output);
            string jsCreds = Path.Combine(dir, "js.creds");
            string plainCreds = Path.Combine(dir, "plain.creds");
            await File.WriteAllTextAsync(jsCreds, JwtFactory.Creds(JwtFactory.User(Js, JsUser), JsUser));
            await File.WriteAllTextAsync(plainCreds, JwtFactory.Creds(JwtFactory.User(Plain, PlainUser), PlainUser));
            await using var withJs = new NatsConnection(new NatsOpts { Url = server.Url, AuthOpts = new NatsAuthOpts { CredsFile = jsCreds } });
            await using var withoutJs = new NatsConnection(new NatsOpts { Url = server.Url, AuthOpts = new NatsAuthOpts { CredsFile = plainCreds } });

            var js = new NatsJSContext(withJs);
            var info = await js.GetAccountInfoAsync();
            Assert.Equal(0, info.Limits.MaxMemory);
            Assert.Equal(100_000, info.Limits.MaxStorage);
            Assert.Equal(1, info.Limits.MaxStreams);
            Assert.Equal(2, info.Limits.MaxConsumers);

            await js.CreateStreamAsync(new StreamConfig("S", ["s"]));
            (await js.PublishAsync("s", "x")).EnsureSuccess();
            var second = await Assert.ThrowsAsync<NatsJSApiException>(async () => await js.CreateStreamAsync(new StreamConfig("T", ["t"])));
            Assert.Equal(10027, second.Error.ErrCode);

            var none = await Assert.ThrowsAsync<NatsJSApiException>(async () => await new NatsJSContext(withoutJs).GetAccountInfoAsync());
            Assert.Equal(10039, none.Error.ErrCode);
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); }
            catch (IOException) { }
            catch (UnauthorizedAccessException) { }
        }
    }
}
