namespace NatsBroker.Gateways.Link;

/// <summary>
/// Wraps a connection's stream so that, while <see cref="ResumeOnThreadPool"/> is set, whatever runs after a
/// completed read (the TLS handshake's crypto, certificate chain building, HTTP parsing, the CONNECT rewrite)
/// continues on the thread pool and not on the socket engine's thread, where <see cref="SocketCompletions"/>
/// runs continuations. The session clears it when the connection becomes a byte pump; from then on reads and
/// writes go straight to the inner stream.
/// </summary>
public sealed class ThreadPoolResumingStream(Stream inner) : Stream
{
    /// <summary>Set until the session starts relaying.</summary>
    public bool ResumeOnThreadPool { get; set; } = true;

    public override bool CanRead => inner.CanRead;
    public override bool CanSeek => false;
    public override bool CanWrite => inner.CanWrite;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

    public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) =>
        ResumeOnThreadPool ? ReadThenYieldAsync(buffer, cancellationToken) : inner.ReadAsync(buffer, cancellationToken);

    private async ValueTask<int> ReadThenYieldAsync(Memory<byte> buffer, CancellationToken cancellationToken)
    {
        int n = await inner.ReadAsync(buffer, cancellationToken).ConfigureAwait(false);
        await Task.Yield(); // no synchronization context in a gateway: this continues on the thread pool
        return n;
    }

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) =>
        inner.WriteAsync(buffer, cancellationToken);

    public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        inner.WriteAsync(buffer, offset, count, cancellationToken);

    public override Task FlushAsync(CancellationToken cancellationToken) => inner.FlushAsync(cancellationToken);
    public override int Read(byte[] buffer, int offset, int count) => inner.Read(buffer, offset, count);
    public override void Write(byte[] buffer, int offset, int count) => inner.Write(buffer, offset, count);
    public override void Flush() => inner.Flush();
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
    public override void SetLength(long value) => throw new NotSupportedException();

    protected override void Dispose(bool disposing)
    {
        if (disposing) inner.Dispose();
        base.Dispose(disposing);
    }

    public override async ValueTask DisposeAsync()
    {
        await inner.DisposeAsync().ConfigureAwait(false);
        await base.DisposeAsync().ConfigureAwait(false);
    }
}
