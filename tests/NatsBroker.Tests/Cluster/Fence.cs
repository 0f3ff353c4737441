using NATS.Client.Core;

namespace NatsBroker.Tests.Cluster;

/// <summary>Fences: a marker published after a burst; the burst is complete at a recorder once its fence arrived.</summary>
public static class Fence
{
    /// <summary>Publishes a fence on <paramref name="subject"/>; returns its id for <see cref="Recorder.UntilFencesAsync"/>.</summary>
    public static async Task<string> SendAsync(NatsConnection publisher, string subject)
    {
        var id = Guid.NewGuid().ToString("N");
        await publisher.PublishAsync<byte[]>(subject, [], headers: new NatsHeaders { [Recorder.FenceHeader] = id });
        return id;
    }
}
