using System.IO.Pipelines;

namespace NatsBroker.Transport;

/// <summary>
/// An in-process duplex connection made of two pipes: the server end and the client end are ordinary
/// <see cref="Stream"/>s, so a <see cref="Connections.Connection"/> runs over it exactly as over a socket.
/// <see cref="InMemoryConnectionListener"/> hands out such pairs, for in-process sessions and tests that want no network.
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
        public override void Write(byte[] buffer, int offset, int count) => WriteAsync(buffer.AsMemory(offset, count)).AsTask().GetAwaiter().GetResult();
        public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) => WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();

        // A write waits while the peer has 64 KiB unread (the pipe's pause threshold), as a socket send waits for
        // room; closing this end must end that wait as closing a socket fails its send, or a writer stuck behind a
        // peer that stopped reading (a slow consumer being cut off) would never finish.
        private int _disposed;
        private int _writing;
        private int _writerCompleted;

        public override async ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
        {
            Interlocked.Exchange(ref _writing, 1);
            try
            {
                ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
                await _out.WriteAsync(buffer, cancellationToken).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (Volatile.Read(ref _disposed) != 0)
            {
                throw new ObjectDisposedException(nameof(DuplexPipeStream));
            }
            finally
            {
                Interlocked.Exchange(ref _writing, 0);
                if (Volatile.Read(ref _disposed) != 0) CompleteWriter();
            }
        }

        // The pipe's writer is not thread-safe: it is completed by whichever of Dispose and an in-flight write comes last.
        private void CompleteWriter()
        {
            if (Interlocked.Exchange(ref _writerCompleted, 1) == 0) writer.Complete();
        }

        protected override void Dispose(bool disposing)
        {
            if (disposing && Interlocked.Exchange(ref _disposed, 1) == 0)
            {
                // EOF to the peer; a write waiting for room ends (cancelled, reported as disposed); a read pending
                // on this end ends as cancelled (completing a reader that is being read is not allowed).
                writer.CancelPendingFlush();
                if (Volatile.Read(ref _writing) == 0) CompleteWriter();
                reader.CancelPendingRead();
            }
            base.Dispose(disposing);
        }
    }
}
