using NATS.Client.Core;

namespace NatsBroker.Tests.Cluster;

/// <summary>Waiting for a subscription's interest to reach a publisher's node: "publish probes until received", never a sleep.</summary>
public static class Interest
{
    /// <summary>
    /// Publishes probes on <paramref name="subject"/> from <paramref name="publisher"/> until every recorder got one.
    /// A recorder that subscribed to several subjects on one connection vouches for all of them once its last
    /// subscription's probe arrives: a connection's SUBs reach each peer as RS+ in order on one route connection.
    /// </summary>
    public static async Task WaitAsync(NatsConnection publisher, string subject, params Recorder[] recorders)
    {
        var pending = recorders.ToList();
        var sent = new List<string>();
        var deadline = DateTime.UtcNow + ClusterClients.Wait;
        while (pending.Count > 0)
        {
            if (DateTime.UtcNow > deadline)
            {
                throw new TimeoutException($"interest of {string.Join(", ", pending.Select(r => $"{r.Name} ({r.Subject})"))} did not reach "
                    + $"the publisher {publisher.Opts.Name} ({publisher.Opts.Url}): {sent.Count} probe(s) on {subject} in {ClusterClients.Wait.TotalSeconds:0} s");
            }

            var id = Guid.NewGuid().ToString("N");
            sent.Add(id);
            await publisher.PublishAsync<byte[]>(subject, [], headers: new NatsHeaders { [Recorder.ProbeHeader] = id });
            foreach (var r in pending.ToList())
            {
                if (await r.SawProbeAsync(sent, TimeSpan.FromMilliseconds(50)))
                {
                    pending.Remove(r);
                }
            }
        }
    }
}
