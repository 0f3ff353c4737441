using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography.X509Certificates;
using System.Text;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// One end user, as nats-server's createClient handles a TLS client (server/client.go, server/server.go):
/// INFO in plaintext with <c>tls_required</c>, then the TLS handshake, or with <c>handshake_first</c> the
/// handshake first and INFO over TLS. A plaintext client, a failed handshake or one that does not finish within
/// <c>timeout</c> is closed without another byte, as nats-server 2.9.10 does (checked against it: the client sees
/// INFO then end of stream). After the handshake the user's CONNECT gets the proxy fields and bytes are relayed.
/// </summary>
internal sealed class TlsSession(Socket socket, TerminatorOptions options, CertificateSet? certificates, GatewayEnvironment link,
    ProxySigner signer, int listenPort, ILogger log)
{
    private const byte TlsHandshakeRecord = 0x16;

    private readonly IPEndPoint _remote = (IPEndPoint)socket.RemoteEndPoint!;

    private string RemoteIp => _remote.Address.IsIPv4MappedToIPv6 ? _remote.Address.MapToIPv4().ToString() : _remote.Address.ToString();

    public async Task RunAsync(CancellationToken drain)
    {
        socket.NoDelay = true;
        // Handshake work resumes on the thread pool; the relay afterwards runs inline on the socket engine
        // (SocketCompletions).
        var network = new ThreadPoolResumingStream(new NetworkStream(socket, ownsSocket: true));
        CoreLink? core = null;
        try
        {
            core = await CoreLink.ConnectAsync(link.CoreSocket, drain).ConfigureAwait(false);
            if (options.RelayOnly)
            {
                await RelayPlainAsync(network, core, drain).ConfigureAwait(false);
                return;
            }
            var info = CoreLink.FormatInfo(ClientInfo(core));
            bool tlsFirst = options.HandshakeFirst;
            if (tlsFirst && options.HandshakeFirstFallback is { } wait && !await ClientSpeaksWithin(wait).ConfigureAwait(false))
                tlsFirst = false; // nothing from the client: INFO first after all (nats-server's fallback)
            if (!tlsFirst) await network.WriteAsync(info, drain).ConfigureAwait(false);
            if (!tlsFirst && options.AllowNonTls && !await ClientStartsTlsAsync(drain).ConfigureAwait(false))
            {
                await RelayPlainAfterInfoAsync(network, core, drain).ConfigureAwait(false);
                return;
            }

            var ssl = await HandshakeAsync(network, drain).ConfigureAwait(false);
            if (ssl is null)
            {
                await core.DisposeAsync().ConfigureAwait(false);
                return;
            }
            if (tlsFirst) await ssl.WriteAsync(info, drain).ConfigureAwait(false);
            if (core.Leftover.Length > 0) await ssl.WriteAsync(core.Leftover, drain).ConfigureAwait(false);

            var client = new ProxiedClient
            {
                Gateway = "tls-terminator",
                Ip = RemoteIp,
                Port = _remote.Port,
                TlsVersion = ssl.SslProtocol switch { SslProtocols.Tls13 => "1.3", SslProtocols.Tls12 => "1.2", _ => ssl.SslProtocol.ToString() },
                TlsCipherSuite = GoCipherSuites.Name(ssl.NegotiatedCipherSuite),
                TlsFirst = tlsFirst,
            };
            if (ssl.RemoteCertificate is X509Certificate remoteCert)
            {
                using var peer = new X509Certificate2(remoteCert);
                client.TlsPeerSubject = CertificateIdentity.GoSubject(peer.SubjectName);
                if (options.VerifyAndMap) client.TlsMapIdentities = CertificateIdentity.MapCandidates(peer);
            }
            if (!await ForwardConnectAsync(ssl, core, client, drain).ConfigureAwait(false))
            {
                await core.DisposeAsync().ConfigureAwait(false);
                await ssl.DisposeAsync().ConfigureAwait(false);
                return;
            }
            network.ResumeOnThreadPool = false;
            core.ReleaseInfo();
            await Relay.RunAsync(ssl, core, async () =>
            {
                try { await ssl.ShutdownAsync().ConfigureAwait(false); }
                catch (Exception ex) when (ex is IOException or ObjectDisposedException or InvalidOperationException) { }
                await ssl.DisposeAsync().ConfigureAwait(false);
            }, socket, drain).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException
            or System.Text.Json.JsonException)
        {
            log.LogDebug("{Ip}:{Port} - closed: {Reason}", RemoteIp, _remote.Port, ex.Message);
        }
        finally
        {
            if (core is not null) await core.DisposeAsync().ConfigureAwait(false);
            await network.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// <c>--relay-only</c>: plain NATS, no TLS. The user gets the core's INFO (our listener, the user's address), its
    /// CONNECT gets the proxy fields, then bytes are relayed: the gateway hop alone, to measure it (bench/README.md).
    /// </summary>
    private async Task RelayPlainAsync(ThreadPoolResumingStream network, CoreLink core, CancellationToken drain)
    {
        await network.WriteAsync(CoreLink.FormatInfo(ClientInfo(core)), drain).ConfigureAwait(false);
        await RelayPlainAfterInfoAsync(network, core, drain).ConfigureAwait(false);
    }

    /// <summary>Plain NATS after INFO was sent: relay-only mode, or a plaintext client with allow_non_tls.</summary>
    private async Task RelayPlainAfterInfoAsync(ThreadPoolResumingStream network, CoreLink core, CancellationToken drain)
    {
        if (core.Leftover.Length > 0) await network.WriteAsync(core.Leftover, drain).ConfigureAwait(false);
        var client = new ProxiedClient { Gateway = "tls-terminator", Ip = RemoteIp, Port = _remote.Port };
        if (!await ForwardConnectAsync(network, core, client, drain).ConfigureAwait(false)) return;
        network.ResumeOnThreadPool = false;
        core.ReleaseInfo();
        await Relay.RunAsync(network, core, () =>
        {
            socket.Shutdown(SocketShutdown.Both);
            return Task.CompletedTask;
        }, socket, drain).ConfigureAwait(false);
    }

    /// <summary>The core's INFO as the user must see it: our listener, TLS required, the user's own address.</summary>
    private System.Text.Json.Nodes.JsonObject ClientInfo(CoreLink core)
    {
        var info = (System.Text.Json.Nodes.JsonObject)core.Info.DeepClone();
        if (options.Host is not ("0.0.0.0" or "" or "::")) info["host"] = options.Host;
        info["port"] = listenPort;
        // allow_non_tls: nats-server 2.9.10 sends tls_available and no tls_required (server.go, TLSRequired:
        // tlsReq && !opts.AllowNonTLS; TLSAvailable when TLS is configured but not required).
        if (!options.RelayOnly) info[options.AllowNonTls ? "tls_available" : "tls_required"] = true;
        if (options.RequireClientCertificate && !options.RelayOnly) info["tls_verify"] = true;
        info["client_ip"] = RemoteIp;
        return info;
    }

    /// <summary>
    /// allow_non_tls: whether the client's first byte after INFO starts a TLS handshake record. As nats-server
    /// (client.go, sniffTLS) it waits at most the TLS timeout; a client that says nothing by then is taken as plain
    /// NATS (the core's auth timeout applies to it from there).
    /// </summary>
    private async Task<bool> ClientStartsTlsAsync(CancellationToken drain)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(drain);
        timeout.CancelAfter(options.Timeout);
        var first = new byte[1];
        try
        {
            int n = await socket.ReceiveAsync(first, SocketFlags.Peek, timeout.Token).ConfigureAwait(false);
            return n > 0 && first[0] == TlsHandshakeRecord;
        }
        catch (OperationCanceledException) when (!drain.IsCancellationRequested)
        {
            return false;
        }
    }

    /// <summary>handshake_first with a fallback delay: did the client send anything (its ClientHello) in time?</summary>
    private async Task<bool> ClientSpeaksWithin(TimeSpan wait)
    {
        using var cts = new CancellationTokenSource(wait);
        try
        {
            var one = new byte[1];
            int n = await socket.ReceiveAsync(one, SocketFlags.Peek, cts.Token).ConfigureAwait(false);
            return n > 0;
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    /// <summary>
    /// The TLS handshake within <c>timeout</c>. The first byte must start a TLS handshake record: Go's crypto/tls
    /// refuses anything else ("first record does not look like a TLS handshake") and nats-server closes without
    /// an answer; checking it here keeps OpenSSL from answering a plaintext client with an alert.
    /// </summary>
    private async Task<SslStream?> HandshakeAsync(Stream network, CancellationToken drain)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(drain);
        timeout.CancelAfter(options.Timeout);
        var first = new byte[1];
        ClientCertificateCheck.Refused? refusal = null;
        try
        {
            int n = await socket.ReceiveAsync(first, SocketFlags.Peek, timeout.Token).ConfigureAwait(false);
            if (n == 0 || first[0] != TlsHandshakeRecord)
            {
                // nats-server's wording: "EOF" for a client that left, Go's crypto/tls text otherwise.
                log.LogError("{Ip}:{Port} - TLS handshake error: {Error}", RemoteIp, _remote.Port,
                    n == 0 ? "EOF" : "tls: first record does not look like a TLS handshake");
                return null;
            }
            var ssl = new SslStream(network, leaveInnerStreamOpen: true);
            var auth = await certificates!.ServerAuthenticationAsync(why => refusal = why).ConfigureAwait(false);
            try
            {
                await ssl.AuthenticateAsServerAsync(auth, timeout.Token).ConfigureAwait(false);
                return ssl;
            }
            catch (Exception)
            {
                await ssl.DisposeAsync().ConfigureAwait(false);
                throw;
            }
        }
        catch (OperationCanceledException) when (!drain.IsCancellationRequested)
        {
            log.LogError("{Ip}:{Port} - TLS handshake timeout", RemoteIp, _remote.Port);
            return null;
        }
        catch (Exception ex) when (ex is AuthenticationException or IOException or System.ComponentModel.Win32Exception)
        {
            // A refused client certificate is logged with Go's reason, as nats-server does (server/client.go
            // doTLSHandshake: "TLS handshake error: tls: failed to verify certificate: x509: ..."), not .NET's
            // "rejected by the provided RemoteCertificateValidationCallback".
            log.LogError("{Ip}:{Port} - TLS handshake error: {Error}", RemoteIp, _remote.Port, refusal?.ToString() ?? ex.Message);
            return null;
        }
    }

    /// <summary>
    /// A write to the core that fails because the core already closed the link still goes on to the relay, which
    /// delivers what the core sent before closing (its -ERR) to the user.
    /// </summary>
    private static async Task<bool> ToCore(CoreLink core, ReadOnlyMemory<byte> data, CancellationToken drain)
    {
        try
        {
            await core.Stream.WriteAsync(data, drain).ConfigureAwait(false);
        }
        catch (IOException)
        {
            // The core closed: its last words are still in the link's receive queue.
        }
        return true;
    }

    /// <summary>
    /// Reads the user's first line; a CONNECT gets <c>proxy_sig</c> and <c>proxy_client</c>. Anything else (or a line
    /// longer than max_control_line) goes to the core unchanged, which answers it as it answers any client.
    /// </summary>
    private async Task<bool> ForwardConnectAsync(Stream ssl, CoreLink core, ProxiedClient client, CancellationToken drain)
    {
        var buffer = new byte[Math.Min(options.MaxControlLine + 2, 64 * 1024)];
        int filled = 0;
        while (true)
        {
            int eol = buffer.AsSpan(0, filled).IndexOf("\r\n"u8);
            if (eol < 0) eol = buffer.AsSpan(0, filled).IndexOf((byte)'\n') is int lf and >= 0 ? lf : -1;
            if (eol >= 0)
            {
                int lineEnd = eol > 0 && buffer[eol - 1] == '\r' ? eol - 1 : eol;
                int next = buffer[eol] == '\r' ? eol + 2 : eol + 1;
                var rewritten = CoreLink.RewriteConnect(buffer.AsSpan(0, lineEnd), signer, core.Nonce, client);
                if (rewritten is null) return await ToCore(core, buffer.AsMemory(0, filled), drain).ConfigureAwait(false);
                // One write: the core may answer the CONNECT (e.g. -ERR and close) before a second one lands.
                var all = new byte[rewritten.Length + filled - next];
                rewritten.CopyTo(all, 0);
                buffer.AsSpan(next, filled - next).CopyTo(all.AsSpan(rewritten.Length));
                return await ToCore(core, all, drain).ConfigureAwait(false);
            }
            if (filled == buffer.Length) return await ToCore(core, buffer.AsMemory(0, filled), drain).ConfigureAwait(false);
            int n = await ssl.ReadAsync(buffer.AsMemory(filled), drain).ConfigureAwait(false);
            if (n == 0) return false;
            filled += n;
        }
    }
}
