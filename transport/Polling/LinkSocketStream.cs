using System.Net.Sockets;
using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;

namespace NatsBroker.Transport.Polling;

/// <summary>
/// A link socket (a connected Unix socket between a gateway and the core) as a stream, polled by
/// <see cref="LinkPoller"/> instead of the runtime's socket engine: registered for input only, so the other end
/// reading what we sent does not wake us (see LinkPoller). Reads and writes are non-blocking calls made on the
/// caller's thread; a read that would block resumes on the poller's thread when input arrives (as the runtime's
/// inline socket completions do), a write that would block when the socket has room. After a read that came back
/// shorter than asked (the socket was drained), the next read waits for the next edge instead of calling recv
/// only to get EAGAIN: one system call less per relayed read. One reader and one writer at a time. The socket must
/// not be used with the runtime's asynchronous operations (that would register it with the runtime's engine too).
/// </summary>
public sealed class LinkSocketStream : Stream
{
    private readonly Socket _socket;
    private readonly nint _fd;
    private readonly ulong _id;
    private readonly LinkPoller _poller;
    // Registered for output for good (TCP); otherwise output is watched only while a send waits for room.
    private readonly bool _watchesOutput;
    private readonly ReadinessSignal _readable = new();
    private readonly ReadinessSignal _writable = new();
    private readonly byte[] _peek = new byte[1];
    private bool _drained;
    // Set once the poller reported a hang-up or error. Edge-triggered: that edge may be the same one as the last
    // data's and is consumed by the read that takes the data, and no edge follows end of input, so a drained read
    // must not wait for one after this; it calls recv, which returns 0 (or the error).
    private volatile bool _peerClosed;
    // Cancelled when _peerClosed is set; made only when someone asks (PeerClosed).
    private CancellationTokenSource? _peerClosedSource;
    private int _disposed;

    /// <param name="socket">Connected; owned (disposed with the stream). Every call here passes MSG_DONTWAIT, so
    /// the descriptor's own blocking mode does not matter.</param>
    public LinkSocketStream(Socket socket) : this(socket, LinkPoller.Shared, tcp: false)
    {
    }

    /// <param name="socket">Connected; owned (disposed with the stream).</param>
    /// <param name="poller">The poller that waits for this socket's readiness.</param>
    /// <param name="tcp">A TCP socket (a core client): its send buffer is left to the kernel's auto-tuning (setting
    /// SO_SNDBUF would switch that off), and it is watched for output from the start. TCP reports room again only after
    /// a send found the buffer full (tcp_check_space needs SOCK_NOSPACE), so unlike a Unix socket it causes no wake-up
    /// per message the peer reads, and a send that must wait saves the two epoll_ctl calls that add and remove output.
    /// False for a link (a Unix socket).</param>
    public LinkSocketStream(Socket socket, LinkPoller poller, bool tcp)
    {
        ArgumentNullException.ThrowIfNull(socket);
        ArgumentNullException.ThrowIfNull(poller);
        _socket = socket;
        _poller = poller;
        _watchesOutput = tcp;
        _fd = socket.SafeHandle.DangerousGetHandle();
        if (!tcp) socket.SendBufferSize = SendBufferBytes;
        _id = poller.Add(this, _fd, watchOutput: tcp);
    }

    public Socket Socket => _socket;

    /// <summary>Overrides <see cref="DefaultSendBufferBytes"/> (bytes; an operator's A/B switch).</summary>
    public const string SendBufferVariable = "NATSBROKER_LINK_SNDBUF";

    /// <summary>
    /// SO_SNDBUF asked for on every link socket (the kernel doubles it, capped at twice net.core.wmem_max). A Unix
    /// stream socket reports room again only when at most a quarter of its send buffer is in use (unix_writable), so
    /// with the 208 KiB default the sender slept until the reader had taken three quarters and the reader then
    /// emptied the rest and slept in turn: the two ends of the hop took turns instead of running at once. With
    /// 2 MiB, `ws-pub-128` went from 4.6 to 8.1 M msgs/s on this 2-core machine (gateways/README.md). It is a
    /// limit, not an allocation: only bytes in flight use memory.
    /// </summary>
    public const int DefaultSendBufferBytes = 2 << 20;

    private static readonly int SendBufferBytes =
        int.TryParse(Environment.GetEnvironmentVariable(SendBufferVariable), out int bytes) && bytes > 0 ? bytes : DefaultSendBufferBytes;

    public override bool CanRead => true;
    public override bool CanSeek => false;
    public override bool CanWrite => true;
    public override long Length => throw new NotSupportedException();
    public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }

    /// <summary>
    /// Cancelled once the poller reports that the other end hung up (or the socket failed), even while input it sent
    /// before is still unread: a relay whose reads from this link wait behind a write elsewhere (an end user who
    /// does not read) learns that the other end is gone. Its callbacks run on the poller's thread: keep them short.
    /// </summary>
    public CancellationToken PeerClosed
    {
        get
        {
            var source = Volatile.Read(ref _peerClosedSource);
            if (source is null)
            {
                var made = new CancellationTokenSource();
                source = Interlocked.CompareExchange(ref _peerClosedSource, made, null) ?? made;
                if (!ReferenceEquals(source, made)) made.Dispose();
            }
            // The hang-up may have come before the source existed (OnEvents then had nothing to cancel).
            if (_peerClosed) CancelPeerClosed(source);
            return source.Token;
        }
    }

    private static void CancelPeerClosed(CancellationTokenSource source)
    {
        try { source.Cancel(); }
        catch (ObjectDisposedException) { } // the stream was disposed meanwhile: nobody is watching any more
    }

    /// <summary>Called on the poller's thread.</summary>
    internal void OnEvents(uint events)
    {
        // Hang-up and errors end both directions: the next call sees end of input or the error.
        if ((events & (Epoll.RdHup | Epoll.Hup | Epoll.Err)) != 0)
        {
            _peerClosed = true;
            // Against PeerClosed's getter, which publishes the source and then reads _peerClosed: one of the two sees the other.
            Interlocked.MemoryBarrier();
            if (Volatile.Read(ref _peerClosedSource) is { } source) CancelPeerClosed(source);
        }
        if ((events & (Epoll.In | Epoll.RdHup | Epoll.Hup | Epoll.Err)) != 0) _readable.Signal();
        if ((events & (Epoll.Out | Epoll.Hup | Epoll.Err)) != 0) _writable.Signal();
    }

    public override ValueTask<int> ReadAsync(Memory<byte> buffer, CancellationToken cancellationToken = default)
    {
        if (buffer.IsEmpty) return WaitForInputAsync(cancellationToken);
        if (!(_drained && !_readable.IsSignaled && !_peerClosed))
        {
            _readable.Reset();
            int n = TryReceive(buffer.Span, 0);
            if (n >= 0)
            {
                _drained = n < buffer.Length;
                return new ValueTask<int>(n);
            }
        }
        return ReadSlowAsync(buffer, cancellationToken);
    }

    /// <summary>
    /// A zero-byte read (a PipeReader's or SslStream's "tell me when there is input", so that no buffer is held while
    /// idle): completes at once when an edge came since the last drain, else at the next edge; no system call on that
    /// path, since an edge after a drain means input arrived for this, the only reader. When the stream is not known to
    /// be drained (new, or the last read filled its buffer) it peeks one byte first. The read that follows calls recv
    /// (_drained is cleared).
    /// </summary>
    private ValueTask<int> WaitForInputAsync(CancellationToken ct)
    {
        if (_readable.IsSignaled || _peerClosed)
        {
            _drained = false;
            return new ValueTask<int>(0);
        }
        if (!_drained)
        {
            // Not known to be drained (a new stream, or the last read filled its buffer): look without taking.
            _readable.Reset();
            if (TryReceive(_peek, Epoll.MsgPeek) >= 0) return new ValueTask<int>(0);
            _drained = true;
        }
        return WaitForEdgeAsync(ct);
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<int> WaitForEdgeAsync(CancellationToken ct)
    {
        await _readable.WaitAsync(ct).ConfigureAwait(false);
        _drained = false;
        return 0;
    }

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<int> ReadSlowAsync(Memory<byte> buffer, CancellationToken ct)
    {
        // After a hang-up recv returns end of input or the error at once; should it still report "would block",
        // the retry waits for an edge like any other, so a closed peer can never make this loop spin.
        bool skipWait = _peerClosed;
        while (true)
        {
            if (!skipWait) await _readable.WaitAsync(ct).ConfigureAwait(false);
            skipWait = false;
            _readable.Reset();
            int n = TryReceive(buffer.Span, 0);
            if (n < 0) continue;
            _drained = n < buffer.Length;
            return n;
        }
    }

    /// <returns>Bytes read (0 at end of input), or -1 when the call would block.</returns>
    private unsafe int TryReceive(Span<byte> buffer, int flags)
    {
        // The reference keeps the descriptor from being closed (and its number reused) during the call.
        var handle = _socket.SafeHandle;
        bool added = false;
        handle.DangerousAddRef(ref added);
        try
        {
            while (true)
            {
                nint n;
                fixed (byte* p = buffer) n = Epoll.Receive(_fd, p, (nuint)buffer.Length, flags | Epoll.MsgDontWait);
                if (n >= 0) return (int)n;
                int errno = Marshal.GetLastPInvokeError();
                if (errno == Epoll.EINTR) continue;
                if (errno == Epoll.EAGAIN) return -1;
                throw new IOException("recv: " + Marshal.GetPInvokeErrorMessage(errno));
            }
        }
        finally
        {
            if (added) handle.DangerousRelease();
        }
    }

    public override ValueTask WriteAsync(ReadOnlyMemory<byte> buffer, CancellationToken cancellationToken = default)
    {
        int sent = TrySend(buffer.Span);
        return sent == buffer.Length ? ValueTask.CompletedTask : WriteSlowAsync(buffer[sent..], cancellationToken);
    }

    /// <summary>The socket is full: watch for room only until the rest is sent (backpressure from the core).</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
    private async ValueTask WriteSlowAsync(ReadOnlyMemory<byte> rest, CancellationToken ct)
    {
        _writable.Reset();
        if (!_watchesOutput) _poller.WatchWritable(_id, _fd, writable: true);
        try
        {
            while (!rest.IsEmpty)
            {
                int n = TrySend(rest.Span);
                rest = rest[n..];
                if (rest.IsEmpty) break;
                await _writable.WaitAsync(ct).ConfigureAwait(false);
                _writable.Reset();
            }
        }
        finally
        {
            if (!_watchesOutput && Volatile.Read(ref _disposed) == 0) _poller.WatchWritable(_id, _fd, writable: false);
        }
    }

    /// <returns>Bytes sent before the call would block.</returns>
    private unsafe int TrySend(ReadOnlySpan<byte> buffer)
    {
        var handle = _socket.SafeHandle;
        bool added = false;
        handle.DangerousAddRef(ref added);
        try
        {
            int sent = 0;
            while (sent < buffer.Length)
            {
                nint n;
                fixed (byte* p = buffer[sent..]) n = Epoll.Send(_fd, p, (nuint)(buffer.Length - sent), Epoll.MsgDontWait | Epoll.MsgNoSignal);
                if (n >= 0)
                {
                    sent += (int)n;
                    continue;
                }
                int errno = Marshal.GetLastPInvokeError();
                if (errno == Epoll.EINTR) continue;
                if (errno == Epoll.EAGAIN) break;
                throw new IOException("send: " + Marshal.GetPInvokeErrorMessage(errno));
            }
            return sent;
        }
        finally
        {
            if (added) handle.DangerousRelease();
        }
    }

    public override Task<int> ReadAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        ReadAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override Task WriteAsync(byte[] buffer, int offset, int count, CancellationToken cancellationToken) =>
        WriteAsync(buffer.AsMemory(offset, count), cancellationToken).AsTask();

    public override Task FlushAsync(CancellationToken cancellationToken) => Task.CompletedTask;
    public override void Flush() { }

    /// <summary>Not supported: the link is used asynchronously only (blocking here would hold the poller or a pool thread).</summary>
    public override int Read(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    public override void Write(byte[] buffer, int offset, int count) => throw new NotSupportedException();
    public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
    public override void SetLength(long value) => throw new NotSupportedException();

    protected override void Dispose(bool disposing)
    {
        if (disposing && Interlocked.Exchange(ref _disposed, 1) == 0)
        {
            _poller.Remove(_id, _fd);
            var reason = new ObjectDisposedException(nameof(LinkSocketStream));
            _readable.Fail(reason);
            _writable.Fail(reason);
            _socket.Dispose();
            Volatile.Read(ref _peerClosedSource)?.Dispose();
        }
        base.Dispose(disposing);
    }
}
