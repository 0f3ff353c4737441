using System.Text;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NATS.Client.JetStream.Models;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>
/// JetStream used from another account through imports, as nats-server's documentation sets it up: account A has
/// the stream and exports <c>$JS.API.&gt;</c>, <c>$JS.ACK.&gt;</c>, the stream's subjects and a push deliver subject;
/// account B imports them (the API under the prefix <c>JS.A.API</c>) and uses A's stream with a NATS.Net JetStream
/// context on that prefix, and sources and mirrors it into its own streams (<c>external.api</c>). The same script
/// runs against nats-server 2.9.10, so every assertion is one nats-server passes too.
/// </summary>
public sealed class CrossAccountJetStreamTests(ITestOutputHelper output)
{
    private static string Config(string storeDir) => $$$"""
        jetstream { store_dir: "{{{storeDir}}}" }
        accounts {
          A: {
            jetstream: enabled
            users: [{user: a, password: a}]
            exports: [
              {service: "$JS.API.>", response: stream}
              {service: "$JS.ACK.>"}
              {service: "$JS.FC.>"}
              {service: "orders.>"}
              {stream: "deliver.>"}
            ]
          }
          B: {
            jetstream: enabled
            users: [{user: b, password: b}]
            imports: [
              {service: {account: A, subject: "$JS.API.>"}, to: "JS.A.API.>"}
              {service: {account: A, subject: "$JS.ACK.>"}}
              {service: {account: A, subject: "$JS.FC.>"}}
              {service: {account: A, subject: "orders.>"}}
              {stream: {account: A, subject: "deliver.>"}}
            ]
          }
        }
        """;

    private static NatsConnection Connect(ServerProcess s, string user) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Username = user, Password = user },
        RequestTimeout = TimeSpan.FromSeconds(5),
    });

    private static CancellationToken Timeout() => new CancellationTokenSource(TimeSpan.FromSeconds(20)).Token;

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public Task An_importing_account_publishes_fetches_acks_and_gets_push_deliveries_from_the_exporters_stream(ServerKind kind) => WithServerAsync(kind, async server =>
    {
        await using var a = Connect(server, "a");
        await using var b = Connect(server, "b");
        await new NatsJSContext(a).CreateStreamAsync(new StreamConfig("ORDERS", ["orders.>"]), Timeout());

        // B reaches A's JetStream only through the imported API prefix.
        var jsB = new NatsJSContext(b, new NatsJSOpts(b.Opts, apiPrefix: "JS.A.API"));
        for (int i = 1; i <= 2; i++)
        {
            var ack = await jsB.PublishAsync($"orders.{i}", $"m{i}", cancellationToken: Timeout());
            ack.EnsureSuccess();
            Assert.Equal("ORDERS", ack.Stream);
            Assert.Equal((ulong)i, ack.Seq);
        }

        // Pull: MSG.NEXT goes through the API import; the messages come back through its stream response with
        // their own subjects and $JS.ACK replies, and B's acks reach A through the $JS.ACK import.
        var consumer = await jsB.CreateOrUpdateConsumerAsync("ORDERS", new ConsumerConfig("pc") { AckPolicy = ConsumerConfigAckPolicy.Explicit }, Timeout());
        var got = new List<string>();
        await foreach (var m in consumer.FetchAsync<string>(new NatsJSFetchOpts { MaxMsgs = 2, Expires = TimeSpan.FromSeconds(5) }, cancellationToken: Timeout()))
        {
            got.Add($"{m.Subject}={m.Data}");
            Assert.StartsWith("$JS.ACK.ORDERS.pc.", m.ReplyTo);
            await m.AckAsync(cancellationToken: Timeout());
        }
        Assert.Equal(["orders.1=m1", "orders.2=m2"], got);
        // Acks are fire-and-forget: wait for them to be processed.
        var ackDeadline = DateTime.UtcNow + TimeSpan.FromSeconds(10);
        do
        {
            await consumer.RefreshAsync(Timeout());
            if (consumer.Info.AckFloor.StreamSeq == 2) break;
            await Task.Delay(50);
        }
        while (DateTime.UtcNow < ackDeadline);
        Assert.Equal(2ul, consumer.Info.AckFloor.StreamSeq);
        Assert.Equal(0, consumer.Info.NumAckPending);

        // Push: A's consumer delivers to deliver.orders in A; the stream import hands it to B's subscriber.
        await using var sub = await b.SubscribeCoreAsync<string>("deliver.orders", cancellationToken: Timeout());
        await b.PingAsync(Timeout());
        await jsB.CreateOrUpdateConsumerAsync("ORDERS", new ConsumerConfig("push") { DeliverSubject = "deliver.orders", AckPolicy = ConsumerConfigAckPolicy.None }, Timeout());
        var pushed = new List<string>();
        await foreach (var m in sub.Msgs.ReadAllAsync(Timeout()))
        {
            pushed.Add($"{m.Subject}={m.Data}");
            Assert.StartsWith("$JS.ACK.ORDERS.push.", m.ReplyTo);
            if (pushed.Count == 2) break;
        }
        Assert.Equal(["orders.1=m1", "orders.2=m2"], pushed);
    });

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public Task A_stream_sources_and_mirrors_another_accounts_stream_through_its_imported_api(ServerKind kind) => WithServerAsync(kind, async server =>
    {
        await using var a = Connect(server, "a");
        await using var b = Connect(server, "b");
        var jsA = new NatsJSContext(a);
        await jsA.CreateStreamAsync(new StreamConfig("ORDERS", ["orders.>"]), Timeout());
        for (int i = 1; i <= 2; i++) (await jsA.PublishAsync($"orders.{i}", $"m{i}", cancellationToken: Timeout())).EnsureSuccess();

        var jsB = new NatsJSContext(b);
        var copy = await jsB.CreateStreamAsync(new StreamConfig("COPY", ["copy.>"])
        {
            Sources = [new StreamSource { Name = "ORDERS", External = new ExternalStreamSource { Api = "JS.A.API", Deliver = "deliver.src" } }],
        }, Timeout());
        Assert.Equal("JS.A.API", copy.Info.Config.Sources!.Single().External!.Api);
        await jsB.CreateStreamAsync(new StreamConfig { Name = "MIR", Mirror = new StreamSource { Name = "ORDERS", External = new ExternalStreamSource { Api = "JS.A.API", Deliver = "deliver.mir" } } }, Timeout());
        await WaitForMessagesAsync(jsB, "COPY", 2);
        await WaitForMessagesAsync(jsB, "MIR", 2);

        // Later publishes keep flowing.
        (await jsA.PublishAsync("orders.3", "m3", cancellationToken: Timeout())).EnsureSuccess();
        await WaitForMessagesAsync(jsB, "COPY", 3);
        await WaitForMessagesAsync(jsB, "MIR", 3);

        // The copy's source header names the origin qualified by the API prefix's hash, as nats-server's
        // composeIName does ("ORDERS:" + getHash("JS.A.API")), then the origin sequence.
        var got = await AccountJetStreamTests.RequestAsync(b, "$JS.API.STREAM.MSG.GET.COPY", """{"seq":1}""");
        var headers = Encoding.UTF8.GetString(Convert.FromBase64String(got.GetProperty("message").GetProperty("hdrs").GetString()!));
        output.WriteLine(headers);
        Assert.Contains("Nats-Stream-Source: ORDERS:3V17LQ3b 1", headers);
        var mirrored = await AccountJetStreamTests.RequestAsync(b, "$JS.API.STREAM.MSG.GET.MIR", """{"seq":3}""");
        Assert.Equal("orders.3", mirrored.GetProperty("message").GetProperty("subject").GetString());
    });

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public Task External_prefixes_are_checked_as_nats_server_checks_them(ServerKind kind) => WithServerAsync(kind, async server =>
    {
        await using var b = Connect(server, "b");
        var wildcardDeliver = await AccountJetStreamTests.RequestAsync(b, "$JS.API.STREAM.CREATE.BAD1",
            """{"name":"BAD1","subjects":["bad1"],"sources":[{"name":"ORDERS","external":{"api":"JS.A.API","deliver":"dl.*"}}]}""");
        Assert.Equal(10024, wildcardDeliver.GetProperty("error").GetProperty("err_code").GetInt32());
        Assert.Equal("stream external delivery prefix dl.* must not contain wildcards", wildcardDeliver.GetProperty("error").GetProperty("description").GetString());

        var wildcardApi = await AccountJetStreamTests.RequestAsync(b, "$JS.API.STREAM.CREATE.BAD2",
            """{"name":"BAD2","subjects":["bad2"],"sources":[{"name":"ORDERS","external":{"api":"JS.*.API"}}]}""");
        Assert.Equal(10052, wildcardApi.GetProperty("error").GetProperty("err_code").GetInt32());
    });

    private static async Task WaitForMessagesAsync(NatsJSContext js, string stream, long count)
    {
        var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(15);
        long last = 0;
        while (DateTime.UtcNow < deadline)
        {
            var s = await js.GetStreamAsync(stream, cancellationToken: Timeout());
            last = s.Info.State.Messages;
            if (last >= count) return;
            await Task.Delay(100);
        }
        Assert.Fail($"{stream} holds {last} messages after 15 s, expected {count}");
    }

    /// <summary>Runs <paramref name="body"/> against a fresh server of <paramref name="kind"/> with its own store directory.</summary>
    private async Task WithServerAsync(ServerKind kind, Func<ServerProcess, Task> body)
    {
        Prerequisites.RequireServer(kind, output);
        var dir = NewStoreDir();
        try
        {
            await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Config(dir) }, output);
            await body(server);
        }
        finally
        {
            DeleteStoreDir(dir);
        }
    }

    private static string NewStoreDir() => Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));

    private static void DeleteStoreDir(string dir)
    {
        try { Directory.Delete(dir, recursive: true); }
        catch (DirectoryNotFoundException) { }
        catch (IOException) { }
    }
}
