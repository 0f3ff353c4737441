using System.IO.Pipelines;

namespace NatsBroker.Transport;

/// <summary>
/// An in-process duplex connection made of two pipes: the server end and the client end are ordinary
/// <see cref="Stream"/>s, so <see cref="Server.ClientConnection"/> runs over it exactly as over a socket.
/// For in-process sessions and tests that want no network (nothing in the broker uses it since the start-up
/// warm-up was removed).
/// </summary>
public static class InMemoryTransport
{
    public static (Stream Server, Stream Client) CreatePair()
    {
        var toServer = new Pipe(new PipeOptions(useSynchronizationContext: false));
        var toClient = new Pipe(new PipeOptions(useSynchronizationContext: false));
        return (new DuplexPipeStream(toServer.Reader, toClient.Writer), new DuplexPipeStream(toClient.Reader, toServer.Writer));
    }

    private sealed class DuplexPipeStream(PipeReader reader, PipeWriter writer) : Stream
    {
        private readonly Stream _in = reader.AsStream();
        private readonly Stream _out = writer.AsStream();

        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => true;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
        public override void Flush() => _out.Flush();
        public override Task FlushAsync(CancellationToken cancellationToken) => _out.FlushAsync(cancellationToken);
        public override int Read(byte[] buffer, int offset, int count) => _in.Read(buffer, offset, count);
        public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default) => _in.ReadAsync(buffer, cancellationToken);
        public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) => _in.ReadAsync(buffer, offset, count, cancellationToken);
        public override void Write(byte[] buffer, int offset, int count) => _out.Write(buffer, offset, count);
        public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default) => _out.WriteAsync(buffer, cancellationToken);
        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) => _out.WriteAsync(buffer, offset, count, cancellationToken);
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();

        protected override void Dispose(bool disposing)
        {
            if (disposing)
            {
                // EOF to the peer; a read pending on this end ends as cancelled (completing a reader that is
                // being read is not allowed).
                writer.Complete();
                reader.CancelPendingRead();
            }
            base.Dispose(disposing);
        }
    }
}
