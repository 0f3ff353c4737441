using System.Buffers;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// A byte stream over an upgraded WebSocket connection, for protocols carried in its messages (MQTT over
/// WebSocket, [MQTT-6.0.0]): reads return the unmasked payload bytes of the client's binary frames (any frame
/// split, many frames per read, control frames answered), writes go out as one binary frame each. A close frame
/// from the client is echoed and ends the stream (a read returns 0). Used by one reader and one writer at a time;
/// writes are serialized.
/// </summary>
internal sealed class WebSocketMessageStream(Stream user, bool requireMask, bool compressed) : Stream, IFrameSink
{
    private readonly FrameDecoder _decoder = new(requireMask, compressed);
    private const int ReadSize = 16 * 1024;
    // An idle session waits in a read into _raw: pinned and uninitialized, so only the pages reads wrote are resident
    // (PinnedBuffers says why). Not pooled: Dispose can come while a read into it is still in flight.
    // The writers start at one page and grow with the session's traffic.
    private readonly byte[] _raw = GC.AllocateUninitializedArray<byte>(ReadSize, pinned: true);
    private readonly ArrayBufferWriter<byte> _decoded = new(4096);
    private readonly ArrayBufferWriter<byte> _control = new(256);
    private readonly ArrayBufferWriter<byte> _out = new(4096);
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private int _decodedRead;
    private bool _closed;

    public override bool CanRead => true;
    public override bool CanWrite => true;
    public override bool CanSeek => false;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

    public override async ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        while (true)
        {
            int available = _decoded.WrittenCount - _decodedRead;
            if (available > 0)
            {
                int n = Math.Min(available, buffer.Length);
                _decoded.WrittenSpan.Slice(_decodedRead, n).CopyTo(buffer.Span);
                _decodedRead += n;
                if (_decodedRead == _decoded.WrittenCount)
                {
                    _decoded.ResetWrittenCount();
                    _decodedRead = 0;
                }
                return n;
            }
            if (_closed) return 0;
            int read = await user.ReadAsync(_raw, cancellationToken).ConfigureAwait(false);
            if (read == 0) return 0;
            if (!_decoder.Decode(_raw.AsSpan(0, read), this))
            {
                await WriteFrameAsync(WsOpcode.Close, FrameHeader.CloseBody(_decoder.ErrorStatus, _decoder.Error ?? ""), cancellationToken).ConfigureAwait(false);
                throw new IOException("websocket protocol error: " + _decoder.Error);
            }
            if (_control.WrittenCount > 0)
            {
                await WriteControlAsync(cancellationToken).ConfigureAwait(false);
            }
        }
    }

    public override int Read(byte[] buffer, int offset, int count) => ReadAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

    /// <summary>
    /// One binary message per write; an empty write sends nothing: an empty binary message reads as 0 bytes, which
    /// clients reading the WebSocket as a stream (MQTTnet's WebSocket channel) take for the end of the connection.
    /// </summary>
    public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) =>
        buffer.IsEmpty ? ValueTask.CompletedTask : new(WriteFrameAsync(WsOpcode.Binary, buffer, cancellationToken));

    public override void Write(byte[] buffer, int offset, int count) => WriteAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();

    public override Task FlushAsync(CancellationToken cancellationToken) => user.FlushAsync(cancellationToken);

    public override void Flush() => user.Flush();

    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

    public override void SetLength(long value) => throw new NotSupportedException();

    void IFrameSink.Data(ReadOnlySpan<byte> payload) => _decoded.Write(payload);

    void IFrameSink.Control(byte opcode, ReadOnlySpan<byte> payload)
    {
        switch (opcode)
        {
            case WsOpcode.Ping:
                FrameHeader.Append(_control, WsOpcode.Pong, payload);
                break;
            case WsOpcode.Close:
                // RFC 6455 section 5.5.1: echo the status, then the stream ends.
                FrameHeader.Append(_control, WsOpcode.Close, payload.Length >= 2 ? payload[..2] : []);
                _closed = true;
                break;
        }
    }

    /// <summary>One frame per write, built in a reused buffer under the write lock (one write to the socket).</summary>
    private async Task WriteFrameAsync(byte opcode, ReadOnlyMemory<byte> payload, CancellationToken ct)
    {
        await _writeLock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            _out.ResetWrittenCount();
            FrameHeader.Append(_out, opcode, payload.Span);
            await user.WriteAsync(_out.WrittenMemory, ct).ConfigureAwait(false);
            await user.FlushAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _writeLock.Release();
        }
    }

    /// <summary>Sends the pongs and the close echo the decoder asked for.</summary>
    private async Task WriteControlAsync(CancellationToken ct)
    {
        await _writeLock.WaitAsync(ct).ConfigureAwait(false);
        try
        {
            await user.WriteAsync(_control.WrittenMemory, ct).ConfigureAwait(false);
            await user.FlushAsync(ct).ConfigureAwait(false);
            _control.ResetWrittenCount();
        }
        finally
        {
            _writeLock.Release();
        }
    }

    protected override void Dispose(bool disposing)
    {
        if (disposing)
        {
            _decoder.Dispose();
            _writeLock.Dispose();
            user.Dispose();
        }
        base.Dispose(disposing);
    }
}
