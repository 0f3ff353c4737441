using System.Buffers;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Text;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// One WebSocket client, as nats-server's websocket listener serves it (server/websocket.go): optional TLS, the
/// HTTP upgrade (refusals answered and the connection kept for another request, as Go's HTTP server does), then
/// the core's INFO in a binary frame and NATS bytes both ways. Toward the core the user's first line, its CONNECT,
/// gets the proxy fields (gateways/README.md) and, with <c>jwt_cookie</c>, the cookie's JWT when it has none.
/// Toward the user each read from the core becomes one frame (many NATS ops per frame; the header is written into
/// the space reserved before the payload, so one write and no copy), deflated when negotiated and over 64 bytes
/// (nats-server's wsCompressThreshold). Pings are answered; a close is echoed; when the core closes the user gets
/// a close frame whose status follows the core's last -ERR as nats-server's wsEnqueueCloseMessage maps reasons.
/// </summary>
internal sealed class WebSocketSession(Socket socket, WebSocketOptions options, CertificateSet? certificates, GatewayEnvironment link,
    ProxySigner signer, ILogger log, NatsBroker.MqttGateway.MqttOverWebSocketHost? mqtt = null) : IFrameSink
{
    private const int BufferSize = 32 * 1024, MaxRequestHead = 16 * 1024, CompressThreshold = 64, BrowserFrameSize = 4096;

    /// <summary>The core-to-user read array: the frame header's room plus <see cref="BufferSize"/>, as a pinned buffer size.</summary>
    private const int CoreReadArraySize = 2 * BufferSize;

    private readonly IPEndPoint _remote = (IPEndPoint)socket.RemoteEndPoint!;
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    // Grows with the user's traffic; an idle session's CONNECT and PING fit the first page.
    private readonly ArrayBufferWriter<byte> _toCore = new(4096);
    private readonly ArrayBufferWriter<byte> _controlOut = new(256);
    private Stream _user = null!;
    /// <summary>The user's socket stream: continuations move to the thread pool until CONNECT is forwarded.</summary>
    private ThreadPoolResumingStream? _network;
    private AcceptedUpgrade _upgrade = null!;
    private bool _connectForwarded;
    private bool _closeSent;
    private bool _userClosed;
    // Writes of the core's bytes to the user completed (CoreHangupWatch: a user who takes none after the core hung up is closed).
    private long _userWrites;

    private string RemoteIp => _remote.Address.IsIPv4MappedToIPv6 ? _remote.Address.MapToIPv4().ToString() : _remote.Address.ToString();

    public async Task RunAsync(CancellationToken drain)
    {
        socket.NoDelay = true;
        // The upgrade (TLS, HTTP, CONNECT) resumes on the thread pool; the relay runs inline on the socket engine
        // (SocketCompletions).
        _network = new ThreadPoolResumingStream(new NetworkStream(socket, ownsSocket: true));
        _user = _network;
        CoreLink? core = null;
        try
        {
            using (var handshake = CancellationTokenSource.CreateLinkedTokenSource(drain))
            {
                var timeout = options.HandshakeTimeout > TimeSpan.Zero ? options.HandshakeTimeout
                    : options.Tls is { } tls ? tls.Timeout : Timeout.InfiniteTimeSpan;
                handshake.CancelAfter(timeout);
                try
                {
                    if (certificates is not null) _user = await TlsAsync(handshake.Token).ConfigureAwait(false);
                    if (!await UpgradeAsync(handshake.Token).ConfigureAwait(false)) return;
                    if (_upgrade.Kind == UpgradeKind.Mqtt)
                        await _user.WriteAsync(UpgradeRequest.SwitchingProtocols(_upgrade), handshake.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException) when (!drain.IsCancellationRequested)
                {
                    log.LogError("{Ip}:{Port} - websocket handshake error: timeout", RemoteIp, _remote.Port);
                    return;
                }
            }
            if (_upgrade.Kind == UpgradeKind.Mqtt)
            {
                // MQTT over WebSocket: the MQTT session logic over the unframed bytes; it opens its own link.
                await mqtt!.RunAsync(socket, new WebSocketMessageStream(_user, requireMask: !_upgrade.NoMasking, _upgrade.Compress), drain).ConfigureAwait(false);
                return;
            }
            try
            {
                core = await CoreLink.ConnectAsync(link.CoreSocket, drain).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is IOException or SocketException)
            {
                log.LogError("{Ip}:{Port} - the core is not reachable: {Error}", RemoteIp, _remote.Port, ex.Message);
                await _user.WriteAsync(UpgradeRequest.ErrorResponse("HTTP/1.1", HttpStatusCode.ServiceUnavailable), drain).ConfigureAwait(false);
                return;
            }
            await SendUpgradeAndInfoAsync(core, drain).ConfigureAwait(false);
            await RelayAsync(core, drain).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException
            or System.Text.Json.JsonException or AuthenticationException)
        {
            log.LogDebug("{Ip}:{Port} - closed: {Reason}", RemoteIp, _remote.Port, ex.Message);
        }
        finally
        {
            if (core is not null) await core.DisposeAsync().ConfigureAwait(false);
            await _user.DisposeAsync().ConfigureAwait(false);
            _writeLock.Dispose();
        }
    }

    private async Task<Stream> TlsAsync(CancellationToken ct)
    {
        var ssl = new SslStream(_user, leaveInnerStreamOpen: false);
        ClientCertificateCheck.Refused? refusal = null;
        var auth = await certificates!.ServerAuthenticationAsync(why => refusal = why).ConfigureAwait(false);
        try
        {
            await ssl.AuthenticateAsServerAsync(auth, ct).ConfigureAwait(false);
            return ssl;
        }
        catch (Exception ex) when (ex is AuthenticationException or IOException)
        {
            // A refused client certificate in nats-server's words: its websocket listener is Go's http server, which
            // logs "websocket: TLS handshake error from ip:port: <crypto/tls error>" (no certificate list).
            if (refusal is not null)
                log.LogError("websocket: TLS handshake error from {Ip}:{Port}: {Error}", RemoteIp, _remote.Port, refusal.Reason);
            else
                log.LogError("{Ip}:{Port} - websocket handshake error: {Error}", RemoteIp, _remote.Port, ex.Message);
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>Reads requests until one upgrades (true) or the connection is to be closed (false).</summary>
    private async Task<bool> UpgradeAsync(CancellationToken ct)
    {
        var buffer = new byte[MaxRequestHead];
        int filled = 0;
        while (true)
        {
            int end = buffer.AsSpan(0, filled).IndexOf("\r\n\r\n"u8);
            if (end < 0)
            {
                if (filled == buffer.Length)
                {
                    await _user.WriteAsync("HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n431 Request Header Fields Too Large"u8.ToArray(), ct).ConfigureAwait(false);
                    return false;
                }
                int n = await _user.ReadAsync(buffer.AsMemory(filled), ct).ConfigureAwait(false);
                if (n == 0) return false;
                filled += n;
                continue;
            }
            int headLength = end + 4;
            var outcome = UpgradeRequest.Check(buffer.AsSpan(0, headLength), filled > headLength, options, certificates is not null);
            if (outcome.Upgrade is { } upgrade)
            {
                // MQTT over WebSocket needs an mqtt {} block (nats-server: MQTT not configured); refused before the upgrade.
                if (upgrade.Kind == UpgradeKind.Mqtt && mqtt is null)
                {
                    log.LogError("{Ip}:{Port} - websocket handshake error: MQTT over WebSocket needs an mqtt {{}} block in the configuration", RemoteIp, _remote.Port);
                    await _user.WriteAsync(UpgradeRequest.ErrorResponse("HTTP/1.1", HttpStatusCode.NotImplemented), ct).ConfigureAwait(false);
                    return false;
                }
                if (upgrade.Kind == UpgradeKind.Leaf)
                {
                    // nats-server upgrades, then closes: not configured to accept leaf node connections.
                    await _user.WriteAsync(UpgradeRequest.SwitchingProtocols(upgrade), ct).ConfigureAwait(false);
                    log.LogError("Not configured to accept leaf node connections");
                    return false;
                }
                _upgrade = upgrade;
                return true;
            }
            log.LogError("{Ip}:{Port} - websocket handshake error: {Reason}", RemoteIp, _remote.Port, outcome.Reason);
            await _user.WriteAsync(outcome.Response!, ct).ConfigureAwait(false);
            if (outcome.Close) return false;
            buffer.AsSpan(headLength, filled - headLength).CopyTo(buffer);
            filled -= headLength;
        }
    }

    private async Task SendUpgradeAndInfoAsync(CoreLink core, CancellationToken ct)
    {
        var info = (JsonObject)core.Info.DeepClone();
        info["client_ip"] = _upgrade.ForwardedFor ?? RemoteIp;
        // server/websocket.go createWSClient: the websocket block's own auth settings make auth required.
        if (options.AuthOverride) info["auth_required"] = true;
        byte[] response = UpgradeRequest.SwitchingProtocols(_upgrade);
        byte[] infoLine = CoreLink.FormatInfo(info);
        var payload = new byte[infoLine.Length + core.Leftover.Length];
        infoLine.CopyTo(payload, 0);
        core.Leftover.CopyTo(payload, infoLine.Length);
        // nats-server sends INFO uncompressed (queued before compression applies); one write with the 101.
        var all = new byte[response.Length + WsOpcode.MaxServerHeader + payload.Length];
        response.CopyTo(all, 0);
        int bodyAt = response.Length + WsOpcode.MaxServerHeader;
        payload.CopyTo(all, bodyAt);
        int headerAt = FrameHeader.WriteBefore(all, bodyAt, WsOpcode.Binary, false, payload.Length);
        all.AsSpan(0, response.Length).CopyTo(all.AsSpan(headerAt - response.Length));
        await _user.WriteAsync(all.AsMemory(headerAt - response.Length), ct).ConfigureAwait(false);
    }

    private async Task RelayAsync(CoreLink core, CancellationToken drain)
    {
        using var hangup = new CoreHangupWatch(core, () => Volatile.Read(ref _userWrites), socket);
        var fromCore = Task.Run(() => CoreToUserAsync(core), CancellationToken.None);
        using var authTimer = StartAuthTimer(core);
        await UserToCoreAsync(core, drain).ConfigureAwait(false);
        // The user is done (close frame, end of input, protocol error, drain): the core sees end of input and what
        // it still sends reaches the user.
        core.ShutdownSend();
        if (await Task.WhenAny(fromCore, Task.Delay(TimeSpan.FromSeconds(5), CancellationToken.None)).ConfigureAwait(false) != fromCore)
            await core.DisposeAsync().ConfigureAwait(false);
        try { await fromCore.ConfigureAwait(false); }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or SocketException) { }
    }

    /// <summary>
    /// websocket { authorization { timeout } }: when the core requires auth (its INFO, or this block's override) and
    /// no CONNECT has been forwarded when the block's timeout passes, the user gets what the core would send at its
    /// own auth timeout (server/client.go authTimeout): <c>-ERR 'Authentication Timeout'</c>, then the close frame
    /// nats-server sends for it. Null when the block sets no timeout.
    /// </summary>
    private Timer? StartAuthTimer(CoreLink core)
    {
        if (options.AuthTimeout is not { } timeout) return null;
        bool required = options.AuthOverride || (core.Info["auth_required"]?.GetValueKind() == System.Text.Json.JsonValueKind.True);
        if (!required) return null;
        return new Timer(_ => _ = AuthTimeoutAsync(), null, timeout, Timeout.InfiniteTimeSpan);
    }

    private async Task AuthTimeoutAsync()
    {
        if (Volatile.Read(ref _connectForwarded)) return;
        log.LogError("{Ip}:{Port} - Authentication Timeout", RemoteIp, _remote.Port);
        try
        {
            await _writeLock.WaitAsync().ConfigureAwait(false);
            try
            {
                if (_closeSent || Volatile.Read(ref _connectForwarded)) return;
                var frame = new ArrayBufferWriter<byte>(64);
                FrameHeader.Append(frame, WsOpcode.Binary, "-ERR 'Authentication Timeout'\r\n"u8);
                await _user.WriteAsync(frame.WrittenMemory).ConfigureAwait(false);
            }
            finally
            {
                _writeLock.Release();
            }
            await SendCloseAsync(WsCloseStatus.PolicyViolation, "Authentication Timeout").ConfigureAwait(false);
            socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or SocketException)
        {
            // The user or the session is already gone.
        }
    }

    private async Task UserToCoreAsync(CoreLink core, CancellationToken drain)
    {
        using var decoder = new FrameDecoder(requireMask: !_upgrade.NoMasking, compressionNegotiated: _upgrade.Compress);
        using var buffer = new AdaptiveReadBuffer();
        while (!_userClosed)
        {
            int n;
            try
            {
                n = await _user.ReadAsync(buffer.Memory, drain).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or SocketException)
            {
                return;
            }
            if (n == 0) return;
            bool ok = decoder.Decode(buffer.Filled(n).Span, this);
            if (!_connectForwarded)
            {
                ForwardConnectWhenComplete(core);
                if (_connectForwarded)
                {
                    _network!.ResumeOnThreadPool = false; // now a byte pump
                    core.ReleaseInfo();
                }
            }
            if (_toCore.WrittenCount > 0 && (_connectForwarded || !ok || _userClosed))
            {
                try
                {
                    await core.Stream.WriteAsync(_toCore.WrittenMemory, CancellationToken.None).ConfigureAwait(false);
                }
                catch (IOException)
                {
                    return; // the core closed; its last words still reach the user
                }
                _toCore.ResetWrittenCount();
            }
            if (!ok)
            {
                log.LogError("{Ip}:{Port} - websocket protocol error: {Error}", RemoteIp, _remote.Port, decoder.Error);
                await SendCloseAsync(decoder.ErrorStatus, decoder.Error!).ConfigureAwait(false);
                return;
            }
            if (_controlOut.WrittenCount > 0) await FlushControlAsync().ConfigureAwait(false);
            buffer.Read(n);
        }
    }

    public void Data(ReadOnlySpan<byte> payload) => _toCore.Write(payload);

    public void Control(byte opcode, ReadOnlySpan<byte> payload)
    {
        switch (opcode)
        {
            case WsOpcode.Ping:
                FrameHeader.Append(_controlOut, WsOpcode.Pong, payload);
                break;
            case WsOpcode.Close:
                // server/websocket.go wsHandleControlFrame: echo the status (1005 when none) and body; an invalid
                // UTF-8 body is answered 1007.
                ushort status = WsCloseStatus.NoStatus;
                string body = "";
                if (payload.Length >= 2)
                {
                    status = System.Buffers.Binary.BinaryPrimitives.ReadUInt16BigEndian(payload);
                    if (payload.Length > 2)
                    {
                        if (System.Text.Unicode.Utf8.IsValid(payload[2..])) body = Encoding.UTF8.GetString(payload[2..]);
                        else (status, body) = (WsCloseStatus.InvalidPayload, "invalid utf8 body in close frame");
                    }
                }
                FrameHeader.Append(_controlOut, WsOpcode.Close, FrameHeader.CloseBody(status, body));
                _closeSent = true;
                _userClosed = true;
                break;
        }
    }

    private async Task FlushControlAsync()
    {
        await _writeLock.WaitAsync().ConfigureAwait(false);
        try
        {
            await _user.WriteAsync(_controlOut.WrittenMemory).ConfigureAwait(false);
            await _user.FlushAsync().ConfigureAwait(false);
        }
        finally
        {
            _controlOut.ResetWrittenCount();
            _writeLock.Release();
        }
    }

    /// <summary>The first line is the CONNECT: add the proxy fields (and the cookie's JWT), once it is complete.</summary>
    private void ForwardConnectWhenComplete(CoreLink core)
    {
        var pending = _toCore.WrittenSpan;
        int lf = pending.IndexOf((byte)'\n');
        if (lf < 0)
        {
            if (pending.Length > options.MaxControlLine + 2) _connectForwarded = true; // the core refuses it as it would
            return;
        }
        _connectForwarded = true;
        int lineEnd = lf > 0 && pending[lf - 1] == '\r' ? lf - 1 : lf;
        var line = pending[..lineEnd].ToArray();
        if (HasCookies(_upgrade)) line = WithCookieCredentials(line, _upgrade);
        var client = new ProxiedClient
        {
            Gateway = "websocket",
            Ip = _upgrade.ForwardedFor ?? RemoteIp,
            Port = _remote.Port,
            NoAuthUser = options.NoAuthUser,
            WebSocketOrigin = _upgrade.Origin,
        };
        if (_user is SslStream ssl)
        {
            client.TlsVersion = ssl.SslProtocol switch { SslProtocols.Tls13 => "1.3", SslProtocols.Tls12 => "1.2", _ => ssl.SslProtocol.ToString() };
            client.TlsCipherSuite = GoCipherSuites.Name(ssl.NegotiatedCipherSuite);
        }
        var rewritten = CoreLink.RewriteConnect(line, signer, core.Nonce, client);
        if (rewritten is null && !HasCookies(_upgrade)) return;
        rewritten ??= [.. line, (byte)'\r', (byte)'\n'];
        var rest = pending[(lf + 1)..].ToArray();
        _toCore.ResetWrittenCount();
        _toCore.Write(rewritten);
        _toCore.Write(rest);
    }

    private static bool HasCookies(AcceptedUpgrade u) =>
        u.CookieJwt is not null || u.CookieUser is not null || u.CookiePass is not null || u.CookieToken is not null;

    /// <summary>
    /// nats-server fills each of CONNECT's jwt, user, pass and auth_token that is missing or empty from the cookie the
    /// block names (server/client.go processConnect: jwt_cookie, user_cookie, pass_cookie, token_cookie).
    /// </summary>
    internal static byte[] WithCookieCredentials(byte[] line, AcceptedUpgrade upgrade)
    {
        if (!CoreLink.IsConnect(line)) return line;
        try
        {
            // Invalid UTF-8 read as Go reads it (U+FFFD): JsonNode would throw when the object is written back (GoUtf8).
            if (JsonNode.Parse(NatsBroker.Transport.Text.GoUtf8.RepairCopy(line.AsSpan(8).Trim(" \t"u8))) is not JsonObject obj) return line;
            bool changed = false;
            void Fill(string field, string? cookie)
            {
                if (string.IsNullOrEmpty(cookie)) return;
                if (obj[field] is JsonValue v && v.TryGetValue(out string? existing) && existing.Length > 0) return;
                obj[field] = cookie;
                changed = true;
            }
            Fill("jwt", upgrade.CookieJwt);
            Fill("user", upgrade.CookieUser);
            Fill("pass", upgrade.CookiePass);
            Fill("auth_token", upgrade.CookieToken);
            return changed ? Encoding.UTF8.GetBytes("CONNECT " + obj.ToJsonString()) : line;
        }
        catch (Exception ex) when (ex is System.Text.Json.JsonException or ArgumentException)
        {
            return line;
        }
    }

    private async Task CoreToUserAsync(CoreLink core)
    {
        // Room for the frame header before each read's bytes. Pinned: an idle session keeps a read pending into it,
        // and only the pages reads wrote become resident (PinnedBuffers says why).
        var buffer = PinnedBuffers.Rent(CoreReadArraySize);
        int last = 0;
        try
        {
            while (true)
            {
                int n = await core.Stream.ReadAsync(buffer.AsMemory(WsOpcode.MaxServerHeader, BufferSize)).ConfigureAwait(false);
                if (n == 0) break;
                last = n;
                await _writeLock.WaitAsync().ConfigureAwait(false);
                try
                {
                    if (_closeSent) continue;
                    if (_upgrade.Compress && n > CompressThreshold) await WriteDeflatedAsync(buffer.AsMemory(WsOpcode.MaxServerHeader, n)).ConfigureAwait(false);
                    else if (_upgrade.Browser && n > BrowserFrameSize)
                    {
                        // server/websocket.go wsFrameSizeForBrowsers: browsers (User-Agent "Mozilla/") get frames of at
                        // most 4 KB, which they handle better; the read is cut into such frames, all sent in one write.
                        var browserFrames = ArrayPool<byte>.Shared.Rent(FrameHeader.FramedSize(n, BrowserFrameSize));
                        try
                        {
                            int framed = FrameHeader.WriteFrames(buffer.AsSpan(WsOpcode.MaxServerHeader, n), browserFrames, BrowserFrameSize);
                            await _user.WriteAsync(browserFrames.AsMemory(0, framed)).ConfigureAwait(false);
                        }
                        finally
                        {
                            ArrayPool<byte>.Shared.Return(browserFrames);
                        }
                    }
                    else
                    {
                        int start = FrameHeader.WriteBefore(buffer, WsOpcode.MaxServerHeader, WsOpcode.Binary, false, n);
                        await _user.WriteAsync(buffer.AsMemory(start, WsOpcode.MaxServerHeader + n - start)).ConfigureAwait(false);
                    }
                }
                finally
                {
                    _writeLock.Release();
                }
                Volatile.Write(ref _userWrites, _userWrites + 1);
            }
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or SocketException or InvalidOperationException)
        {
            // Either side gone: the close below is best effort.
        }
        finally
        {
            // The core's last words may have come with its INFO (max_connections: INFO and -ERR in one write), when
            // they went to the user with our INFO and no read here saw them.
            var (status, reason) = last > 0 ? CloseFor(buffer.AsSpan(WsOpcode.MaxServerHeader, last)) : CloseFor(core.Leftover);
            PinnedBuffers.Return(buffer);
            try
            {
                await SendCloseAsync(status, reason).ConfigureAwait(false);
            }
            catch (Exception ex) when (ex is IOException or ObjectDisposedException or SocketException) { }
            try { socket.Shutdown(SocketShutdown.Both); }
            catch (Exception ex) when (ex is SocketException or ObjectDisposedException) { }
        }
    }

    /// <summary>permessage-deflate with no context takeover: each message deflated on its own (Zlib), the 00 00 ff ff tail removed.</summary>
    private async Task WriteDeflatedAsync(ReadOnlyMemory<byte> payload)
    {
        var frame = ArrayPool<byte>.Shared.Rent(WsOpcode.MaxServerHeader + payload.Length + (payload.Length >> 8) + 64);
        try
        {
            var deflater = Zlib.RentDeflater();
            int bodyEnd;
            try
            {
                bodyEnd = deflater.Compress(payload.Span, ref frame, WsOpcode.MaxServerHeader);
            }
            finally
            {
                Zlib.Return(deflater);
            }
            int start = FrameHeader.WriteBefore(frame, WsOpcode.MaxServerHeader, WsOpcode.Binary, true, bodyEnd - WsOpcode.MaxServerHeader);
            await _user.WriteAsync(frame.AsMemory(start, bodyEnd - start)).ConfigureAwait(false);
        }
        finally
        {
            ArrayPool<byte>.Shared.Return(frame);
        }
    }

    private async Task SendCloseAsync(ushort status, string reason)
    {
        await _writeLock.WaitAsync().ConfigureAwait(false);
        try
        {
            if (_closeSent) return;
            _closeSent = true;
            var frame = new ArrayBufferWriter<byte>(132);
            FrameHeader.Append(frame, WsOpcode.Close, FrameHeader.CloseBody(status, reason));
            await _user.WriteAsync(frame.WrittenMemory).ConfigureAwait(false);
            await _user.FlushAsync().ConfigureAwait(false);
        }
        finally
        {
            _writeLock.Release();
        }
    }

    /// <summary>
    /// The close status nats-server would send (wsEnqueueCloseMessage) for the reason behind the core's last -ERR;
    /// the core closing without one is the server going away. Compared ignoring case: nats-server's -ERR texts are not
    /// all capitalised as its close reasons are (2.9.10 sends "-ERR 'maximum connections exceeded'" and closes with
    /// 1008 "Maximum Connections Exceeded"; the core sends the same -ERR, which fell through to 1011 here).
    /// </summary>
    internal static (ushort Status, string Reason) CloseFor(ReadOnlySpan<byte> lastChunk)
    {
        int err = lastChunk.LastIndexOf("-ERR '"u8);
        if (err < 0) return (WsCloseStatus.GoingAway, "Server Shutdown");
        var text = Encoding.ASCII.GetString(lastChunk[(err + 6)..]).TrimEnd('\r', '\n', '\'');
        return text switch
        {
            _ when text.StartsWith("Authorization Violation", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.PolicyViolation, "Authentication Failure"),
            _ when text.StartsWith("Authentication Timeout", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.PolicyViolation, "Authentication Timeout"),
            _ when text.StartsWith("Slow Consumer", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.PolicyViolation, "Slow Consumer (Pending Bytes)"),
            _ when text.StartsWith("Maximum Connections Exceeded", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.PolicyViolation, "Maximum Connections Exceeded"),
            _ when text.StartsWith("Maximum Control Line Exceeded", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.PolicyViolation, "Maximum Control Line Exceeded"),
            _ when text.StartsWith("Maximum Subscriptions Exceeded", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.PolicyViolation, "Maximum Subscriptions Exceeded"),
            _ when text.StartsWith("Maximum Payload", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.MessageTooBig, "Maximum Message Payload Exceeded"),
            _ when text.StartsWith("Stale Connection", StringComparison.OrdinalIgnoreCase) => (WsCloseStatus.Abnormal, "Stale Connection"),
            _ when text.StartsWith("Unknown Protocol Operation", StringComparison.OrdinalIgnoreCase) || text.StartsWith("Parser Error", StringComparison.OrdinalIgnoreCase)
                => (WsCloseStatus.ProtocolError, "Parse Error"),
            _ => (WsCloseStatus.InternalError, text),
        };
    }
}
