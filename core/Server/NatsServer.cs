using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;
using NatsBroker.Accounts;
using NatsBroker.Auth;
using NatsBroker.Configuration;
using NatsBroker.Connections;
using NatsBroker.Protocol;
using NatsBroker.Subscriptions;
using NatsBroker.Transport;

namespace NatsBroker.Server;

/// <summary>
/// The broker: listeners, the connection registry, the subject routing table and one heartbeat timer for every
/// per-connection timeout. Split by concern: Listeners (accept loops, ports file), Lifecycle (shutdown, lame duck,
/// reload), Stats (counters for monitoring).
/// </summary>
public sealed partial class NatsServer : IAsyncDisposable
{
    /// <summary>The nats-server version whose client-visible behaviour we implement; clients gate features on it.</summary>
    public const string CompatibleVersion = Configuration.CommandLine.CompatibleVersion;
    public const string ImplementationName = "natsbroker";
    public static readonly string ImplementationVersion =
        typeof(NatsServer).Assembly.GetName().Version?.ToString(3) ?? "0.1.0";

    private readonly ConcurrentDictionary<ulong, ClientConnection> _clients = new();
    private long _nextClientId;
    private Timer? _heartbeat;
    private volatile ServerOptions _options;
    private volatile IAuthenticator _auth;

    public NatsServer(ServerOptions options, ILogger logger)
    {
        _options = options;
        Log = new ServerLog(logger);
        // nats-server's id is its server nkey's public key, and auth callout requests are signed with that key. Making
        // the key pair loads OpenSSL (Ed25519 needs SHA-512): ~100 ms of CPU and ~8 MB at start-up. So the key is made
        // at start only when the config has an auth callout; otherwise the id is random, shaped like a server nkey,
        // and a callout added later by a reload signs with a key made then (its requests' issuer differs from INFO's
        // server_id; the callout service verifies the request against its own issuer field).
        ServerId = options.AuthCallout is not null ? Identity.PublicKey : NewServerId();
        ServerName = options.ServerName ?? ServerId;
        StartTime = DateTime.UtcNow;
        Accounts = new AccountRegistry(NewRouter, ServerName);
        Accounts.Apply(options);
        _auth = CreateAuthenticator(options);
        ClientLimits = new OutboundLimits(options.MaxPending, options.WriteDeadline);
    }

    private Routing.Router NewRouter() => new(new SubList(), ex => Log.InternalCallbackFault(ex));

    public ServerOptions Options => _options;
    /// <summary>Every account by name; clients bind to one when they authenticate (core/Accounts).</summary>
    public AccountRegistry Accounts { get; }
    /// <summary>The global account's router (<c>$G</c>): users outside any account publish here (core/Routing).</summary>
    public Routing.Router Router => Accounts.Global.Router;
    public SubList SubList => Router.SubList;
    internal IAuthenticator Auth => _auth;
    /// <summary>max_pending and write_deadline of every client connection (updated in place on reload).</summary>
    internal OutboundLimits ClientLimits { get; }
    /// <summary>Where connections run password hashing (bcrypt), off the socket threads.</summary>
    internal PasswordHashingQueue PasswordHashing { get; } = PasswordHashingQueue.CreateDefault();
    internal ServerLog Log { get; }
    public string ServerId { get; }
    public string ServerName { get; }
    public DateTime StartTime { get; }
    public bool LameDuckMode { get; private set; }
    public IEnumerable<ClientConnection> Clients => _clients.Values;
    public int ClientCount => _clients.Count;

    private readonly Lazy<ServerIdentity> _identity = new(() => new ServerIdentity());

    /// <summary>The server nkey and curve key: they sign and seal auth callout requests (made on first use).</summary>
    internal ServerIdentity Identity => _identity.Value;

    /// <summary>Whether <see cref="Identity"/> was made (so it must be disposed).</summary>
    internal bool HasIdentity => _identity.IsValueCreated;

    /// <summary>A random server id shaped like nats-server's (56 base32 chars, 'N' prefix of a server nkey).</summary>
    private static string NewServerId()
    {
        const string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
        Span<char> id = stackalloc char[56];
        id[0] = 'N';
        for (int i = 1; i < id.Length; i++) id[i] = alphabet[Random.Shared.Next(alphabet.Length)];
        return new string(id);
    }

    internal ServerInfo CreateInfo(ClientConnection? client)
    {
        var o = _options;
        return new ServerInfo
        {
            ServerId = ServerId,
            ServerName = ServerName,
            Version = CompatibleVersion,
            Go = $"dotnet{Environment.Version}",
            Implementation = $"{ImplementationName} {ImplementationVersion}",
            Host = o.Host,
            Port = ClientPort,
            Headers = !o.NoHeaderSupport,
            AuthRequired = _auth.AuthRequired,
            MaxPayload = o.MaxPayload,
            JetStream = JetStream is not null,
            ClientId = client?.Id ?? 0,
            ClientIp = client?.RemoteIp,
            // One nonce per connection (ClientConnection.Nonce): nkey users sign it, and trusted proxies (ADR-55).
            Nonce = client?.Nonce,
            LameDuckMode = LameDuckMode,
            ApiLevel = NatsBroker.JetStream.ApiLevel.Current,
            XKey = Identity.CurvePublicKey,
            ConnectUrls = ClientConnectUrls(),
        };
    }

    /// <summary>
    /// INFO <c>connect_urls</c> in a cluster: our client URLs, then the peers' (server.go clientConnectURLs plus the
    /// routes' set); in lame duck mode only the peers', so clients move away. Null outside a cluster, and with
    /// <c>no_advertise</c> only our own.
    /// </summary>
    internal string[]? ClientConnectUrls()
    {
        if (Cluster is not { } cluster) return null;
        var urls = LameDuckMode ? [] : OwnClientConnectUrls();
        if (!cluster.Options.NoAdvertise)
        {
            foreach (var u in cluster.PeerClientUrls())
            {
                if (!urls.Contains(u)) urls.Add(u);
            }
        }
        return [.. urls];
    }

    internal void StartHeartbeat()
    {
        _heartbeat = new Timer(static s => ((NatsServer)s!).OnHeartbeat(), this, 250, 250);
    }

    /// <summary>One timer for all connection timeouts (auth, ping/stale, write deadline), as Kestrel does.</summary>
    private void OnHeartbeat()
    {
        long now = Environment.TickCount64;
        foreach (var c in _clients.Values)
        {
            try
            {
                c.OnHeartbeat(now);
            }
            catch (Exception ex)
            {
                Log.ConnectionLoopFault(ex, c.Id);
            }
        }
        Cluster?.OnHeartbeat(now);
    }

    /// <summary>
    /// Registers an accepted connection in accept order (so max_connections rejects the newest, as nats-server does)
    /// and starts it.
    /// </summary>
    private void AcceptClient(AcceptedConnection accepted)
    {
        var client = Register(accepted.Stream, accepted.Kind, accepted.RemoteIp, accepted.RemotePort);
        // Started here, not queued to the thread pool: this thread (the accept completion's) runs the connection's
        // synchronous start (INFO sent, first read posted) and returns at the first read, saving a thread-pool hop
        // per connection (nats-server's accept goroutine likewise sends INFO itself, createClient).
        _ = client.RunAsync(onAcceptLoop: true);
    }

    /// <summary>Serves one client over any duplex stream (used by the listeners and by in-memory tests).</summary>
    public Task RunClientAsync(Stream stream, TransportKind kind, string remoteIp, int remotePort) =>
        Register(stream, kind, remoteIp, remotePort).RunAsync();

    private ClientConnection Register(Stream stream, TransportKind kind, string remoteIp, int remotePort)
    {
        ulong id = (ulong)Interlocked.Increment(ref _nextClientId);
        bool overLimit = _clients.Count >= _options.MaxConnections && OpenClientCount() >= _options.MaxConnections;
        var client = new ClientConnection(this, id, stream, kind, remoteIp, remotePort, overLimit);
        _clients[id] = client;
        Interlocked.Increment(ref _totalConnections);
        Log.ClientConnected(id, remoteIp, remotePort);
        return client;
    }

    /// <summary>Connections not already closing (a closed one leaves the registry a moment later).</summary>
    private int OpenClientCount()
    {
        int n = 0;
        foreach (var c in _clients.Values) if (!c.IsClosed) n++;
        return n;
    }

    internal void OnClientClosed(ClientConnection client)
    {
        if (client.IsInternal) return;
        _clients.TryRemove(client.Id, out _);
        if (client.ConnectAccepted) SystemServices?.ClientDisconnected(client);
        RecordClosed(client);
        Log.ClientClosed(client.Id, client.RemoteIp, client.RemotePort, client.ClosedReason?.ToString() ?? "Client Closed");
    }
}
