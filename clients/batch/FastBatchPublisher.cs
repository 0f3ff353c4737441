using System.Globalization;
using System.Text.Json;
using NATS.Client.Core;

namespace NatsBroker.Client.Batch;

/// <summary>What a fast-ingest publisher does when the server reports lost messages (ADR-50 gap modes).</summary>
public enum FastBatchGapMode
{
    /// <summary>Any gap ends the batch: what is stored is gap-free and in order.</summary>
    Fail,
    /// <summary>Gaps are reported and the batch goes on.</summary>
    Ok,
}

public sealed record FastBatchOptions
{
    /// <summary>The most messages per flow acknowledgement the client allows (the server may ask for fewer).</summary>
    public ushort MaxFlow { get; init; } = 100;
    public FastBatchGapMode GapMode { get; init; } = FastBatchGapMode.Fail;
    /// <summary>How many flow acknowledgements may be outstanding before the publisher waits (ADR-50 advises 2).</summary>
    public int MaxOutstandingAcks { get; init; } = 2;
    /// <summary>How long to wait for an acknowledgement before failing.</summary>
    public TimeSpan Timeout { get; init; } = TimeSpan.FromSeconds(5);
}

/// <summary>A message lost in a fast-ingest batch: sequences from <see cref="ExpectedSequence"/> up to (not including) <see cref="CurrentSequence"/>.</summary>
public sealed record FastBatchGap(ulong ExpectedSequence, ulong CurrentSequence);

/// <summary>A fast-ingest message the stream refused (for example a failed Nats-Expected-* check).</summary>
public sealed record FastBatchError(ulong Sequence, BatchApiError Error);

/// <summary>Where a fast-ingest batch stands after a message was added.</summary>
public readonly record struct FastPubAck(ulong BatchSequence, ulong AckSequence);

/// <summary>
/// Publishes one fast-ingest batch (ADR-50, nats-server 2.14): the batch state travels in each message's reply
/// subject, <c>&lt;inbox&gt;.&lt;id&gt;.&lt;flow&gt;.&lt;gap&gt;.&lt;seq&gt;.&lt;op&gt;.$FI</c>, and the server answers on that
/// inbox with flow acknowledgements ({"type":"ack","seq":N,"msgs":F}: every F messages), gap and error reports and
/// the final PubAck. The publisher waits only when <see cref="FastBatchOptions.MaxOutstandingAcks"/> acknowledgements
/// are outstanding, and follows the flow the server asks for. Not thread-safe: one batch, one publisher.
/// </summary>
public sealed class FastBatchPublisher : IAsyncDisposable
{
    private readonly INatsConnection _nats;
    private readonly FastBatchOptions _opts;
    private readonly string _prefix;
    private readonly string _gap;
    private readonly SemaphoreSlim _signal = new(0);
    private readonly Lock _lock = new();
    private readonly List<FastBatchGap> _gaps = [];
    private readonly List<FastBatchError> _errors = [];
    private INatsSub<byte[]>? _sub;
    private Task? _reader;
    private ulong _seq;
    private ulong _ackSeq;
    private ushort _flow;
    private bool _started;
    private byte[]? _final;
    private bool _firstAnswered;
    private string? _lastSubject;

    public FastBatchPublisher(INatsConnection nats, FastBatchOptions? options = null, string? batchId = null)
    {
        _nats = nats;
        _opts = options ?? new FastBatchOptions();
        BatchId = batchId ?? Guid.NewGuid().ToString("N");
        // An "old style" inbox of its own (ADR-50): NATS.Net routes subscriptions under its connection inbox prefix
        // to the request multiplexer, which matches exact subjects only and would drop the $FI replies.
        _prefix = "_INBOX." + Guid.NewGuid().ToString("N");
        _gap = _opts.GapMode == FastBatchGapMode.Ok ? "ok" : "fail";
        _flow = _opts.MaxFlow;
    }

    public string BatchId { get; }
    /// <summary>The flow the server currently asks for (an acknowledgement every this many messages).</summary>
    public ushort Flow { get { lock (_lock) return _flow; } }
    public IReadOnlyList<FastBatchGap> Gaps { get { lock (_lock) return [.. _gaps]; } }
    public IReadOnlyList<FastBatchError> Errors { get { lock (_lock) return [.. _errors]; } }

    private string Reply(ulong seq, int op) =>
        string.Create(CultureInfo.InvariantCulture, $"{_prefix}.{BatchId}.{_opts.MaxFlow}.{_gap}.{seq}.{op}.$FI");

    private async ValueTask StartAsync(CancellationToken ct)
    {
        _sub = await _nats.SubscribeCoreAsync<byte[]>($"{_prefix}.{BatchId}.>", cancellationToken: ct).ConfigureAwait(false);
        _reader = Task.Run(ReadLoopAsync, CancellationToken.None);
        _started = true;
    }

    private async Task ReadLoopAsync()
    {
        await foreach (var msg in _sub!.Msgs.ReadAllAsync().ConfigureAwait(false))
        {
            OnReply(msg.Data ?? []);
            _signal.Release();
        }
    }

    private void OnReply(byte[] data)
    {
        lock (_lock)
        {
            if (data.Length == 0) return;
            using var doc = JsonDocument.Parse(data);
            var root = doc.RootElement;
            string? type = root.TryGetProperty("type", out var t) ? t.GetString() : null;
            switch (type)
            {
                case "ack":
                    ulong seq = root.GetProperty("seq").GetUInt64();
                    if (seq >= _ackSeq) _ackSeq = seq;
                    _flow = root.GetProperty("msgs").GetUInt16();
                    _firstAnswered = true;
                    break;
                case "gap":
                    _gaps.Add(new FastBatchGap(root.GetProperty("last_seq").GetUInt64(), root.GetProperty("seq").GetUInt64()));
                    break;
                case "err":
                    _errors.Add(new FastBatchError(root.GetProperty("seq").GetUInt64(), BatchPubAck.ParseError(root.GetProperty("error"))));
                    break;
                default:
                    _final = data; // the PubAck (or an error PubAck) that ends the batch
                    _firstAnswered = true;
                    break;
            }
        }
    }

    /// <summary>Adds a message; waits only when the flow-control window is full (or for the server's first answer).</summary>
    public async ValueTask<FastPubAck> AddAsync(string subject, ReadOnlyMemory<byte> data, NatsHeaders? headers = null, CancellationToken cancellationToken = default)
    {
        if (!_started) await StartAsync(cancellationToken).ConfigureAwait(false);
        ThrowIfEnded();
        ulong seq = ++_seq;
        _lastSubject = subject;
        await _nats.PublishAsync(subject, data, headers, Reply(seq, seq == 1 ? 0 : 1), cancellationToken: cancellationToken).ConfigureAwait(false);
        if (seq == 1) await WaitAsync(() => _firstAnswered, cancellationToken).ConfigureAwait(false);
        await WaitAsync(() => _final is not null || _ackSeq + (ulong)(_flow * _opts.MaxOutstandingAcks) > _seq, cancellationToken).ConfigureAwait(false);
        ThrowIfEnded();
        lock (_lock) return new FastPubAck(seq, _ackSeq);
    }

    /// <summary>Adds the last message and waits for the batch's PubAck.</summary>
    public async ValueTask<BatchPubAck> CommitAsync(string subject, ReadOnlyMemory<byte> data, NatsHeaders? headers = null, CancellationToken cancellationToken = default)
    {
        if (!_started) await StartAsync(cancellationToken).ConfigureAwait(false);
        ulong seq = ++_seq;
        await _nats.PublishAsync(subject, data, headers, Reply(seq, 2), cancellationToken: cancellationToken).ConfigureAwait(false);
        return await FinalAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Ends the batch without storing another message (operation 3, "commit-eob").</summary>
    public async ValueTask<BatchPubAck> CommitEndOfBatchAsync(string? subject = null, CancellationToken cancellationToken = default)
    {
        if (!_started) throw new InvalidOperationException("no message was added to the batch");
        ulong seq = ++_seq;
        await _nats.PublishAsync(subject ?? _lastSubject!, ReadOnlyMemory<byte>.Empty, null, Reply(seq, 3), cancellationToken: cancellationToken).ConfigureAwait(false);
        return await FinalAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Asks the server to resend its latest flow acknowledgement (operation 4; keeps the batch alive).</summary>
    public async ValueTask PingAsync(CancellationToken cancellationToken = default)
    {
        if (!_started) throw new InvalidOperationException("no message was added to the batch");
        await _nats.PublishAsync(_lastSubject!, ReadOnlyMemory<byte>.Empty, null, Reply(_seq, 4), cancellationToken: cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Waits for the PubAck that ends the batch (after a commit, or after the server ended it on a gap or error).</summary>
    public async ValueTask<BatchPubAck> FinalAsync(CancellationToken cancellationToken = default)
    {
        await WaitAsync(() => _final is not null, cancellationToken).ConfigureAwait(false);
        byte[] final;
        lock (_lock) final = _final!;
        return BatchPubAck.Parse(final);
    }

    private void ThrowIfEnded()
    {
        byte[]? final;
        lock (_lock) final = _final;
        if (final is null) return;
        var ack = BatchPubAck.Parse(final); // an error PubAck throws here
        throw new InvalidOperationException($"the server ended the batch at sequence {ack.Sequence} after {ack.Count} messages");
    }

    private async ValueTask WaitAsync(Func<bool> done, CancellationToken cancellationToken)
    {
        var deadline = DateTime.UtcNow + _opts.Timeout;
        while (true)
        {
            lock (_lock)
            {
                if (done()) return;
            }
            var left = deadline - DateTime.UtcNow;
            if (left <= TimeSpan.Zero) throw new TimeoutException($"no acknowledgement for fast batch {BatchId} within {_opts.Timeout}");
            await _signal.WaitAsync(left, cancellationToken).ConfigureAwait(false);
        }
    }

    public async ValueTask DisposeAsync()
    {
        if (_sub is not null) await _sub.DisposeAsync().ConfigureAwait(false);
        if (_reader is not null) await _reader.ConfigureAwait(false);
        _signal.Dispose();
    }
}
