using System.Net;
using System.Net.NetworkInformation;
using System.Net.Sockets;
using System.Text.Json;
using NatsBroker.Connections;
using NatsBroker.Transport;

namespace NatsBroker.Server;

public sealed partial class NatsServer
{
    // Every listener the server accepts on (client port, Unix socket, in-memory ones added by tests), under _listenersLock.
    private readonly List<IConnectionListener> _listeners = [];
    private readonly Lock _listenersLock = new();
    private UnixSocketConnectionListener? _unixListener;
    private readonly List<Task> _acceptLoops = [];
    private readonly CancellationTokenSource _shutdown = new();
    private string? _portsFile;

    /// <summary>Storage engines (when JetStream is requested); the JetStream API opens stores through it.</summary>
    public NatsBroker.JetStream.StorageEngines? StorageEngines { get; private set; }

    /// <summary>JetStream, when enabled (-js / jetstream {}).</summary>
    public NatsBroker.JetStream.JetStreamService? JetStream { get; private set; }

    /// <summary>Routes to the other nodes of the cluster; null without a <c>cluster {}</c> listener.</summary>
    public NatsBroker.Cluster.RouteManager? Cluster { get; private set; }

    /// <summary>This node's client URLs as peers and clients learn them (INFO <c>connect_urls</c>).</summary>
    internal List<string> OwnClientConnectUrls() => NatsBroker.Cluster.RouteManager.ClientConnectUrls(_options.ClientAdvertise, _options.Host, ClientPort);

    /// <summary>
    /// The cluster's client URLs changed: every client that can take an asynchronous INFO gets one
    /// (route.go sendAsyncInfoToClients: protocol ≥ 1, CONNECT done).
    /// </summary>
    internal void SendAsyncInfoToClients()
    {
        foreach (var c in _clients.Values)
        {
            if (c.Connect is { Protocol: >= 1 }) c.SendAsyncInfo();
        }
    }

    /// <summary>The bound client port (resolved when -p -1 asked for a random one).</summary>
    public int ClientPort { get; private set; }

    /// <summary>Binds the client listeners; failures surface to the caller (never swallowed at start-up).</summary>
    public void Start()
    {
        var o = _options;
        Log.Starting(ImplementationName, ImplementationVersion, CompatibleVersion, ServerName, ServerId);
        // Only a server that serves clients runs the $SYS services (not the warm-up's throwaway server).
        StartSystemServices();
        var address = o.Host is "0.0.0.0" or "" or "*" ? IPAddress.Any
            : o.Host is "::" ? IPAddress.IPv6Any
            : IPAddress.TryParse(o.Host, out var ip) ? ip
            : Dns.GetHostAddresses(o.Host).First();
        if (o.JetStream && o.Cluster is not null)
        {
            // nats-server clusters JetStream with Raft (meta group, replicated streams): not built yet (issue 42).
            // Serving JetStream on a node of a route cluster without it would answer every $JS.API request that
            // routes bring here, beside the other nodes' answers.
            throw new InvalidOperationException("JetStream cannot be enabled on a clustered server yet: clustered JetStream (Raft) is not built; remove jetstream {} or cluster {}");
        }
        if (o.JetStream)
        {
            // Engines are resolved now so a bad store_engine / store_engine_path fails start-up, not a later request.
            StorageEngines = NatsBroker.JetStream.StorageEngines.Create(o);
            Log.StorageEngines(StorageEngines.PersistentEngine, string.Join(", ", StorageEngines.LoadedFromPaths));
            JetStream = new NatsBroker.JetStream.JetStreamService(Accounts, o, StorageEngines, Log.Logger, ServerName);
            JetStream.Start();
            Log.JetStreamStarted(JetStream.StoreDir);
        }
        // With a tls {} block the client port belongs to the tls-terminator gateway (gateways/tls-terminator):
        // clients reach the core only through it, over the Unix socket.
        TcpConnectionListener? tcp = null;
        if (!o.TlsConfigured)
        {
            tcp = new TcpConnectionListener(address, o.Port < 0 ? 0 : o.Port);
            ClientPort = tcp.Port;
        }
        else
        {
            ClientPort = o.Port;
        }
        UnixSocketConnectionListener? unix = null;
        try
        {
            if (!string.IsNullOrEmpty(o.UnixSocketPath)) unix = new UnixSocketConnectionListener(o.UnixSocketPath);
        }
        catch
        {
            tcp?.Dispose();
            throw;
        }
        _unixListener = unix;

        // Every listener is bound before the "Listening" line: test harnesses and scripts take it as readiness.
        if (tcp is not null)
        {
            Log.Listening($"{o.Host}:{ClientPort}");
            StartAccepting(tcp);
        }
        if (unix is not null)
        {
            Log.ListeningUnix(unix.Path);
            StartAccepting(unix);
        }
        if (o.Cluster is { } cluster)
        {
            // Routes start once the client port is known: our route INFO carries our client URLs (connect_urls).
            Cluster = new NatsBroker.Cluster.RouteManager(this, cluster, Log.Logger);
            Cluster.Start();
        }
        StartHeartbeat();
    }

    /// <summary>
    /// An in-process listener (no socket): each <see cref="InMemoryConnectionListener.Connect"/> is a client
    /// connection served like a TCP one. For tests and in-process sessions; closed with the server.
    /// </summary>
    public InMemoryConnectionListener ListenInMemory()
    {
        var listener = new InMemoryConnectionListener();
        StartAccepting(listener);
        return listener;
    }

    private void StartAccepting(IConnectionListener listener)
    {
        lock (_listenersLock)
        {
            _listeners.Add(listener);
            _acceptLoops.Add(AcceptLoopAsync(listener));
        }
    }

    private async Task AcceptLoopAsync(IConnectionListener listener)
    {
        await Task.Yield();
        while (!_shutdown.IsCancellationRequested)
        {
            AcceptedConnection? next;
            try
            {
                next = await listener.AcceptAsync(_shutdown.Token).ConfigureAwait(false);
            }
            catch (SocketException ex)
            {
                // Lame duck mode stops the listeners while their accepts are pending: that is the end, not an error.
                if (LameDuckMode || _shutdown.IsCancellationRequested) break;
                Log.AcceptError(ex.Message);
                await Task.Delay(10).ConfigureAwait(false);
                continue;
            }
            if (next is not { } accepted) break;
            if (LameDuckMode)
            {
                accepted.Stream.Dispose();
                continue;
            }
            AcceptClient(accepted);
        }
    }

    /// <summary>Stops every listener (lame duck mode, shutdown); the accept loops end.</summary>
    private void StopListening()
    {
        lock (_listenersLock)
        {
            foreach (var l in _listeners) l.Dispose();
        }
    }

    /// <summary>The URLs clients can use, as nats-server lists them in the ports file.</summary>
    public IReadOnlyList<string> ClientUrls(string scheme, int port, string host)
    {
        var urls = new List<string>();
        if (host is "0.0.0.0" or "" or "*" or "::")
        {
            foreach (var ni in NetworkInterface.GetAllNetworkInterfaces())
            {
                if (ni.OperationalStatus != OperationalStatus.Up) continue;
                foreach (var a in ni.GetIPProperties().UnicastAddresses)
                {
                    if (a.Address.AddressFamily == AddressFamily.InterNetwork) urls.Add($"{scheme}://{a.Address}:{port}");
                }
            }
            urls.Sort((x, y) => x.Contains("127.0.0.1", StringComparison.Ordinal) ? -1 : y.Contains("127.0.0.1", StringComparison.Ordinal) ? 1 : 0);
        }
        else
        {
            urls.Add($"{scheme}://{host}:{port}");
        }
        return urls;
    }

    /// <summary>Writes &lt;dir&gt;/nats-server_&lt;pid&gt;.ports with the JSON nats-server writes.</summary>
    internal void WritePortsFile(int? monitorPort)
    {
        var dir = _options.PortsFileDir;
        if (string.IsNullOrEmpty(dir)) return;
        var ports = new PortsInfo
        {
            Nats = [.. ClientUrls("nats", ClientPort, _options.Host)],
            Monitoring = monitorPort is int mp ? [.. ClientUrls("http", mp, _options.HttpHost)] : null,
        };
        _portsFile = Path.Combine(dir, $"nats-server_{Environment.ProcessId}.ports");
        File.WriteAllBytes(_portsFile, JsonSerializer.SerializeToUtf8Bytes(ports, ServerJsonContext.Default.PortsInfo));
    }

    private void CloseListeners()
    {
        _shutdown.Cancel();
        StopListening();
        _unixListener?.RemoveSocketFile();
        if (_portsFile is not null && File.Exists(_portsFile)) File.Delete(_portsFile);
    }
}

/// <summary>The ports file (server/server.go Ports).</summary>
public sealed class PortsInfo
{
    [System.Text.Json.Serialization.JsonPropertyName("nats")] public string[]? Nats { get; set; }
    [System.Text.Json.Serialization.JsonPropertyName("monitoring"), System.Text.Json.Serialization.JsonIgnore(Condition = System.Text.Json.Serialization.JsonIgnoreCondition.WhenWritingNull)] public string[]? Monitoring { get; set; }
}

[System.Text.Json.Serialization.JsonSerializable(typeof(PortsInfo))]
internal sealed partial class ServerJsonContext : System.Text.Json.Serialization.JsonSerializerContext;
