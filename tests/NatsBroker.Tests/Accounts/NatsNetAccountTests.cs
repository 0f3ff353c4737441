using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>The NATS.Net client (NATS.Client.Core 3.3.2) with nkey users and a cross-account service import.</summary>
public sealed class NatsNetAccountTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair Service = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Client = KeyPair.CreatePair(PrefixByte.User);

    private static string Config => $$"""
        accounts {
          SVC: { users: [{nkey: {{Service.GetPublicKey()}}}], exports: [{service: "echo"}] }
          APP: { users: [{nkey: {{Client.GetPublicKey()}}}], imports: [{service: {account: SVC, subject: "echo"}, to: "app.echo"}] }
        }
        """;

    private static NatsConnection Open(ServerProcess s, KeyPair kp) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { NKey = kp.GetPublicKey(), Seed = kp.GetSeed() },
    });

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Nkey_clients_request_across_accounts(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var service = Open(s, Service);
        await using var client = Open(s, Client);
        await service.ConnectAsync();
        await client.ConnectAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var sub = await service.SubscribeCoreAsync<string>("echo", cancellationToken: cts.Token);
        var serving = Task.Run(async () =>
        {
            await foreach (var m in sub.Msgs.ReadAllAsync(cts.Token))
            {
                await m.ReplyAsync("echo:" + m.Data, cancellationToken: cts.Token);
                return;
            }
        }, cts.Token);
        await service.PingAsync(cts.Token);
        var reply = await client.RequestAsync<string, string>("app.echo", "hi", cancellationToken: cts.Token);
        Assert.Equal("echo:hi", reply.Data);
        await serving;
        await sub.DisposeAsync();
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_wrong_seed_for_the_key_is_refused(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        var impostor = KeyPair.CreatePair(PrefixByte.User);
        await using var c = new NatsConnection(new NatsOpts
        {
            Url = s.Url,
            AuthOpts = new NatsAuthOpts { NKey = Client.GetPublicKey(), Seed = impostor.GetSeed() },
            MaxReconnectRetry = 0,
        });
        await Assert.ThrowsAnyAsync<NatsException>(async () => await c.ConnectAsync());
    }

    /// <summary>
    /// A request through a service import nobody serves fails fast with no responders (nats-server 2.10's 503 across
    /// an import; 2.9.10 sends nothing and the request times out, so this runs against ours only).
    /// </summary>
    [SkippableFact]
    public async Task A_service_import_without_a_responder_answers_no_responders()
    {
        var s = await SharedAsync(ServerKind.Ours, Config);
        await using var client = Open(s, Client);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        await Assert.ThrowsAsync<NatsNoRespondersException>(async () =>
            await client.RequestAsync<string, string>("app.echo", "hi", replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(20) }, cancellationToken: cts.Token));
    }
}
