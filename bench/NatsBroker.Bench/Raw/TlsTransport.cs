using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.Text;

namespace NatsBroker.Bench.Raw;

/// <summary>
/// NATS over TLS for the raw generator, so the TLS rows measure the servers and not a client library: the upgrade
/// as nats-server does it by default (INFO in plaintext with <c>tls_required</c>, then the client's handshake,
/// then everything else inside TLS), over an <see cref="SslStream"/> in blocking mode on the connected socket.
/// The server certificate is checked against one CA (the bench's own, <c>BenchTls.CaFile</c>), not the system store.
/// One reader and one (serialized) writer may use it at once, as <see cref="SslStream"/> allows.
/// </summary>
internal sealed class TlsTransport : RawTransport, IDisposable
{
    private readonly SslStream _ssl;
    private readonly SocketStream _inner;

    private TlsTransport(Socket socket, SslStream ssl, SocketStream inner)
        : base(socket)
    {
        _ssl = ssl;
        _inner = inner;
    }

    /// <summary>
    /// Reads the server's plaintext INFO line (returned in <paramref name="infoLine"/>, without CRLF), then runs the
    /// TLS handshake as client. Bounded by the socket's receive timeout, which the caller sets.
    /// </summary>
    public static TlsTransport Upgrade(Socket socket, string caFile, out string infoLine)
    {
        infoLine = ReadPlainInfo(socket);
        if (!infoLine.StartsWith("INFO ", StringComparison.OrdinalIgnoreCase))
        {
            throw new InvalidDataException("server did not start with INFO: " + infoLine);
        }

        var inner = new SocketStream(socket);
        var ssl = new SslStream(inner, leaveInnerStreamOpen: true);
        try
        {
            var policy = new X509ChainPolicy
            {
                TrustMode = X509ChainTrustMode.CustomRootTrust,
                RevocationMode = X509RevocationMode.NoCheck, // a CA made for this run publishes no revocation list
            };
            policy.CustomTrustStore.AddRange(LoadCa(caFile));
            ssl.AuthenticateAsClient(new SslClientAuthenticationOptions
            {
                // The bench certificate names both "localhost" and 127.0.0.1; the name is checked, not only the chain.
                TargetHost = "localhost",
                CertificateChainPolicy = policy,
                EnabledSslProtocols = SslProtocols.None, // the system's choice: TLS 1.3 with both servers here
            });
        }
        catch
        {
            ssl.Dispose();
            throw;
        }

        return new TlsTransport(socket, ssl, inner);
    }

    public override void Send(ReadOnlySpan<byte> data) => _ssl.Write(data);

    public override int Receive(Span<byte> into, out SocketError error)
    {
        try
        {
            int r = _ssl.Read(into);
            error = SocketError.Success;
            return r;
        }
        catch (IOException) when (_inner.TakeReceiveError() is var e && e != SocketError.Success)
        {
            // A socket receive timeout (the handshake bound, or batched reads' idle tick) surfaces from SslStream as
            // an exception; it is mapped back to what SocketTransport returns. SslStream keeps the bytes it had read
            // of a partial record, so the next Receive resumes where this one stopped.
            error = e;
            return -1;
        }
    }

    public void Dispose() => _ssl.Dispose();

    /// <summary>
    /// The INFO line, read before TLS starts. The server sends nothing more until the client's ClientHello, so no
    /// byte of the TLS stream can be in what this reads; reading more than the line is an error.
    /// </summary>
    private static string ReadPlainInfo(Socket socket)
    {
        var buf = new byte[64 * 1024];
        int have = 0;
        while (true)
        {
            int n = socket.Receive(buf, have, buf.Length - have, SocketFlags.None);
            if (n <= 0) throw new EndOfStreamException("server closed before INFO");
            have += n;
            int nl = buf.AsSpan(0, have).IndexOf((byte)'\n');
            if (nl >= 0)
            {
                if (nl != have - 1) throw new InvalidDataException("bytes after INFO before the TLS handshake");
                int len = nl > 0 && buf[nl - 1] == (byte)'\r' ? nl - 1 : nl;
                return Encoding.ASCII.GetString(buf, 0, len);
            }

            if (have == buf.Length) throw new InvalidDataException("INFO line longer than 64 KB");
        }
    }

    private static X509Certificate2Collection LoadCa(string caFile)
    {
        var ca = new X509Certificate2Collection();
        ca.ImportFromPemFile(caFile);
        return ca.Count > 0 ? ca : throw new InvalidDataException("no certificate in " + caFile);
    }

    /// <summary>
    /// The socket as a <see cref="Stream"/> for <see cref="SslStream"/> (a NetworkStream would do, but this one
    /// keeps the socket error of a failed receive, so a timeout is told apart from a broken stream without
    /// unwrapping exceptions, and it skips SslStream's zero-byte "wait for data" reads, which on a blocking socket
    /// are one extra system call per read).
    /// </summary>
    private sealed class SocketStream(Socket socket) : Stream
    {
        private SocketError _receiveError;

        public override bool CanRead => true;

        public override bool CanSeek => false;

        public override bool CanWrite => true;

        public override long Length => throw new NotSupportedException();

        public override long Position
        {
            get => throw new NotSupportedException();
            set => throw new NotSupportedException();
        }

        /// <summary>The error of the last failed receive (then cleared), or Success.</summary>
        public SocketError TakeReceiveError()
        {
            var e = _receiveError;
            _receiveError = SocketError.Success;
            return e;
        }

        public override int Read(Span<byte> buffer)
        {
            if (buffer.IsEmpty)
            {
                return 0;
            }

            int r = socket.Receive(buffer, SocketFlags.None, out var error);
            if (error != SocketError.Success)
            {
                _receiveError = error;
                throw new IOException("socket receive failed: " + error, new SocketException((int)error));
            }

            return r;
        }

        public override int Read(byte[] buffer, int offset, int count) => Read(buffer.AsSpan(offset, count));

        public override void Write(ReadOnlySpan<byte> buffer)
        {
            while (!buffer.IsEmpty)
            {
                int n = socket.Send(buffer, SocketFlags.None);
                buffer = buffer[n..];
            }
        }

        public override void Write(byte[] buffer, int offset, int count) => Write(buffer.AsSpan(offset, count));

        public override void Flush()
        {
        }

        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();

        public override void SetLength(long value) => throw new NotSupportedException();
    }
}
