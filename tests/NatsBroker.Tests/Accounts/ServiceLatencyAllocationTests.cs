using System.Buffers;
using System.Text;
using NatsBroker.Accounts;
using NatsBroker.Configuration;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Tests.Accounts;

/// <summary>Latency tracking costs nothing for requests it does not sample: no allocation beyond an untracked import's.</summary>
public sealed class ServiceLatencyAllocationTests
{
    /// <summary>Answers every request in the exporting account with an empty response (singleton: the mapping ends).</summary>
    private sealed class Responder(Router router) : ISubscriber
    {
        public int Requests;

        public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch)
        {
            Requests++;
            router.Publish(null, msg.Reply, default, -1, ReadOnlySequence<byte>.Empty, null, batch);
            return DeliveryOutcome.Delivered;
        }
    }

    private static long AllocatedBy(ServiceLatencyConfig? latency, string headers)
    {
        var registry = new AccountRegistry(() => new Router(new SubList(), ex => throw ex));
        registry.Apply(new ServerOptions
        {
            Accounts =
            [
                new AccountConfig { Name = "SVC", Exports = [new ExportConfig { Subject = "svc", IsService = true, Latency = latency }] },
                new AccountConfig { Name = "APP", Imports = [new ImportConfig { IsService = true, Account = "SVC", Subject = "svc" }] },
            ],
        });
        var svc = registry.Find("SVC")!;
        var app = registry.Find("APP")!;
        var responder = new Responder(svc.Router);
        svc.Router.Subscribe("svc", responder);
        var block = Encoding.ASCII.GetBytes("NATS/1.0\r\n" + headers + "\r\n");
        var payload = new ReadOnlySequence<byte>([.. block, .. "request"u8]);
        byte[] subject = "svc"u8.ToArray(), reply = "_INBOX.r"u8.ToArray();
        var batch = new DeliveryBatch();
        for (int i = 0; i < 2000; i++) app.Router.Publish(null, subject, reply, block.Length, payload, null, batch);
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 10_000; i++) app.Router.Publish(null, subject, reply, block.Length, payload, null, batch);
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        Assert.Equal(12_000, responder.Requests);
        Assert.Equal(0, svc.Responses.Count);
        return allocated;
    }

    [Fact]
    public void Unsampled_requests_allocate_no_more_than_without_tracking()
    {
        const string Unsampled = "Foo: bar\r\ntraceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00\r\nX-B3-Sampled: 0\r\n";
        long untracked = AllocatedBy(null, Unsampled);
        long tracked = AllocatedBy(new ServiceLatencyConfig(ServiceLatencyConfig.Headers, "latency.svc"), Unsampled);
        // Slack for ServiceResponses' once-a-second sweep (its dictionary enumerator), which fires in one run and not the
        // other when the machine is slow; one allocation per request would be 10000 times more than that.
        Assert.True(tracked <= untracked + 4096, $"tracked {tracked} B > untracked {untracked} B for 10000 requests");
        // The comparison can fail: a sampled request allocates its tracking and metric.
        long sampled = AllocatedBy(new ServiceLatencyConfig(100, "latency.svc"), Unsampled);
        Assert.True(sampled > untracked, $"sampled {sampled} B <= untracked {untracked} B");
    }
}
