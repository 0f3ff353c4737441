using System.Diagnostics;
using NatsBroker.Configuration;
using NatsBroker.Routing;

namespace NatsBroker.Accounts;

/// <summary>
/// One sampled request through a service import (nats-server's response service import with <c>tracking</c> set):
/// when it was forwarded to the exporter, who asked, and the trace headers that triggered it. The outcome is
/// reported once: the response (200), no reply subject (400), the requester's interest in the reply gone (408),
/// nobody serving (503) or the response threshold passing (504), as server/accounts.go sendTrackingLatency,
/// sendBadRequestTrackingLatency, sendReplyInterestLostTrackLatency and sendBackendErrorTrackingLatency compute them.
/// </summary>
internal sealed class LatencyTracking(ServiceLatencyReporter reporter, ServiceLatencyConfig config, Account exporter, IPublisher? requestor,
    bool share, SortedDictionary<string, List<string>>? header)
{
    // si.ts: when the request went to the exporter (a monotonic clock for the durations, the wall clock for "start").
    private readonly long _startTimestamp = Stopwatch.GetTimestamp();
    private readonly DateTime _startWall = DateTime.UtcNow;

    /// <summary>The response arrived from <paramref name="responder"/> (accounts.go sendTrackingLatency).</summary>
    public void Responded(IPublisher? responder, DeliveryBatch batch)
    {
        long now = Stopwatch.GetTimestamp();
        var serviceRtt = Stopwatch.GetElapsedTime(_startTimestamp, now);
        var reqRtt = ServiceLatencyReporter.Rtt(requestor);
        var respRtt = ServiceLatencyReporter.Rtt(responder);
        var service = serviceRtt - respRtt;
        var total = reqRtt + serviceRtt;
        var system = TimeSpan.Zero;
        if (respRtt > TimeSpan.Zero)
        {
            // nats-server's "system" latency is the time since the response was seen: what its own bookkeeping took.
            system = Stopwatch.GetElapsedTime(now);
            total += system;
        }
        // sanitizeLatencyMetric: the RTTs are estimates, so the differences may come out negative.
        if (service < TimeSpan.Zero) service = TimeSpan.Zero;
        if (system < TimeSpan.Zero) system = TimeSpan.Zero;
        Report(new ServiceLatencyReporter.Result(200, null, _startWall - reqRtt, service, system, total), responder, batch);
    }

    /// <summary>A sampled request without a reply subject (sendBadRequestTrackingLatency): measured from now.</summary>
    public void BadRequest(DeliveryBatch batch) =>
        Report(new ServiceLatencyReporter.Result(400, "Bad Request", DateTime.UtcNow - ServiceLatencyReporter.Rtt(requestor), default, default, default), null, batch);

    /// <summary>Nobody in the exporting account took the request (rsiNoDelivery).</summary>
    public void NoDelivery(DeliveryBatch batch) => BackendError(503, "Service Unavailable", batch);

    /// <summary>The requester stopped listening on the reply before the response came (sendReplyInterestLostTrackLatency).</summary>
    public void InterestLost() => BackendError(408, "Request Timeout", null);

    /// <summary>No response within the response threshold (rsiTimeout); from the sweep, outside any delivery batch.</summary>
    public void TimedOut() => BackendError(504, "Service Timeout", null);

    private void BackendError(int status, string description, DeliveryBatch? batch) =>
        Report(new ServiceLatencyReporter.Result(status, description, _startWall - ServiceLatencyReporter.Rtt(requestor), default, default, default), null, batch);

    private void Report(in ServiceLatencyReporter.Result result, IPublisher? responder, DeliveryBatch? batch) =>
        reporter.Publish(exporter, config.Subject, result, requestor, share, responder, header, batch);
}
