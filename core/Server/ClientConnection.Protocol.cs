using System.Buffers;
using System.Text;
using System.Text.Json;
using NatsBroker.Auth;
using NatsBroker.Connections;
using NatsBroker.Protocol;
using NatsBroker.Subjects;
using NatsBroker.Subscriptions;

namespace NatsBroker.Server;

public sealed partial class ClientConnection
{
    private int _maxPayload;
    private bool _connectReceived;
    // nats-server's defaultOpts apply until CONNECT says otherwise (a telnet client gets +OK).
    private bool _verbose = true;
    private bool _pedantic = true;
    private bool _echo = true;
    private bool _headers;
    private bool _noResponders;
    private ClientPermissions? _permissions;

    /// <summary>
    /// The parser's handler: a struct, so <see cref="ProtocolParser.Parse{THandler}"/> is specialised for it and
    /// every callback is a direct call into this sealed class.
    /// </summary>
    /// <summary>The parser's handler type for client connections (what <see cref="Hosting.HotPathWarmup"/> instantiates the parser with).</summary>
    internal static Type ProtocolHandlerType => typeof(Handler);

    private readonly struct Handler(ClientConnection c) : IProtocolHandler
    {
        // Also stops the parser while a CONNECT waits for its password check (ClientConnection.Auth.cs).
        public bool IsClosing => c._conn.IsClosing || c._pendingAuth is not null;
        public bool HeadersEnabled => c._headers;
        public int MaxPayload => c._maxPayload;
        // Checked before every op: the connected case stays inline (no call per message).
        public bool RejectBeforeConnect() => !c._connectReceived && c.RejectBeforeConnect();
        public void OnConnect(ReadOnlySpan<byte> json) => c.ProcessConnect(json);
        public void OnInfo(ReadOnlySpan<byte> json) { }
        public void OnPing() => c.ProcessPing();
        public void OnPong() => c.ProcessPong();
        public void OnClientError(ReadOnlySpan<byte> text) => c.CloseNow(CloseReason.ParseError);
        public void OnPubArgs(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, int totalSize)
            => c.ProcessPubArgs(subject);
        public void OnPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
            => c.ProcessPub(subject, reply, headerSize, payload);
        public void OnSub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, ReadOnlySpan<byte> sid) => c.ProcessSub(subject, queue, sid);
        public void OnUnsub(ReadOnlySpan<byte> sid, long max) => c.ProcessUnsub(sid, max);
        public void OnProtocolError(ProtocolError error) => c.ProcessProtocolError(error);
    }

    private bool AwaitingAuth => !_connectReceived && _server.Auth.AuthRequired;

    private bool RejectBeforeConnect()
    {
        if (!AwaitingAuth) return false;
        // nats-server lets a client that skips CONNECT in as no_auth_user (telnet demos).
        var result = _server.Auth.AuthenticateWithoutConnect(AuthContext());
        if (!result.Success) return true;
        if (!ApplyAuth(result)) return true; // refused by the account (closing with its error)
        _connectReceived = true;
        return false;
    }

    private void ProcessConnect(ReadOnlySpan<byte> json)
    {
        ConnectOptions? opts;
        try
        {
            // Go's encoding/json reads invalid UTF-8 in strings as U+FFFD; System.Text.Json refuses it (GoUtf8).
            opts = System.Text.Unicode.Utf8.IsValid(json)
                ? JsonSerializer.Deserialize(json, ProtocolJsonContext.Default.ConnectOptions)
                : JsonSerializer.Deserialize(NatsBroker.Transport.Text.GoUtf8.RepairCopy(json), ProtocolJsonContext.Default.ConnectOptions);
        }
        catch (JsonException)
        {
            opts = null;
        }
        if (opts is null)
        {
            // nats-server returns the JSON error from processConnect and closes without an -ERR.
            CloseNow(CloseReason.ParseError);
            return;
        }
        // A trusted gateway's signature and end-user details (ClientConnection.Proxy.cs); false = rejected and closing.
        if (!ApplyProxy(opts)) return;
        Connect = opts;
        _verbose = opts.Verbose;
        _pedantic = opts.Pedantic;
        _echo = opts.Echo;
        _headers = opts.Headers && !_server.Options.NoHeaderSupport;
        _noResponders = opts.NoResponders;

        if (_server.Auth.AuthRequired || ListenerAuthOverride is not null || opts.User is not null || opts.AuthToken is not null || opts.Nkey is not null)
        {
            // A bcrypt check continues off this thread: the read loop resumes in CompletePendingConnectAsync.
            if (!AuthenticateConnect(opts)) return;
        }
        else if (!BindAccount(null))
        {
            return;
        }
        _connectReceived = true;
        FinishConnect(opts);
    }

    /// <summary>The rest of CONNECT once authenticated, in nats-server's order (client.go processConnect).</summary>
    private void FinishConnect(ConnectOptions opts)
    {
        if (opts.Protocol < 0 || opts.Protocol > 1)
        {
            SendErrorAndClose(ErrorMessages.InvalidClientProtocol, CloseReason.BadClientProtocolVersion);
            return;
        }
        if (_noResponders && !_headers)
        {
            SendErrorAndClose(ErrorMessages.NoRespondersRequiresHeaders, CloseReason.NoRespondersRequiresHeaders);
            return;
        }
        // CONNECT gives a first RTT estimate (time since accept) and restarts the ping timer, as nats-server does
        // (client.go processConnect: c.rtt = computeRTT(c.start); setFirstPingTimer from there).
        long now = Environment.TickCount64;
        _conn.KeepAlive.SetRtt(now - _conn.ConnectedTicks);
        _conn.KeepAlive.Restart(now, KeepAlivePolicyNow);
        if (_verbose) EnqueueProto(ProtocolWriter.Ok);
        if (!IsInternal) _server.SystemServices?.ClientConnected(this);
    }

    private ClientAuthContext AuthContext() => new()
    {
        ClientId = Id,
        Nonce = Nonce,
        Override = ListenerAuthOverride,
        RemoteEndPoint = System.Net.IPAddress.TryParse(RemoteIp, out var ip) ? new System.Net.IPEndPoint(ip, RemotePort) : null,
    };

    /// <summary>Binds the authenticated identity and its account; false when the account refuses it (closing).</summary>
    private bool ApplyAuth(AuthResult result)
    {
        if (!BindAccount(result.Account)) return false;
        AuthorizedUser = result.User;
        _permissions = result.Permissions;
        ScheduleExpiry(result.Expires);
        return true;
    }

    private void ProcessPing()
    {
        EnqueueProto(ProtocolWriter.Pong, wake: false);
        _conn.Batch.Add(this);
    }

    private void ProcessPubArgs(ReadOnlySpan<byte> subject)
    {
        // nats-server sends the error but still processes the message (client.go processPub).
        if (_pedantic && !Subject.IsValidLiteral(subject)) SendError(ErrorMessages.InvalidPublishSubject);
    }

    private void ProcessSub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, ReadOnlySpan<byte> sid)
    {
        if (!ClientPermissions.IsSubscribeAllowed(_permissions, subject, queue, out bool filterDeliveries))
        {
            SendError(AuthErrors.SubscriptionViolation(subject, queue));
            return;
        }
        int maxTokens = _server.Options.MaxSubTokens;
        if (maxTokens > 0 && Subject.CountTokens(subject) > maxTokens)
        {
            SendError(AuthErrors.SubscriptionTooManyTokens(subject));
            return;
        }
        string sidKey = Encoding.UTF8.GetString(sid);
        lock (_subsLock)
        {
            int max = EffectiveMaxSubscriptions();
            if (max > 0 && _subs.Count >= max)
            {
                SendError(ErrorMessages.MaxSubscriptionsExceeded);
                return;
            }
            // A SUB that reuses a live sid is ignored, as in nats-server.
            if (_subs.ContainsKey(sidKey))
            {
                if (_verbose) EnqueueProto(ProtocolWriter.Ok);
                return;
            }
            var sub = new Subscription(subject.ToArray(), queue.IsEmpty ? null : queue.ToArray(), sid.ToArray(), this)
            {
                FilterDeliveries = filterDeliveries,
            };
            if (!_account.Router.SubList.Insert(sub))
            {
                SendError(ErrorMessages.InvalidSubject);
                return;
            }
            _subs[sidKey] = sub;
        }
        if (_verbose) EnqueueProto(ProtocolWriter.Ok);
    }

    private void ProcessUnsub(ReadOnlySpan<byte> sid, long max)
    {
        string sidKey = Encoding.UTF8.GetString(sid);
        Subscription? toRemove = null;
        lock (_subsLock)
        {
            if (_subs.TryGetValue(sidKey, out var sub))
            {
                // Under the delivery lock, so no concurrent delivery can slip past max (client.go processUnsub
                // and deliverMsg both hold the subscriber's client lock).
                bool keep;
                lock (_conn.OutboundLock)
                {
                    keep = max > 0 && max > sub.Delivered;
                    if (keep) sub.MaxMessages = max;
                    else sub.Closed = true;
                }
                if (!keep)
                {
                    _subs.Remove(sidKey);
                    toRemove = sub;
                }
            }
        }
        if (toRemove is not null)
        {
            _account.Router.SubList.Remove(toRemove);
            _account.TrackedReplies.SubscriptionRemoved(toRemove);
        }
        if (_verbose) EnqueueProto(ProtocolWriter.Ok);
    }

    /// <summary>Auto-unsubscribe reached its limit (already marked closed); called by the delivering thread.</summary>
    internal void RemoveSubscription(Subscription sub)
    {
        bool removed;
        lock (_subsLock)
        {
            string sidKey = Encoding.UTF8.GetString(sub.Sid);
            removed = _subs.TryGetValue(sidKey, out var existing) && ReferenceEquals(existing, sub) && _subs.Remove(sidKey);
        }
        sub.Closed = true;
        if (removed) _account.Router.SubList.Remove(sub);
    }

    private void ProcessProtocolError(ProtocolError error)
    {
        switch (error)
        {
            case ProtocolError.UnknownOperation:
                SendErrorAndClose(ErrorMessages.UnknownProtocolOperation, CloseReason.ParseError);
                break;
            case ProtocolError.MaxControlLineExceeded:
                SendErrorAndClose(ErrorMessages.MaxControlLineExceeded, CloseReason.MaxControlLineExceeded);
                break;
            case ProtocolError.MaxPayloadViolation:
                SendErrorAndClose(ErrorMessages.MaxPayloadViolation, CloseReason.MaxPayloadExceeded);
                break;
            case ProtocolError.AuthorizationViolation:
                SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
                break;
            default:
                CloseAfterFlush(CloseReason.ProtocolViolation);
                break;
        }
    }

    /// <summary>Called by the server heartbeat; the connection checks the deadlines and keep-alive (Connection.Heartbeat.cs).</summary>
    internal void OnHeartbeat(long nowTicks) => _conn.OnHeartbeat(nowTicks);

    TimeSpan? IConnectionHandler.HandshakeTimeout
    {
        get
        {
            if (!AwaitingAuth) return null;
            // An auth callout in flight ends itself within auth_timeout (PasswordHashingRequest.BoundsItsOwnWait).
            if (_pendingAuth is { BoundsItsOwnWait: true }) return Timeout.InfiniteTimeSpan;
            var opts = _server.Options;
            var authTimeout = opts.AuthTimeout;
            // A longer websocket auth timeout: the websocket gateway enforces it on its links, which arrive here on
            // the Unix socket and are not known to be WebSocket ones before CONNECT, so this timer must not fire first.
            if (Kind == TransportKind.UnixSocket && opts.WebSocketAuthTimeout is { } ws && ws > authTimeout) authTimeout = ws;
            return authTimeout;
        }
    }

    void IConnectionHandler.OnHandshakeTimeout()
    {
        SendErrorAndClose(ErrorMessages.AuthenticationTimeout, CloseReason.AuthenticationTimeout);
        AbandonPendingAuth();
    }

    KeepAlivePolicy IConnectionHandler.KeepAlivePolicy => KeepAlivePolicyNow;

    private KeepAlivePolicy KeepAlivePolicyNow
    {
        get
        {
            var opts = _server.Options;
            return KeepAlivePolicy.Client(opts.PingInterval, opts.MaxPingsOut);
        }
    }

    void IConnectionHandler.SendPing() => EnqueueProto(ProtocolWriter.Ping);

    void IConnectionHandler.OnStale() => SendErrorAndClose(ErrorMessages.StaleConnection, CloseReason.StaleConnection);

    private void ProcessPong() => _conn.KeepAlive.OnPong(Environment.TickCount64);

}
