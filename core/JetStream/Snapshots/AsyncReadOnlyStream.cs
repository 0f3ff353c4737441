namespace NatsBroker.JetStream.Snapshots;

/// <summary>
/// The <see cref="Stream"/> members of a forward-only, async-only source (a restore's chunks, a snapshot's framing):
/// a derived class implements <c>ReadAsync(Memory&lt;byte&gt;, CancellationToken)</c>; the synchronous read throws,
/// so no read blocks a thread.
/// </summary>
internal abstract class AsyncReadOnlyStream : Stream
{
    public override bool CanRead => true;
    public override bool CanSeek => false;
    public override bool CanWrite => false;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
    public override void Flush() { }
    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException("async only");
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
    public override void SetLength(long value) => throw new NotSupportedException();
    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
}
