using System.Net;
using System.Net.NetworkInformation;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Text;
using Microsoft.Extensions.Logging;
using NatsBroker.Accounts;
using NatsBroker.Connections;
using NatsBroker.Configuration;
using NatsBroker.Server;
using NatsBroker.Transport;

namespace NatsBroker.Cluster;

/// <summary>
/// This node's routes (route.go; docs/design/routes.md sections 1-4): the route listener, one solicit loop per
/// configured route, per pinned account and per route learnt by gossip, the registry by remote server ID
/// (<see cref="RemoteServer"/>: pool slots and pinned accounts' connections, or one connection for a peer that does
/// not pool), gossip of new peers to the others, the peers' client URLs for our clients' INFO, and the per-account
/// interest, each account's on the connection that carries it.
/// </summary>
/// <remarks>Lock order: <c>RouteInterest</c>'s lock → <c>_lock</c> → a route's outbound lock (through Enqueue of the
/// delayed INFO); nothing under <c>_lock</c> takes an interest or SubList lock.</remarks>
public sealed class RouteManager : IAsyncDisposable
{
    private readonly NatsServer _server;
    private readonly Lock _lock = new();
    private readonly Dictionary<string, RemoteServer> _remotes = new(StringComparer.Ordinal);
    // Remotes learnt by gossip being dialled now, so a repeated forward does not start a second loop.
    private readonly HashSet<string> _implicitDialing = new(StringComparer.Ordinal);
    private readonly HashSet<string> _pinned = new(StringComparer.Ordinal);
    private readonly HashSet<string> _pinnedLoops = new(StringComparer.Ordinal);
    private readonly HashSet<RouteConnection> _open = [];
    private volatile RouteConnection[] _registered = [];
    // Peers' client URLs, reference-counted (server.go addConnectURLsAndSendINFOToClients).
    private readonly Dictionary<string, int> _peerClientUrls = new(StringComparer.Ordinal);
    private readonly Dictionary<Account, RouteInterest> _interest = [];
    private readonly CancellationTokenSource _stop = new();
    private readonly List<Task> _loops = [];
    // Configured route URLs still wanted (reload removes some); solicit loops stop when theirs leaves.
    private readonly HashSet<string> _configured = new(StringComparer.OrdinalIgnoreCase);
    // host:port of routes that turned out to be ourselves (route.go routesToSelf): never dialled again.
    private readonly HashSet<string> _self = new(StringComparer.OrdinalIgnoreCase);
    private TcpConnectionListener? _listener;
    private readonly RouteTls? _tls;
    private volatile Auth.ClientPermissions? _permissions;
    private long _nextRid;
    private volatile string _clusterName;
    private volatile bool _dynamic;

    internal RouteManager(NatsServer server, ClusterOptions options, ILogger logger)
    {
        _server = server;
        Options = options;
        Log = new ClusterLog(logger);
        _dynamic = string.IsNullOrEmpty(options.Name);
        _clusterName = _dynamic ? NewDynamicName() : options.Name!;
        var so = server.Options;
        Limits = new OutboundLimits(so.MaxPending, options.WriteDeadline ?? so.WriteDeadline);
        MaxControlLine = so.MaxControlLine;
        // Routes ping like clients, the first after ~1 s; nats-server 2.10+ caps a route's interval at 30 s
        // (routeMaxPingInterval) and never skips a PING for activity.
        var interval = options.PingInterval ?? so.PingInterval;
        if (interval > ClusterOptions.MaxRoutePingInterval) interval = ClusterOptions.MaxRoutePingInterval;
        KeepAlive = new KeepAlivePolicy((long)interval.TotalMilliseconds, options.MaxPingsOut ?? so.MaxPingsOut, KeepAlivePolicy.FirstPingMs, DelayWhileActive: false);
        foreach (var url in options.Routes) _configured.Add(url.ToString());
        // Certificates load now, so a bad cert_file/key_file/ca_file fails start-up rather than each route.
        _tls = options.Tls is { } tls ? new RouteTls(tls, options.TlsInsecure) : null;
        _permissions = Auth.ClientPermissions.Create(options.Permissions);
        // opts.go setBaselineOptions: with pooling the system account is pinned too.
        PoolSize = options.PoolSize;
        if (PoolSize > 0)
        {
            foreach (var a in options.PinnedAccounts) _pinned.Add(a);
            _pinned.Add(server.Accounts.System?.Name ?? "$SYS");
        }
    }

    /// <summary>Our pool size; below 1 this node does not pool (a peer then gets one connection for everything).</summary>
    public int PoolSize { get; }

    /// <summary>Pooled connections per peer (2.10+); a pooled solicitor delays its INFO.</summary>
    internal bool Pooling => PoolSize > 0;

    /// <summary>The accounts with a dedicated connection per peer.</summary>
    public IReadOnlyCollection<string> PinnedAccounts => _pinned;

    /// <summary>route.go computeRoutePoolIdx: FNV-1a 32 of the account name, modulo our pool size.</summary>
    internal int PoolIndexOf(string account)
    {
        if (PoolSize <= 1) return 0;
        uint h = 2166136261;
        foreach (byte b in Encoding.UTF8.GetBytes(account))
        {
            h ^= b;
            h *= 16777619;
        }
        return (int)(h % (uint)PoolSize);
    }

    /// <summary>Whether <paramref name="route"/> carries <paramref name="account"/>'s interest (route.go sendSubsToRoute).</summary>
    internal bool Carries(RouteConnection route, string account) =>
        route.NoPool || (route.PinnedAccountName is { } p ? p == account : !_pinned.Contains(account) && PoolIndexOf(account) == route.PoolIndex);

    /// <summary>Per peer, the connection that carries <paramref name="account"/>'s interest now (may be none yet).</summary>
    internal List<RouteConnection> TargetsFor(string account)
    {
        var targets = new List<RouteConnection>();
        bool pinned = _pinned.Contains(account);
        int idx = PoolIndexOf(account);
        lock (_lock)
        {
            foreach (var remote in _remotes.Values)
            {
                RouteConnection? t = remote.NoPool ? remote.Slots[0]
                    : pinned ? remote.Pinned.GetValueOrDefault(account)
                    : idx < remote.Slots.Length ? remote.Slots[idx] : null;
                if (t is not null) targets.Add(t);
            }
        }
        return targets;
    }

    /// <summary>Distinct peers with at least one registered connection.</summary>
    public int RemoteCount
    {
        get { lock (_lock) return _remotes.Count; }
    }

    /// <summary>route.go canImport: we announce interest (and so receive messages) only for importable subjects.</summary>
    internal bool CanImport(ReadOnlySpan<byte> subject) => _permissions is not { } p || p.CanPublish(subject);

    /// <summary>route.go canExport: a peer's interest is accepted only for exportable subjects.</summary>
    internal bool CanExport(ReadOnlySpan<byte> subject) => _permissions is not { } p || p.CanSubscribe(subject);

    internal ClusterLog Log { get; }
    internal OutboundLimits Limits { get; }
    internal int MaxControlLine { get; }
    internal KeepAlivePolicy KeepAlive { get; }
    public ClusterOptions Options { get; private set; }
    public string ServerId => _server.ServerId;
    public string ServerName => _server.ServerName;
    public string ClusterName => _clusterName;
    public bool IsClusterNameDynamic => _dynamic;
    /// <summary>The bound route port (resolved when -1 asked for a random one).</summary>
    public int Port { get; private set; }

    /// <summary>Routes registered as the one to their peer, one per remote server.</summary>
    public IReadOnlyList<RouteConnection> Registered => _registered;

    /// <summary>Every open route connection, registered or still in its handshake (for /routez and shutdown).</summary>
    public List<RouteConnection> Snapshot()
    {
        lock (_lock) return [.. _open];
    }

    /// <summary>Binds the route port, starts announcing interest and dials the configured routes.</summary>
    public void Start()
    {
        var o = Options;
        Log.ClusterName(_clusterName);
        if (_dynamic) Log.DynamicClusterName();
        var address = o.Host is "0.0.0.0" or "" or "*" ? IPAddress.Any
            : o.Host is "::" ? IPAddress.IPv6Any
            : IPAddress.TryParse(o.Host, out var ip) ? ip
            : Dns.GetHostAddresses(o.Host).First();
        _listener = new TcpConnectionListener(address, o.Port < 0 ? 0 : o.Port);
        Port = _listener.Port;
        Log.Listening(RouteConnection.JoinHostPort(o.Host, Port));

        _server.Accounts.Added += AttachInterest;
        foreach (var account in _server.Accounts.All) AttachInterest(account);

        lock (_lock)
        {
            _loops.Add(AcceptLoopAsync(_listener));
            foreach (var url in o.Routes) _loops.Add(SolicitLoopAsync(url, configured: true, retries: 0));
        }
    }

    private void AttachInterest(Account account)
    {
        var interest = new RouteInterest(this, account.Name);
        lock (_lock)
        {
            if (!_interest.TryAdd(account, interest)) return;
        }
        account.Router.SubList.SetInterestObserver(interest, interest.Seed);
    }

    internal Account? FindAccount(ReadOnlySpan<byte> name) => _server.Accounts.Find(Encoding.UTF8.GetString(name));

    // ---- The handshake's questions ----

    /// <summary>Route authorization (auth.go isRouterAuthorized): no cluster user = anyone; else user and password
    /// (plain or bcrypt) must match.</summary>
    internal bool IsAuthorized(string? user, string? pass)
    {
        var o = Options;
        if (string.IsNullOrEmpty(o.User)) return true;
        if (user != o.User || pass is null || o.Password is null) return false;
        return Auth.Bcrypt.IsBcryptHash(o.Password) ? Auth.Bcrypt.Verify(pass, o.Password) : pass == o.Password;
    }

    /// <summary>
    /// A peer's cluster name differs from ours (route.go processRouteConnect / processRouteInfo): a dynamic name
    /// takes the peer's when the peer's is configured or sorts higher, and every other route is dropped; otherwise
    /// the connection is refused. True when the names now agree.
    /// </summary>
    internal bool AcceptClusterName(string? name, bool peerDynamic, RouteConnection from)
    {
        if (string.IsNullOrEmpty(name) || name == _clusterName) return true;
        if (!_dynamic || (peerDynamic && string.CompareOrdinal(_clusterName, name) >= 0)) return false;
        _clusterName = name;
        if (!peerDynamic) _dynamic = false;
        foreach (var r in Snapshot())
        {
            if (!ReferenceEquals(r, from)) r.Close(CloseReason.ClusterNameConflict);
        }
        return true;
    }

    internal void MarkRouteToSelf(RouteConnection route)
    {
        if (route.SolicitedUrl is { } url)
        {
            lock (_lock) _self.Add(HostPort(url));
        }
    }

    /// <summary>Our route INFO (route.go startRouteAcceptLoop).</summary>
    internal RouteInfo CreateInfo(string? account = null, int poolIndex = 0)
    {
        var o = Options;
        var so = _server.Options;
        string host = o.Host;
        int port = Port;
        string? ip = null;
        if (!string.IsNullOrEmpty(o.Advertise))
        {
            (host, port) = SplitHostPort(o.Advertise, Port);
            ip = $"nats-route://{RouteConnection.JoinHostPort(host, port)}/";
        }
        return new RouteInfo
        {
            ServerId = ServerId,
            ServerName = ServerName,
            Version = NatsServer.CompatibleVersion,
            Proto = 2,
            Go = $"dotnet{Environment.Version}",
            Host = host,
            Port = port,
            Headers = !so.NoHeaderSupport,
            AuthRequired = !string.IsNullOrEmpty(o.User),
            TlsRequired = _tls is not null,
            TlsVerify = _tls is not null,
            Import = RoutePermission.From(o.Permissions?.Publish),
            Export = RoutePermission.From(o.Permissions?.Subscribe),
            MaxPayload = so.MaxPayload,
            Ip = ip,
            ConnectUrls = o.NoAdvertise ? null : [.. _server.OwnClientConnectUrls()],
            Cluster = _clusterName,
            ClusterDynamic = _dynamic,
            Lnoc = true,
            LameDuckMode = _server.LameDuckMode,
            RoutePoolSize = Pooling ? PoolSize : 0,
            RoutePoolIndex = poolIndex,
            RouteAccount = account,
        };
    }

    // ---- Registry ----

    /// <summary>
    /// route.go addRoute. A peer that does not pool (its INFO has no <c>route_pool_size</c>, or we run pool_size -1)
    /// gets one connection: the first registered wins, a later one is a duplicate. A pooled peer gets
    /// max(ours, theirs) slots: a solicited connection takes the first free one (and names it in its delayed INFO),
    /// an accepted one the slot its solicitor named; a taken slot makes the newcomer a duplicate. A pinned account's
    /// connection must be pinned on both sides. On the first connection to a peer: its INFO goes to the other peers
    /// (gossip) and its client URLs join our clients' INFO. Every connection then gets the interest it carries.
    /// </summary>
    internal (RegisterOutcome Outcome, string? Error) TryRegister(RouteConnection route, RouteInfo info)
    {
        bool first;
        RouteConnection[] others;
        RouteInterest[] interest;
        string? account = route.PinnedAccountName;
        lock (_lock)
        {
            if (_stop.IsCancellationRequested || route.IsClosed) return (RegisterOutcome.Duplicate, null);
            bool pooled = info.RoutePoolSize > 0 && Pooling;
            _remotes.TryGetValue(info.ServerId, out var remote);
            first = remote is null;
            int idx = 0;
            if (!pooled)
            {
                if (account is not null) return (RegisterOutcome.Refused, $"Not possible to have a dedicated route for account \"{account}\" between those servers");
                if (remote is not null) return (RegisterOutcome.Duplicate, null);
                remote = new RemoteServer(info.ServerId, 1, noPool: true);
                remote.Slots[0] = route;
            }
            else if (account is not null)
            {
                if (!_pinned.Contains(account)) return (RegisterOutcome.Refused, $"No route for account \"{account}\"");
                remote ??= new RemoteServer(info.ServerId, Math.Max(PoolSize, info.RoutePoolSize), noPool: false);
                if (remote.NoPool || remote.Pinned.ContainsKey(account)) return (RegisterOutcome.Duplicate, null);
                remote.Pinned[account] = route;
            }
            else
            {
                int effective = Math.Max(PoolSize, info.RoutePoolSize);
                remote ??= new RemoteServer(info.ServerId, effective, noPool: false);
                if (remote.NoPool) return (RegisterOutcome.Duplicate, null);
                remote.Grow(effective);
                if (route.DidSolicit)
                {
                    if (info.RoutePoolIndex != 0) return (RegisterOutcome.Refused, $"Route pool index should not be set but is set to {info.RoutePoolIndex}");
                    idx = Array.IndexOf(remote.Slots, null);
                    if (idx < 0) return (RegisterOutcome.PoolFull, null);
                }
                else
                {
                    idx = info.RoutePoolIndex;
                    if (idx < 0 || idx >= effective) return (RegisterOutcome.Refused, $"Invalid route pool index: {idx} - pool size is {info.RoutePoolSize}");
                    if (remote.Slots[idx] is not null) return (RegisterOutcome.Duplicate, null);
                }
                remote.Slots[idx] = route;
            }
            _remotes[info.ServerId] = remote;
            bool delayed = route.DidSolicit && account is null && Pooling;
            route.OnPlaced(idx, remote.NoPool, delayed ? CreateInfo(poolIndex: pooled ? idx : 0) : null);
            if (first) remote.ClientUrls = route.ClientConnectUrls;
            remote.Signal();
            _registered = [.. _registered, route];
            others = first ? [.. _remotes.Values.Where(r => r != remote).Select(r => r.Any).OfType<RouteConnection>()] : [];
            interest = [.. _interest.Values];
        }
        foreach (var i in interest) i.SendAllTo(route);
        if (!first) return (RegisterOutcome.Registered, null);
        if (others.Length > 0)
        {
            // route.go forwardNewRouteInfoToKnownServers: once per new peer, to one connection of every other peer;
            // nonce cleared, ip filled in (ProcessInfo), nothing of this connection's pool slot or account.
            info.Nonce = null;
            info.RoutePoolIndex = 0;
            info.RouteAccount = null;
            foreach (var r in others) r.SendInfo(info);
        }
        if (!Options.NoAdvertise && AddPeerClientUrls(route.ClientConnectUrls)) _server.SendAsyncInfoToClients();
        // The pinned accounts' connections to a pooled peer we dialled (route.go solicitRoutes: one per account).
        if (route.DidSolicit && !route.NoPool && route.SolicitedUrl is { } url)
        {
            lock (_lock)
            {
                foreach (var acc in _pinned)
                {
                    // One loop per (route URL, account) for the life of the node: it follows the peer across restarts.
                    if (_pinnedLoops.Add(url + " " + acc)) _loops.Add(SolicitLoopAsync(url, route.IsConfigured, Options.ConnectRetries, info.ServerId, acc));
                }
            }
        }
        return (RegisterOutcome.Registered, null);
    }

    private void OnAccepted(RouteConnection route)
    {
        lock (_lock) _open.Add(route);
    }

    /// <summary>The route is closing: it leaves the registry; with the peer's last connection, its client URLs leave
    /// our clients' INFO (route.go removeRoute).</summary>
    internal void OnRouteClosing(RouteConnection route)
    {
        bool urlsChanged = false;
        lock (_lock)
        {
            _open.Remove(route);
            if (route.RemoteId is { } id && _remotes.TryGetValue(id, out var remote) && remote.Remove(route))
            {
                _registered = [.. _registered.Where(x => !ReferenceEquals(x, route))];
                if (remote.Count == 0)
                {
                    _remotes.Remove(id);
                    urlsChanged = !Options.NoAdvertise && RemovePeerClientUrlsLocked(remote.ClientUrls);
                }
                remote.Signal();
            }
        }
        if (urlsChanged) _server.SendAsyncInfoToClients();
    }

    /// <summary>The peer entered lame duck mode: its client URLs leave our clients' INFO (processRouteInfo).</summary>
    internal void OnPeerLameDuck(RouteConnection route)
    {
        bool changed = false;
        lock (_lock)
        {
            if (route.RemoteId is { } id && _remotes.TryGetValue(id, out var remote) && remote.ClientUrls.Length > 0)
            {
                changed = !Options.NoAdvertise && RemovePeerClientUrlsLocked(remote.ClientUrls);
                remote.ClientUrls = [];
            }
        }
        if (changed) _server.SendAsyncInfoToClients();
    }

    /// <summary>Our clients' INFO <c>connect_urls</c> after our own: the peers' client URLs.</summary>
    public List<string> PeerClientUrls()
    {
        lock (_lock) return [.. _peerClientUrls.Keys];
    }

    private bool AddPeerClientUrls(string[] urls)
    {
        bool changed = false;
        lock (_lock)
        {
            foreach (var u in urls)
            {
                _peerClientUrls.TryGetValue(u, out int n);
                _peerClientUrls[u] = n + 1;
                changed |= n == 0;
            }
        }
        return changed;
    }

    private bool RemovePeerClientUrlsLocked(string[] urls)
    {
        bool changed = false;
        foreach (var u in urls)
        {
            if (!_peerClientUrls.TryGetValue(u, out int n)) continue;
            if (n <= 1)
            {
                _peerClientUrls.Remove(u);
                changed = true;
            }
            else
            {
                _peerClientUrls[u] = n - 1;
            }
        }
        return changed;
    }

    /// <summary>Tells every peer we entered lame duck mode (server.go sendLDMToRoutes).</summary>
    public void SendLameDuck()
    {
        var info = CreateInfo();
        info.LameDuckMode = true;
        List<RouteConnection> one;
        lock (_lock) one = [.. _remotes.Values.Select(r => r.Any).OfType<RouteConnection>()];
        foreach (var r in one) r.SendInfo(info);
    }

    // ---- Gossip ----

    /// <summary>
    /// route.go processImplicitRoute: a peer told us of another server. Dial it unless it is us, already connected,
    /// or one of our configured routes (hasThisRouteConfigured compares host:port).
    /// </summary>
    internal void ProcessImplicitRoute(RouteInfo info)
    {
        if (info.ServerId == ServerId || string.IsNullOrEmpty(info.Ip)) return;
        if (!Uri.TryCreate(info.Ip, UriKind.Absolute, out var url)) return;
        lock (_lock)
        {
            if (_remotes.ContainsKey(info.ServerId) || _implicitDialing.Contains(info.ServerId) || _stop.IsCancellationRequested) return;
            string hp = RouteConnection.JoinHostPort(info.Host, info.Port);
            foreach (var c in Options.Routes)
            {
                if (string.Equals(HostPort(c), hp, StringComparison.OrdinalIgnoreCase)) return;
            }
            if (info.AuthRequired && !string.IsNullOrEmpty(Options.User))
            {
                url = new UriBuilder(url) { UserName = Uri.EscapeDataString(Options.User), Password = Uri.EscapeDataString(Options.Password ?? "") }.Uri;
            }
            _implicitDialing.Add(info.ServerId);
            _loops.Add(SolicitLoopAsync(url, configured: false, retries: Options.ConnectRetries, expectedId: info.ServerId));
        }
    }

    // ---- Accept and solicit ----

    private async Task AcceptLoopAsync(TcpConnectionListener listener)
    {
        await Task.Yield();
        while (!_stop.IsCancellationRequested)
        {
            AcceptedConnection? next;
            try
            {
                next = await listener.AcceptAsync(_stop.Token).ConfigureAwait(false);
            }
            catch (SocketException)
            {
                await Task.Delay(10).ConfigureAwait(false);
                continue;
            }
            if (next is not { } accepted) break;
            if (_tls is null)
            {
                StartAccepted(accepted, accepted.Stream, onAcceptLoop: true);
                continue;
            }
            // The handshake runs off the accept loop: a slow or silent peer must not hold up the next accept.
            _ = Task.Run(async () =>
            {
                Stream secured;
                try
                {
                    secured = await _tls.AcceptAsync(accepted.Stream, _stop.Token).ConfigureAwait(false);
                }
                catch (Exception ex) when (ex is AuthenticationException or IOException or OperationCanceledException or ObjectDisposedException)
                {
                    Log.TlsHandshakeError(accepted.RemoteIp, accepted.RemotePort, ex is OperationCanceledException ? "timeout" : ex.Message);
                    return;
                }
                StartAccepted(accepted, secured, onAcceptLoop: false);
            });
        }
    }

    private void StartAccepted(AcceptedConnection accepted, Stream stream, bool onAcceptLoop)
    {
        var route = new RouteConnection(this, NextRid(), stream, accepted.Kind, accepted.RemoteIp, accepted.RemotePort, solicitedUrl: null, configured: false);
        OnAccepted(route);
        _ = route.RunAsync(onAcceptLoop);
    }

    private ulong NextRid() => (ulong)Interlocked.Increment(ref _nextRid);

    /// <summary>
    /// route.go connectToRoute / reConnectToRoute: dial, run, and dial again when the route goes. Configured routes
    /// retry every second for as long as they stay configured; implicit ones <paramref name="retries"/> more times
    /// (connect_retries). While another connection to the same peer is registered, the loop waits for it to go
    /// instead of dialling a duplicate ("Not attempting reconnect for solicited route, already connected").
    /// </summary>
    private async Task SolicitLoopAsync(Uri url, bool configured, int retries, string? expectedId = null, string? account = null)
    {
        await Task.Yield();
        var token = _stop.Token;
        int attempt = 0;
        string? remoteId = expectedId;
        try
        {
            while (!token.IsCancellationRequested && StillWanted(url, configured))
            {
                if (remoteId is not null)
                {
                    var wait = WaitWhileConnected(remoteId, account, out bool giveUp);
                    if (giveUp) return;
                    if (wait is not null)
                    {
                        await wait.WaitAsync(token).ConfigureAwait(false);
                        // A connection came or went. The side whose connection went dials again after a short random
                        // delay (route.go reConnectToRoute); waiting longer here lets that one land first.
                        await Task.Delay(Random.Shared.Next(0, 100) + 1000, token).ConfigureAwait(false);
                        continue;
                    }
                }
                attempt++;
                Socket? socket = null;
                try
                {
                    socket = new Socket(SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
                    using var dial = CancellationTokenSource.CreateLinkedTokenSource(token);
                    dial.CancelAfter(TimeSpan.FromSeconds(1));
                    await socket.ConnectAsync(url.Host, url.Port, dial.Token).ConfigureAwait(false);
                }
                catch (Exception ex) when (ex is SocketException or OperationCanceledException)
                {
                    socket?.Dispose();
                    if (token.IsCancellationRequested) return;
                    string error = ex is OperationCanceledException ? "i/o timeout" : ex.Message;
                    if (attempt == 1) Log.ConnectError(attempt, $"dial tcp {HostPort(url)}: {error}");
                    else Log.ConnectErrorDebug(attempt, $"dial tcp {HostPort(url)}: {error}");
                    if (!configured && attempt > retries) return;
                    await Task.Delay(TimeSpan.FromSeconds(1), token).ConfigureAwait(false);
                    continue;
                }
                var ep = socket.RemoteEndPoint as IPEndPoint;
                string ip = ep is null ? url.Host : ep.Address.IsIPv4MappedToIPv6 ? ep.Address.MapToIPv4().ToString() : ep.Address.ToString();
                Stream stream = new NetworkStream(socket, ownsSocket: true);
                if (_tls is not null)
                {
                    try
                    {
                        stream = await _tls.ConnectAsync(stream, TlsServerName(url), token).ConfigureAwait(false);
                    }
                    catch (Exception ex) when (ex is AuthenticationException or IOException or OperationCanceledException)
                    {
                        if (token.IsCancellationRequested) return;
                        Log.TlsHandshakeError(ip, ep?.Port ?? url.Port, ex is OperationCanceledException ? "timeout" : ex.Message);
                        if (!configured && attempt > retries) return;
                        await Task.Delay(TimeSpan.FromSeconds(1), token).ConfigureAwait(false);
                        continue;
                    }
                }
                var route = new RouteConnection(this, NextRid(), stream, TransportKind.Tcp, ip, ep?.Port ?? url.Port, url, configured, account);
                OnAccepted(route);
                _ = route.RunAsync();
                await route.Handshake.WaitAsync(token).ConfigureAwait(false);
                // The peer met last: a restarted peer comes back with a new server ID.
                remoteId = route.RemoteId ?? remoteId;
                // Registered and answered: with a pooled peer, dial the next slot at once (route.go addRoute
                // startNewRoute after the first PONG); the loop's check above waits once the pool is full.
                if (route.IsRegistered && !route.IsClosed)
                {
                    attempt = 0;
                    continue;
                }
                if (route.NoReconnect || route.ClosedReason is CloseReason.RouteRemoved or CloseReason.ServerShutdown || IsSelf(url))
                {
                    // A full pool is no reason to stop: wait for a slot to free (the check at the top of the loop).
                    if (!route.PoolWasFull) return;
                    continue;
                }
                if (!configured && attempt > retries) return;
                await Task.Delay(Random.Shared.Next(0, 100) + (configured ? 1000 : 0), token).ConfigureAwait(false);
            }
        }
        catch (OperationCanceledException)
        {
        }
        finally
        {
            lock (_lock)
            {
                if (!configured && account is null && expectedId is not null) _implicitDialing.Remove(expectedId);
                if (account is not null) _pinnedLoops.Remove(url + " " + account);
            }
        }
    }

    /// <summary>
    /// What a solicit loop for <paramref name="remoteId"/> waits on before dialling again: null when a connection it
    /// makes is wanted now (the peer is not connected, or its pool has a free slot, or the pinned account has no
    /// connection). <paramref name="giveUp"/>: a pinned account's loop towards a peer that does not pool.
    /// </summary>
    private Task? WaitWhileConnected(string remoteId, string? account, out bool giveUp)
    {
        giveUp = false;
        lock (_lock)
        {
            if (!_remotes.TryGetValue(remoteId, out var remote)) return null;
            if (account is not null)
            {
                giveUp = remote.NoPool;
                return remote.Pinned.ContainsKey(account) ? remote.Changed : null;
            }
            return remote.PoolFull ? remote.Changed : null;
        }
    }

    private bool StillWanted(Uri url, bool configured)
    {
        lock (_lock) return !_self.Contains(HostPort(url)) && (!configured || _configured.Contains(url.ToString()));
    }

    private bool IsSelf(Uri url)
    {
        lock (_lock) return _self.Contains(HostPort(url));
    }

    /// <summary>
    /// SIGHUP (reload.go routesOption.Apply, ClusterReload.DiffRoutes): routes no longer configured close with no
    /// reconnect (Route Removed, log <c>Removed route</c>); new ones are dialled. Other keys apply to later INFOs.
    /// </summary>
    public void Reload(ClusterOptions options)
    {
        List<Uri> removed;
        lock (_lock)
        {
            var (gone, added) = ClusterReload.DiffRoutes(Options.Routes, options.Routes);
            removed = gone;
            foreach (var u in gone) _configured.Remove(u.ToString());
            foreach (var u in added)
            {
                _configured.Add(u.ToString());
                _loops.Add(SolicitLoopAsync(u, configured: true, retries: 0));
            }
            Options = options;
        }
        foreach (var u in removed)
        {
            Log.RouteRemovedFromConfig(u.ToString());
            foreach (var r in Snapshot())
            {
                if (r.IsConfigured && r.SolicitedUrl is { } url && url.ToString() == u.ToString()) r.Close(CloseReason.RouteRemoved);
            }
        }
    }

    /// <summary>One heartbeat for every route's timeouts (NatsServer's timer).</summary>
    internal void OnHeartbeat(long now)
    {
        foreach (var r in Snapshot()) r.OnHeartbeat(now);
    }

    public async ValueTask DisposeAsync()
    {
        if (_stop.IsCancellationRequested) return;
        _stop.Cancel();
        _server.Accounts.Added -= AttachInterest;
        _listener?.Dispose();
        var routes = Snapshot();
        foreach (var r in routes) r.Close(CloseReason.ServerShutdown);
        Task[] loops;
        lock (_lock) loops = [.. _loops];
        try
        {
            await Task.WhenAll(routes.Select(r => r.Completion).Concat(loops)).WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
        }
        List<(Account, RouteInterest)> attached;
        lock (_lock) attached = [.. _interest.Select(kv => (kv.Key, kv.Value))];
        foreach (var (account, _) in attached) account.Router.SubList.SetInterestObserver(null);
        _stop.Dispose();
    }

    /// <summary>
    /// The name a dialled peer's certificate must carry (route.go saveRouteTLSName): the first host name among the
    /// configured routes when there is one, else the host dialled.
    /// </summary>
    private string TlsServerName(Uri url)
    {
        foreach (var r in Options.Routes)
        {
            if (r.HostNameType == UriHostNameType.Dns) return r.Host;
        }
        return url.Host.Trim('[', ']');
    }

    private static string HostPort(Uri url) => RouteConnection.JoinHostPort(url.Host.Trim('[', ']'), url.Port);

    private static (string Host, int Port) SplitHostPort(string value, int defaultPort)
    {
        int colon = value.LastIndexOf(':');
        if (colon > 0 && !value.EndsWith(']') && int.TryParse(value.AsSpan(colon + 1), out int p)) return (value[..colon].Trim('[', ']'), p);
        return (value.Trim('[', ']'), defaultPort);
    }

    private static string NewDynamicName()
    {
        const string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        Span<char> name = stackalloc char[22];
        for (int i = 0; i < name.Length; i++) name[i] = alphabet[Random.Shared.Next(alphabet.Length)];
        return new string(name);
    }

    /// <summary>This node's client URLs for connect_urls (server.go getClientConnectURLs): the advertise address,
    /// else every global unicast address when listening on any, else host:port.</summary>
    internal static List<string> ClientConnectUrls(string? advertise, string host, int port)
    {
        var urls = new List<string>();
        if (!string.IsNullOrEmpty(advertise))
        {
            var (h, p) = SplitHostPort(advertise, port);
            urls.Add(RouteConnection.JoinHostPort(h, p));
            return urls;
        }
        if (host is "0.0.0.0" or "::" or "" or "*")
        {
            foreach (var ni in NetworkInterface.GetAllNetworkInterfaces())
            {
                foreach (var a in ni.GetIPProperties().UnicastAddresses)
                {
                    var ip = a.Address;
                    if (IPAddress.IsLoopback(ip) || ip.IsIPv6LinkLocal || ip.IsIPv6Multicast || ip.IsIPv6SiteLocal) continue;
                    if (ip.AddressFamily == AddressFamily.InterNetwork && ip.GetAddressBytes() is [169, 254, ..]) continue;
                    urls.Add(RouteConnection.JoinHostPort(ip.ToString(), port));
                }
            }
        }
        if (urls.Count == 0) urls.Add(RouteConnection.JoinHostPort(host, port));
        return urls;
    }
}
