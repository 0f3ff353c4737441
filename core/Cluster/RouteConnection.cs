using System.Buffers;
using System.Text.Json;
using NatsBroker.Connections;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Server;

namespace NatsBroker.Cluster;

/// <summary>
/// The route protocol on a <see cref="Connection"/> (core/Connections/README.md), as nats-server runs a ROUTER
/// client: the handshake (route.go createRoute, processRouteConnect, processRouteInfo), keep-alive, and, split by
/// concern, interest (RouteConnection.Interest.cs) and messages (RouteConnection.Messages.cs). Stage 1 of
/// docs/design/routes.md: one connection per peer carrying every account, as a 2.9 node.
/// </summary>
/// <remarks>Lock order: <c>_subsLock</c> → SubList lock → <see cref="Connection.OutboundLock"/>.</remarks>
public sealed partial class RouteConnection : IConnectionHandler, IRouteProtocolHandler
{
    private readonly RouteManager _manager;
    private readonly Connection _conn;
    private readonly RouteProtocolParser _parser;
    private bool _connectReceived;
    private bool _infoReceived;
    private volatile bool _registered;
    private Task? _run;
    private byte[] _pinnedBytes = [];
    // Completes once registered and the first PONG came back (auth proven: the pool may grow), or at close.
    private readonly TaskCompletionSource _handshake = new(TaskCreationOptions.RunContinuationsAsynchronously);

    internal RouteConnection(RouteManager manager, ulong id, Stream stream, TransportKind kind, string remoteIp, int remotePort, Uri? solicitedUrl, bool configured, string? pinnedAccount = null)
    {
        _manager = manager;
        if (pinnedAccount is not null) SetPinnedAccount(pinnedAccount);
        Id = id;
        RemoteIp = remoteIp;
        RemotePort = remotePort;
        SolicitedUrl = solicitedUrl;
        IsConfigured = configured;
        _conn = new Connection(stream, kind, manager.Limits, this);
        _parser = new RouteProtocolParser(ConnectionKind.Route, manager.MaxControlLine);
    }

    /// <summary>The route id (<c>rid</c> in logs and /routez).</summary>
    public ulong Id { get; }
    public string RemoteIp { get; }
    public int RemotePort { get; }
    /// <summary>The URL we dialled; null for an accepted route.</summary>
    public Uri? SolicitedUrl { get; }
    public bool DidSolicit => SolicitedUrl is not null;
    /// <summary>Dialled because it is in the config's <c>routes</c> (explicit), not learnt by gossip (implicit).</summary>
    public bool IsConfigured { get; }
    /// <summary>The peer's server ID: from its CONNECT (accepted) or INFO.</summary>
    public string? RemoteId { get; private set; }
    public string? RemoteName => RemoteInfo?.ServerName;
    /// <summary>The peer's first INFO.</summary>
    public RouteInfo? RemoteInfo { get; private set; }
    /// <summary>The peer's client URLs, as last announced (removed from our clients' INFO when it goes or enters lame duck).</summary>
    public string[] ClientConnectUrls { get; private set; } = [];
    /// <summary>Registered as the route to its peer (not a duplicate being closed).</summary>
    public bool IsRegistered => _registered;
    public bool IsClosed => _conn.IsClosing;
    public CloseReason? ClosedReason => _conn.ClosedReason;
    public DateTime ConnectedAt => _conn.ConnectedAt;
    public DateTime LastActivity => ConnectedAt.AddMilliseconds(Math.Max(0, _conn.LastInputTicks - _conn.ConnectedTicks));
    public TimeSpan Rtt => _conn.KeepAlive.Rtt;
    public long InMsgs => _conn.InMsgs;
    public long InBytes => _conn.InBytes;
    public long OutMsgs => _conn.OutMsgs;
    public long OutBytes => _conn.OutBytes;
    public long PendingBytes => _conn.PendingBytes;
    /// <summary>The account this connection is dedicated to (a pinned account, 2.10+); null for a pooled or no-pool one.</summary>
    public string? PinnedAccountName { get; private set; }
    /// <summary>The pool slot it holds (0 for a no-pool or pinned connection).</summary>
    public int PoolIndex { get; private set; }
    /// <summary>The peer does not pool: this one connection carries every account.</summary>
    public bool NoPool { get; private set; }
    /// <summary>Not to be dialled again when it closes (a pinned route the peer cannot have, a full pool).</summary>
    public bool NoReconnect { get; private set; }
    /// <summary>Closed because every slot of the peer's pool was taken (its loop waits for a free slot).</summary>
    public bool PoolWasFull { get; private set; }
    /// <summary>Completes once registered and answered (first PONG), or when it closes.</summary>
    internal Task Handshake => _handshake.Task;

    /// <summary>Completes when the connection has closed and cleaned up.</summary>
    public Task Completion => _run ?? Task.CompletedTask;

    private ClusterLog Log => _manager.Log;

    /// <summary>Starts the connection (once).</summary>
    internal Task RunAsync(bool onAcceptLoop = false) => _run = _conn.RunAsync(onAcceptLoop);

    internal void Close(CloseReason reason) => _conn.CloseAfterFlush(reason);

    internal void OnHeartbeat(long nowTicks) => _conn.OnHeartbeat(nowTicks);

    // ---- IConnectionHandler ----

    bool IConnectionHandler.OnStart()
    {
        Log.RouteCreated(RemoteIp, RemotePort, Id);
        // The soliciting side sends CONNECT, then its INFO; the accepting side its INFO and waits for CONNECT
        // (route.go createRoute; 2.9: both INFOs at once).
        // 2.10+: a pooled solicitor delays its INFO until it read the acceptor's, to name the slot it took
        // (route.go routeShouldDelayInfo); a pinned one sends it at once with its account.
        if (DidSolicit) SendConnect();
        if (!DidSolicit || PinnedAccountName is not null || !_manager.Pooling) SendInfo(_manager.CreateInfo(PinnedAccountName));
        return true;
    }

    SequencePosition IConnectionHandler.OnInput(in ReadOnlySequence<byte> buffer, out SequencePosition examined) =>
        _parser.Parse(buffer, this, out examined);

    Task? IConnectionHandler.CompletePendingInput() => null;

    void IConnectionHandler.OnSlowConsumer(CloseReason reason) => Log.RouteSlowConsumer(RemoteIp, RemotePort, Id);

    void IConnectionHandler.OnProducerStalled()
    {
    }

    // Only an accepted route has a deadline for its CONNECT (route.go createRoute: auth timer when !didSolicit).
    TimeSpan? IConnectionHandler.HandshakeTimeout => !DidSolicit && !_connectReceived ? _manager.Options.AuthTimeout : null;

    void IConnectionHandler.OnHandshakeTimeout() => SendErrorAndClose(ErrorMessages.AuthenticationTimeout, CloseReason.AuthenticationTimeout);

    KeepAlivePolicy IConnectionHandler.KeepAlivePolicy => _manager.KeepAlive;

    void IConnectionHandler.SendPing() => _conn.Enqueue("PING\r\n"u8);

    void IConnectionHandler.OnStale() => SendErrorAndClose(ErrorMessages.StaleConnection, CloseReason.StaleConnection);

    void IConnectionHandler.OnLoopFault(Exception exception) => Log.RouteLoopFault(exception, Id);

    void IConnectionHandler.OnClosing()
    {
        RemoveRemoteSubscriptions();
        _manager.OnRouteClosing(this);
    }

    void IConnectionHandler.OnClosed()
    {
        _handshake.TrySetResult();
        var reason = _conn.ClosedReason ?? CloseReason.ClientClosed;
        Log.RouteClosed(RemoteIp, RemotePort, Id, reason.ToNatsString());
    }

    // ---- IRouteProtocolHandler: handshake ----

    bool IRouteProtocolHandler.RejectBeforeConnect(bool isInfo) => !DidSolicit && !_connectReceived;
    bool IRouteProtocolHandler.IsClosing => _conn.IsClosing;
    ReadOnlySpan<byte> IRouteProtocolHandler.PinnedAccount => _pinnedBytes;
    bool IRouteProtocolHandler.LeafUnsubHasOrigin => false;
    bool IRouteProtocolHandler.HeadersEnabled => true;
    int IRouteProtocolHandler.MaxPayload => int.MaxValue;

    void IRouteProtocolHandler.OnConnect(ReadOnlySpan<byte> json)
    {
        if (DidSolicit || _connectReceived) return;
        RouteConnect? connect;
        try
        {
            connect = JsonSerializer.Deserialize(json, RouteJsonContext.Default.RouteConnect);
        }
        catch (JsonException)
        {
            connect = null;
        }
        if (connect is null)
        {
            _conn.CloseNow(CloseReason.ParseError);
            return;
        }
        // A client speaks CONNECT with `lang`; a route never does (route.go processRouteConnect).
        if (!string.IsNullOrEmpty(connect.Lang))
        {
            SendErrorAndClose("attempted to connect to route port", CloseReason.WrongPort);
            return;
        }
        if (!string.IsNullOrEmpty(connect.Gateway))
        {
            string text = $"Rejecting connection from gateway \"{connect.Gateway}\" on the Route port";
            Log.RouteError(RemoteIp, RemotePort, Id, text);
            SendErrorAndClose(text, CloseReason.WrongGateway);
            return;
        }
        if (!_manager.IsAuthorized(connect.User, connect.Pass))
        {
            SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation);
            return;
        }
        if (!_manager.AcceptClusterName(connect.Cluster, connect.Dynamic, this))
        {
            string text = $"Rejecting connection, cluster name \"{connect.Cluster}\" does not match \"{_manager.ClusterName}\"";
            Log.RouteError(RemoteIp, RemotePort, Id, text);
            SendErrorAndClose(text, CloseReason.ClusterNameConflict);
            return;
        }
        _connectReceived = true;
        RemoteId = connect.Name;
    }

    void IRouteProtocolHandler.OnInfo(ReadOnlySpan<byte> json)
    {
        RouteInfo? info;
        try
        {
            info = JsonSerializer.Deserialize(json, RouteJsonContext.Default.RouteInfo);
        }
        catch (JsonException)
        {
            info = null;
        }
        if (info is null)
        {
            _conn.CloseNow(CloseReason.ParseError);
            return;
        }
        ProcessInfo(info);
    }

    /// <summary>route.go processRouteInfo: the checks on the first INFO, in nats-server's order, then registration;
    /// later INFOs carry gossip (another server's ID) or lame duck mode.</summary>
    private void ProcessInfo(RouteInfo info)
    {
        if (info.ServerId == _manager.ServerId)
        {
            RemoteId = info.ServerId;
            _manager.MarkRouteToSelf(this);
            _conn.CloseNow(CloseReason.DuplicateRoute);
            return;
        }
        if (!string.IsNullOrEmpty(info.Cluster) && info.Cluster != _manager.ClusterName
            && !_manager.AcceptClusterName(info.Cluster, info.ClusterDynamic, this))
        {
            _conn.CloseAfterFlush(CloseReason.ClusterNameConflict);
            return;
        }
        if (_infoReceived)
        {
            if (!string.IsNullOrEmpty(info.Gateway)) return;
            if (RemoteId is not null && RemoteId != info.ServerId)
            {
                _manager.ProcessImplicitRoute(info);
                return;
            }
            if (info.LameDuckMode) _manager.OnPeerLameDuck(this);
            return;
        }
        if (!DidSolicit && info.ServerName == _manager.ServerName)
        {
            Log.RouteError(RemoteIp, RemotePort, Id, $"Remote server has a duplicate name: \"{info.ServerName}\"");
            _conn.CloseAfterFlush(CloseReason.DuplicateServerName);
            return;
        }
        _infoReceived = true;
        RemoteId = info.ServerId;
        RemoteInfo = info;
        _peerHeaders = info.Headers;
        ClientConnectUrls = info.ConnectUrls ?? [];
        // An accepted connection learns from the solicitor's INFO which account it is dedicated to.
        if (!DidSolicit && !string.IsNullOrEmpty(info.RouteAccount)) SetPinnedAccount(info.RouteAccount);
        // The URL peers learn us by when this INFO is forwarded: the advertised one, else our view of its address.
        info.Ip ??= $"nats-route://{JoinHostPort(RemoteIp, info.Port)}/";
        var (outcome, error) = _manager.TryRegister(this, info);
        switch (outcome)
        {
            case RegisterOutcome.Registered:
                _registered = true;
                // The first PONG proves the peer accepted our CONNECT; only then may the pool grow (addRoute).
                _conn.Enqueue("PING\r\n"u8);
                break;
            case RegisterOutcome.Duplicate:
                Log.DuplicateRoute(RemoteIp, RemotePort, Id, info.ServerId);
                _conn.CloseAfterFlush(CloseReason.DuplicateRoute);
                break;
            case RegisterOutcome.PoolFull:
                // route.go addRoute "Route pool size reached, closing extra connection": no redial of this one.
                NoReconnect = true;
                PoolWasFull = true;
                _conn.CloseAfterFlush(CloseReason.DuplicateRoute);
                break;
            default:
                NoReconnect = true;
                Log.RouteError(RemoteIp, RemotePort, Id, error ?? "");
                SendErrorAndClose(error ?? "", CloseReason.ProtocolViolation);
                break;
        }
    }

    private void SetPinnedAccount(string account)
    {
        PinnedAccountName = account;
        _pinnedBytes = System.Text.Encoding.UTF8.GetBytes(account);
    }

    /// <summary>
    /// The manager placed this connection (under its lock): its slot, whether the peer pools, and, for a pooled
    /// solicitor, the delayed INFO naming the slot, queued before any interest (route.go addRoute sendDelayedInfo).
    /// </summary>
    internal void OnPlaced(int poolIndex, bool noPool, RouteInfo? delayedInfo)
    {
        PoolIndex = poolIndex;
        NoPool = noPool;
        if (delayedInfo is not null) SendInfo(delayedInfo);
    }

    internal static string JoinHostPort(string host, int port) => host.Contains(':', StringComparison.Ordinal) ? $"[{host}]:{port}" : $"{host}:{port}";

    void IRouteProtocolHandler.OnPing() => _conn.Enqueue("PONG\r\n"u8);

    void IRouteProtocolHandler.OnPong()
    {
        _conn.KeepAlive.OnPong(Environment.TickCount64);
        if (_registered) _handshake.TrySetResult();
    }

    void IRouteProtocolHandler.OnError(ReadOnlySpan<byte> text)
    {
        Log.RouteError(RemoteIp, RemotePort, Id, $"Route Error {System.Text.Encoding.UTF8.GetString(text)}");
        _conn.CloseNow(CloseReason.ParseError);
    }

    void IRouteProtocolHandler.OnProtocolError(ProtocolError error)
    {
        switch (error)
        {
            case ProtocolError.UnknownOperation: SendErrorAndClose(ErrorMessages.UnknownProtocolOperation, CloseReason.ParseError); break;
            case ProtocolError.MaxControlLineExceeded: SendErrorAndClose(ErrorMessages.MaxControlLineExceeded, CloseReason.MaxControlLineExceeded); break;
            case ProtocolError.AuthorizationViolation: SendErrorAndClose(ErrorMessages.AuthorizationViolation, CloseReason.AuthenticationViolation); break;
            case ProtocolError.MaxPayloadViolation: SendErrorAndClose(ErrorMessages.MaxPayloadViolation, CloseReason.MaxPayloadExceeded); break;
            default: _conn.CloseNow(CloseReason.ParseError); break;
        }
    }

    // ---- Outbound protocol lines ----

    private void SendConnect()
    {
        var connect = new RouteConnect
        {
            User = SolicitedUrl is { UserInfo.Length: > 0 } u ? Uri.UnescapeDataString(u.UserInfo.Split(':')[0]) : null,
            Pass = SolicitedUrl is { UserInfo.Length: > 0 } p && p.UserInfo.Contains(':', StringComparison.Ordinal) ? Uri.UnescapeDataString(p.UserInfo[(p.UserInfo.IndexOf(':', StringComparison.Ordinal) + 1)..]) : null,
            TlsRequired = false,
            Headers = true,
            Name = _manager.ServerId,
            Cluster = _manager.ClusterName,
            Dynamic = _manager.IsClusterNameDynamic,
            Lnoc = true,
        };
        var json = JsonSerializer.SerializeToUtf8Bytes(connect, RouteJsonContext.Default.RouteConnect);
        SendLine("CONNECT "u8, json);
    }

    /// <summary>Queues an INFO (our first, a forwarded peer's for gossip, or an update such as lame duck).</summary>
    internal void SendInfo(RouteInfo info) => SendLine("INFO "u8, JsonSerializer.SerializeToUtf8Bytes(info, RouteJsonContext.Default.RouteInfo));

    private void SendLine(ReadOnlySpan<byte> op, ReadOnlySpan<byte> json)
    {
        var line = new byte[op.Length + json.Length + 2];
        op.CopyTo(line);
        json.CopyTo(line.AsSpan(op.Length));
        line[^2] = (byte)'\r';
        line[^1] = (byte)'\n';
        _conn.Enqueue(line);
    }

    private void SendErrorAndClose(string text, CloseReason reason)
    {
        _conn.Enqueue(System.Text.Encoding.UTF8.GetBytes($"-ERR '{text}'\r\n"), wake: false);
        _conn.CloseAfterFlush(reason);
    }
}

/// <summary>What <see cref="RouteManager.TryRegister"/> made of a connection.</summary>
internal enum RegisterOutcome
{
    Registered,
    /// <summary>The peer (or its slot, or its pinned account) already has a connection: close this one.</summary>
    Duplicate,
    /// <summary>Every slot of the pool is taken: close this one, do not dial it again.</summary>
    PoolFull,
    /// <summary>A protocol error to send the peer (bad pool index, an account pinned on one side only).</summary>
    Refused,
}
