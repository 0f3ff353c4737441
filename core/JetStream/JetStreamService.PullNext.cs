namespace NatsBroker.JetStream;

// $JS.API.CONSUMER.MSG.NEXT.<stream>.<consumer> (nats-server consumer.go processNextMsgReq / processNextMsgRequest).
// nats-server serves these from each pull consumer's own subscription, never from the $JS.API.> import
// (client.go skips jsRequestNextPre there), so a subject naming no consumer — a missing stream or consumer, or the
// wrong number of tokens — gets the no-responders status. The checks that need only the config run here, in
// nats-server's order; those that need the consumer's state (pin, no_wait, max_waiting) run on its loop.
public sealed partial class JetStreamService
{
    private static readonly byte[] PushBasedStatus = NatsHeaders.Status(409, "Consumer is push based");

    /// <summary>MSG.NEXT with <paramref name="t"/> its subject's tokens (at least "$JS.API.CONSUMER.MSG.NEXT.x").</summary>
    private void PullNext(ApiRequest req, string[] t)
    {
        if (req.Reply.Length == 0) return;
        if (t.Length != 7 || !req.JetStream.TryGet(t[5], out var stream) || !stream.TryGetConsumer(t[6], out var c))
        {
            NoRespondersTo(req);
            return;
        }
        if (!c.IsPull)
        {
            Publish(req, req.Reply, PushBasedStatus, default);
            return;
        }
        if (ApiLevel.RequiresMore(req.Headers))
        {
            Publish(req, req.Reply, RequiredApiLevelStatus, default);
            return;
        }
        if (PullRequestBody.Parse(req.Body, out var f) is { } bad)
        {
            Publish(req, req.Reply, NatsHeaders.Status(400, "Bad Request - " + bad), default);
            return;
        }
        if (c.RefusePull(f) is { } refused)
        {
            Publish(req, req.Reply, refused, default);
            return;
        }
        var pr = JsConsumer.NewPull(req.Reply.ToArray(), f, Environment.TickCount64);
        if (!c.EnqueuePull(pr)) Publish(req, req.Reply, NatsHeaders.Status(409, "Exceeded MaxWaiting"), default);
    }

    /// <summary>nats-server 2.12+'s no-responders status names the request's subject (client.go processMsgResults).</summary>
    internal static byte[] NoRespondersStatus(ReadOnlySpan<byte> subject)
    {
        var head = "NATS/1.0 503\r\nNats-Subject: "u8;
        var b = new byte[head.Length + subject.Length + 4];
        head.CopyTo(b);
        subject.CopyTo(b.AsSpan(head.Length));
        "\r\n\r\n"u8.CopyTo(b.AsSpan(head.Length + subject.Length));
        return b;
    }
}
