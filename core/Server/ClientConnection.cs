using System.Buffers;
using NatsBroker.Auth;
using NatsBroker.Connections;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Server;

/// <summary>
/// The client protocol on a <see cref="Connection"/> (core/Connections/README.md): the connection owns the transport,
/// the read loop, the outbound buffer and writer, back-pressure and close; this type owns what the bytes mean.
/// Split by concern: Protocol (op handlers, keep-alive), Delivery (routing a PUB, MSG to this client), Outbound
/// (protocol lines to this client), Auth, Account, Proxy, Jwt.
/// </summary>
public sealed partial class ClientConnection : IConnectionHandler
{
    private readonly NatsServer _server;
    private readonly Connection _conn;
    private readonly ProtocolParser _parser;
    private readonly SubjectResultCache _l1 = new();
    private readonly Dictionary<string, Subscription> _subs = new(StringComparer.Ordinal);
    private readonly Lock _subsLock = new();
    private readonly bool _overConnectionLimit;

    internal ClientConnection(NatsServer server, ulong id, Stream stream, TransportKind kind, string remoteIp, int remotePort, bool overConnectionLimit = false, Accounts.Account? account = null)
    {
        _server = server;
        _account = account ?? server.Accounts.Global;
        _accountFixed = account is not null;
        Id = id;
        _conn = new Connection(stream, kind, server.ClientLimits, this);
        RemoteIp = remoteIp;
        RemotePort = remotePort;
        _overConnectionLimit = overConnectionLimit;
        _parser = new ProtocolParser(server.Options.MaxControlLine);
        _maxPayload = EffectiveMaxPayload(server.Options);
        // nats-server sends a nonce in INFO when nkey users exist (server.go nonceRequired) or proxies are trusted
        // (ADR-55), to be signed in CONNECT.
        if (server.Auth.NonceRequired || TrustsProxies(server)) Nonce = NkeyVerifier.NewNonce();
    }

    public ulong Id { get; }
    /// <summary>A server-internal session (start-up warm-up): not counted in statistics or monitoring.</summary>
    internal bool IsInternal { get; init; }
    public TransportKind Kind => _conn.Kind;
    /// <summary>The peer's address; for a connection relayed by a trusted gateway, the end user's (ClientConnection.Proxy.cs).</summary>
    public string RemoteIp { get; private set; }
    public int RemotePort { get; private set; }
    public DateTime ConnectedAt => _conn.ConnectedAt;
    /// <summary>Time of the last read from the client (millisecond resolution, derived from the read loop's tick stamp).</summary>
    public DateTime LastActivity => ConnectedAt.AddMilliseconds(Math.Max(0, _conn.LastInputTicks - _conn.ConnectedTicks));
    public ConnectOptions? Connect { get; private set; }
    public string? AuthorizedUser { get; private set; }
    /// <summary>The nonce sent in INFO (nkey users sign it); null when none was sent.</summary>
    public string? Nonce { get; }
    /// <summary>The account this client publishes and subscribes in (<c>$G</c> until authentication binds another).</summary>
    public Accounts.Account Account => _account;
    public CloseReason? ClosedReason => _conn.ClosedReason;
    public DateTime? ClosedAt => _conn.ClosedAt;

    // Counters for /varz and /connz, kept by the connection.
    public long InMsgs => _conn.InMsgs;
    public long InBytes => _conn.InBytes;
    public long OutMsgs => _conn.OutMsgs;
    public long OutBytes => _conn.OutBytes;

    public int SubscriptionCount { get { lock (_subsLock) return _subs.Count; } }
    public long PendingBytes => _conn.PendingBytes;
    public bool IsClosed => _conn.IsClosing;

    internal List<Subscription> SnapshotSubscriptions()
    {
        lock (_subsLock) return [.. _subs.Values];
    }

    /// <summary>Runs the connection until it closes: sends INFO, then reads and writes concurrently.</summary>
    /// <param name="onAcceptLoop">Called on the accept loop's thread (see <see cref="Connection.RunAsync"/>).</param>
    internal Task RunAsync(bool onAcceptLoop = false) => _conn.RunAsync(onAcceptLoop);

    bool IConnectionHandler.OnStart()
    {
        SendInfo();
        if (!_overConnectionLimit) return true;
        SendErrorAndClose(ErrorMessages.MaxConnectionsExceeded, CloseReason.MaxConnectionsExceeded);
        return false;
    }

    SequencePosition IConnectionHandler.OnInput(in ReadOnlySequence<byte> buffer, out SequencePosition examined) =>
        _parser.Parse(buffer, new Handler(this), out examined);

    // The parser stopped after a CONNECT whose password is being checked off this thread (ClientConnection.Auth.cs).
    Task? IConnectionHandler.CompletePendingInput() => _pendingAuth is null ? null : CompletePendingConnectAsync();

    void IConnectionHandler.OnSlowConsumer(CloseReason reason)
    {
        if (reason == CloseReason.SlowConsumerWriteDeadline) _server.Log.SlowConsumerWriteDeadline(Id, RemoteIp);
        else _server.Log.SlowConsumerPending(Id, RemoteIp);
        _server.CountSlowConsumer();
    }

    void IConnectionHandler.OnProducerStalled() => _server.CountStall();

    void IConnectionHandler.OnLoopFault(Exception exception) => _server.Log.ConnectionLoopFault(exception, Id);

    /// <summary>Queue -ERR, flush what is queued, then close (the client sees the error before EOF).</summary>
    internal void SendErrorAndClose(string error, CloseReason reason)
    {
        // One wake-up for both, so the client sees the error and the close together.
        SendError(error, wake: false);
        CloseAfterFlush(reason);
    }

    internal void CloseAfterFlush(CloseReason reason) => _conn.CloseAfterFlush(reason);

    /// <summary>Close at once: pending output is dropped and the transport is shut down.</summary>
    internal void CloseNow(CloseReason reason) => _conn.CloseNow(reason);

    /// <summary>Runs once, when the connection closes: removes subscriptions and lets go of the account.</summary>
    void IConnectionHandler.OnClosing()
    {
        List<Subscription> subs;
        lock (_subsLock)
        {
            subs = [.. _subs.Values];
            _subs.Clear();
        }
        foreach (var s in subs) s.Closed = true;
        FinalSubscriptions = subs;
        if (subs.Count > 0)
        {
            _account.Router.SubList.RemoveBatch(subs);
            foreach (var s in subs) _account.TrackedReplies.SubscriptionRemoved(s);
        }
        if (_accountCounted) _account.RemoveConnection();
        _expiry?.Dispose();
    }

    /// <summary>Last: unregisters from the server.</summary>
    void IConnectionHandler.OnClosed() => _server.OnClientClosed(this);
}
