using System.Text;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>Ends a snapshot transfer with a status (nats-server streamSnapshot: "408 No Flow Response", "408 No Interest", "500 &lt;error&gt;").</summary>
internal sealed class SnapshotAbortedException(string status) : Exception(status)
{
    /// <summary>The status line's code and description, e.g. "408 No Interest".</summary>
    public string Status { get; } = status;
}

/// <summary>
/// The write end of a snapshot transfer (nats-server jetstream_api.go streamSnapshot): cuts what is written into
/// chunks of the requested size and publishes each to the deliver subject with the reply
/// <c>$JS.SNAPSHOT.ACK.&lt;stream&gt;.&lt;id&gt;.&lt;size&gt;.&lt;index&gt;</c>; at most window / chunk chunks may
/// be unacknowledged, and a chunk waits at most <see cref="AckTimeout"/> for room ("408 No Flow Response"). A last,
/// partial chunk is sent without a reply, then the end marker: an empty message with the header "NATS/1.0 204".
/// Memory: one chunk buffer; what the client has not acknowledged sits in its connection's bounded outbound buffer.
/// </summary>
internal sealed class SnapshotChunkSender : Stream
{
    /// <summary>nats-server defaultSnapshotAckTimeout.</summary>
    public static readonly TimeSpan AckTimeout = TimeSpan.FromSeconds(5);
    private static readonly byte[] EndOfSnapshot = Encoding.ASCII.GetBytes("NATS/1.0 204\r\n\r\n");

    private readonly JsAccount _js;
    private readonly byte[] _deliver;
    private readonly string _ackPrefix;
    private readonly Subscription _ackSub;
    private readonly SemaphoreSlim _slots;
    private readonly byte[] _chunk;
    private int _outstanding, _len, _index = 1;
    private bool _disposed;

    public SnapshotChunkSender(JsAccount js, string stream, string deliverSubject, int chunkSize, int maxInflight)
    {
        _js = js;
        _deliver = Encoding.UTF8.GetBytes(deliverSubject);
        _ackPrefix = $"$JS.SNAPSHOT.ACK.{stream}.{Nuid.Next()}";
        _chunk = new byte[chunkSize];
        _slots = new SemaphoreSlim(maxInflight, int.MaxValue);
        _ackSub = js.Router.SubscribeInternal(_ackPrefix + ".>", null, OnAck);
    }

    /// <summary>Bytes sent so far.</summary>
    public long BytesSent { get; private set; }

    /// <summary>Runs on the acknowledging client's thread: frees one slot per chunk still unacknowledged (a repeated ack frees nothing).</summary>
    private void OnAck(Subscription sub, in InternalMessage msg)
    {
        if (Interlocked.Decrement(ref _outstanding) < 0)
        {
            Interlocked.Increment(ref _outstanding);
            return;
        }
        _slots.Release();
    }

    /// <summary>Waits up to 2 s for someone to listen on the deliver subject (as nats-server), then goes on either way.</summary>
    public async Task WaitForInterestAsync(CancellationToken ct)
    {
        for (int i = 0; i < 40 && !_js.HasInterest(_deliver); i++) await Task.Delay(50, ct).ConfigureAwait(false);
    }

    public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
    {
        while (!buffer.IsEmpty)
        {
            int n = Math.Min(buffer.Length, _chunk.Length - _len);
            buffer.Span[..n].CopyTo(_chunk.AsSpan(_len));
            _len += n;
            buffer = buffer[n..];
            if (_len == _chunk.Length) await SendChunkAsync(cancellationToken).ConfigureAwait(false);
        }
    }

    public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    private async ValueTask SendChunkAsync(CancellationToken ct)
    {
        if (!_js.HasInterest(_deliver)) throw new SnapshotAbortedException("408 No Interest");
        if (!await _slots.WaitAsync(AckTimeout, ct).ConfigureAwait(false)) throw new SnapshotAbortedException("408 No Flow Response");
        Interlocked.Increment(ref _outstanding);
        var reply = Encoding.ASCII.GetBytes($"{_ackPrefix}.{_len}.{_index}");
        _js.Publish(_deliver, reply, default, _chunk.AsSpan(0, _len));
        BytesSent += _len;
        _index++;
        _len = 0;
    }

    /// <summary>Sends the last partial chunk (no reply, as nats-server) and the 204 end marker.</summary>
    public void Finish()
    {
        if (_len > 0)
        {
            _js.Publish(_deliver, default, default, _chunk.AsSpan(0, _len));
            BytesSent += _len;
            _len = 0;
        }
        _js.Publish(_deliver, default, EndOfSnapshot, default);
    }

    /// <summary>Ends the transfer with an error status instead (the client reports "&lt;code&gt; &lt;description&gt;").</summary>
    public void Abort(string status)
    {
        // A status line holds no line breaks.
        var line = status.Replace('\r', ' ').Replace('\n', ' ');
        _js.Publish(_deliver, default, Encoding.UTF8.GetBytes($"NATS/1.0 {line}\r\n\r\n"), default);
    }

    public override Task FlushAsync(CancellationToken cancellationToken) => Task.CompletedTask;

    protected override void Dispose(bool disposing)
    {
        if (disposing && !_disposed)
        {
            _disposed = true;
            // The semaphore is not disposed: an ack already past the router may still release it (it holds no
            // wait handle unless AvailableWaitHandle is used, which it is not).
            _js.Router.Unsubscribe(_ackSub);
        }
        base.Dispose(disposing);
    }

    public override bool CanRead => false;
    public override bool CanSeek => false;
    public override bool CanWrite => true;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
    public override void Flush() { }
    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
    public override void SetLength(long value) => throw new NotSupportedException();
    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException("async only");
}
