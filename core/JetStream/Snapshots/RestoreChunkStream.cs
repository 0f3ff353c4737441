using System.Buffers;
using System.Threading.Channels;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>The restore's input stalled: no chunk for <see cref="RestoreChunkStream.StallTimeout"/> (nats-server's activity check).</summary>
internal sealed class RestoreStalledException() : Exception("restore is stalled");

/// <summary>
/// The read end of a restore transfer: chunks the client published, queued by the receiving subscription (bounded),
/// read in order. A chunk is acknowledged (an empty reply) when the restore takes it, so a client that waits for each
/// ack (jsm.go sends every chunk as a request) never has more than one chunk queued here.
/// </summary>
internal sealed class RestoreChunkStream : AsyncReadOnlyStream
{
    /// <summary>Chunks that may wait here (a client that does not wait for acks is refused past it).</summary>
    public const int QueueLimit = 32;
    /// <summary>nats-server processStreamRestore's activityInterval.</summary>
    public static readonly TimeSpan StallTimeout = TimeSpan.FromSeconds(5);

    private readonly Channel<Chunk> _chunks = Channel.CreateBounded<Chunk>(new BoundedChannelOptions(QueueLimit)
    {
        FullMode = BoundedChannelFullMode.Wait,
        SingleReader = true,
    });
    private readonly Action<byte[]> _ack;
    private Chunk _current;
    private int _pos;

    /// <param name="ack">Publishes the empty acknowledgement to a chunk's reply subject.</param>
    public RestoreChunkStream(Action<byte[]> ack) => _ack = ack;

    /// <summary>A chunk: its data in a pooled buffer and its reply subject.</summary>
    public readonly record struct Chunk(byte[] Buffer, int Length, byte[] Reply);

    /// <summary>Queues a chunk (the subscription's thread); false when the queue is full or closed (the caller returns the buffer).</summary>
    public bool TryAdd(Chunk chunk) => _chunks.Writer.TryWrite(chunk);

    /// <summary>The client's end marker arrived: reads end once the queued chunks are read.</summary>
    public void Complete() => _chunks.Writer.TryComplete();

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        while (_current.Buffer is null || _pos == _current.Length)
        {
            ReturnCurrent();
            using var stall = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            stall.CancelAfter(StallTimeout);
            try
            {
                if (!await _chunks.Reader.WaitToReadAsync(stall.Token).ConfigureAwait(false)) return 0;
            }
            catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                throw new RestoreStalledException();
            }
            if (_chunks.Reader.TryRead(out var next))
            {
                _current = next;
                _pos = 0;
                _ack(next.Reply);
            }
        }
        int n = Math.Min(buffer.Length, _current.Length - _pos);
        _current.Buffer.AsSpan(_pos, n).CopyTo(buffer.Span);
        _pos += n;
        return n;
    }

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    /// <summary>Takes the chunks still queued (after a failure: each gets the error as its reply); returns their replies.</summary>
    public List<byte[]> Drain()
    {
        ReturnCurrent();
        _chunks.Writer.TryComplete();
        var replies = new List<byte[]>();
        while (_chunks.Reader.TryRead(out var c))
        {
            ArrayPool<byte>.Shared.Return(c.Buffer);
            replies.Add(c.Reply);
        }
        return replies;
    }

    private void ReturnCurrent()
    {
        if (_current.Buffer is not null) ArrayPool<byte>.Shared.Return(_current.Buffer);
        _current = default;
        _pos = 0;
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing) Drain();
        base.Dispose(disposing);
    }
}
