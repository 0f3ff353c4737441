using System.Globalization;
using NATS.Client.Core;

namespace NatsBroker.Client.Batch;

/// <summary>
/// Publishes one atomic batch (ADR-50, nats-server 2.12): every message carries Nats-Batch-Id and
/// Nats-Batch-Sequence; the stream stages them and stores all of them, or none, when the commit arrives. The first
/// message is a request (the server answers an error, e.g. "atomic publish is disabled", or an empty reply); the
/// others are plain publishes unless an acknowledgement is asked for. Not thread-safe: one batch, one publisher.
/// </summary>
public sealed class AtomicBatchPublisher
{
    public const string BatchIdHeader = "Nats-Batch-Id";
    public const string BatchSequenceHeader = "Nats-Batch-Sequence";
    public const string BatchCommitHeader = "Nats-Batch-Commit";

    private readonly INatsConnection _nats;
    private readonly TimeSpan _timeout;
    private ulong _seq;
    private string? _lastSubject;

    /// <param name="batchId">At most 64 characters; a new one (32 hex digits) when null.</param>
    public AtomicBatchPublisher(INatsConnection nats, string? batchId = null, TimeSpan? timeout = null)
    {
        _nats = nats;
        BatchId = batchId ?? Guid.NewGuid().ToString("N");
        _timeout = timeout ?? TimeSpan.FromSeconds(5);
    }

    public string BatchId { get; }
    /// <summary>Messages sent in this batch so far.</summary>
    public ulong Count => _seq;

    /// <summary>Adds a message. The first one (and any with <paramref name="ack"/>) waits for the server's answer.</summary>
    public async ValueTask AddAsync(string subject, ReadOnlyMemory<byte> data, NatsHeaders? headers = null, bool ack = false, CancellationToken cancellationToken = default)
    {
        var h = Headers(headers, null);
        _lastSubject = subject;
        if (_seq == 1 || ack)
        {
            var reply = await RequestAsync(subject, data, h, cancellationToken).ConfigureAwait(false);
            if (reply.Length > 0) BatchPubAck.Parse(reply); // an error PubAck throws; an empty reply means staged
            return;
        }
        await _nats.PublishAsync(subject, data, h, cancellationToken: cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Adds the last message and commits the batch; returns the PubAck of the whole batch.</summary>
    public async ValueTask<BatchPubAck> CommitAsync(string subject, ReadOnlyMemory<byte> data, NatsHeaders? headers = null, CancellationToken cancellationToken = default)
    {
        var h = Headers(headers, "1");
        var reply = await RequestAsync(subject, data, h, cancellationToken).ConfigureAwait(false);
        return BatchPubAck.Parse(reply);
    }

    /// <summary>
    /// Commits without storing another message (nats-server 2.14 "eob"): the server marks the last stored message
    /// with Nats-Batch-Commit: 1. <paramref name="subject"/> defaults to the last message's subject.
    /// </summary>
    public async ValueTask<BatchPubAck> CommitEndOfBatchAsync(string? subject = null, CancellationToken cancellationToken = default)
    {
        var h = Headers(null, "eob");
        var reply = await RequestAsync(subject ?? _lastSubject ?? throw new InvalidOperationException("no message was added to the batch"), ReadOnlyMemory<byte>.Empty, h, cancellationToken).ConfigureAwait(false);
        return BatchPubAck.Parse(reply);
    }

    private NatsHeaders Headers(NatsHeaders? user, string? commit)
    {
        _seq++;
        var h = new NatsHeaders();
        if (user is not null)
        {
            foreach (var kv in user) h[kv.Key] = kv.Value;
        }
        h[BatchIdHeader] = BatchId;
        h[BatchSequenceHeader] = _seq.ToString(CultureInfo.InvariantCulture);
        if (commit is not null) h[BatchCommitHeader] = commit;
        return h;
    }

    private async ValueTask<byte[]> RequestAsync(string subject, ReadOnlyMemory<byte> data, NatsHeaders headers, CancellationToken cancellationToken)
    {
        var msg = await _nats.RequestAsync<ReadOnlyMemory<byte>, byte[]>(subject, data, headers,
            replyOpts: new NatsSubOpts { Timeout = _timeout }, cancellationToken: cancellationToken).ConfigureAwait(false);
        return msg.Data ?? [];
    }
}
