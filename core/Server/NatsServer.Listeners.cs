using System.Net;
using System.Net.NetworkInformation;
using System.Net.Sockets;
using System.Text.Json;
using NatsBroker.Connections;
using NatsBroker.Contracts.Networking;

namespace NatsBroker.Server;

public sealed partial class NatsServer
{
    private Socket? _tcpListener;
    private Socket? _unixListener;
    private readonly List<Task> _acceptLoops = [];
    private readonly CancellationTokenSource _shutdown = new();
    private string? _portsFile;

    /// <summary>Storage engines (when JetStream is requested); the JetStream API opens stores through it.</summary>
    public NatsBroker.JetStream.StorageEngines? StorageEngines { get; private set; }

    /// <summary>JetStream, when enabled (-js / jetstream {}).</summary>
    public NatsBroker.JetStream.JetStreamService? JetStream { get; private set; }

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
        Socket? tcp = null;
        if (!o.TlsConfigured)
        {
            tcp = new Socket(address.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
            ListenerSocket.AllowRestartWhileInTimeWait(tcp);
            tcp.Bind(new IPEndPoint(address, o.Port < 0 ? 0 : o.Port));
            tcp.Listen(1024);
            _tcpListener = tcp;
            ClientPort = ((IPEndPoint)tcp.LocalEndPoint!).Port;
        }
        else
        {
            ClientPort = o.Port;
        }

        if (!string.IsNullOrEmpty(o.UnixSocketPath))
        {
            if (File.Exists(o.UnixSocketPath)) File.Delete(o.UnixSocketPath);
            var uds = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
            uds.Bind(new UnixDomainSocketEndPoint(o.UnixSocketPath));
            // Owner only: gateways run as the broker's user; the peer's uid is checked again for proxy trust.
            if (!OperatingSystem.IsWindows()) File.SetUnixFileMode(o.UnixSocketPath, UnixFileMode.UserRead | UnixFileMode.UserWrite);
            uds.Listen(1024);
            _unixListener = uds;
        }

        // Every listener is bound before the "Listening" line: test harnesses and scripts take it as readiness.
        if (tcp is not null)
        {
            Log.Listening($"{o.Host}:{ClientPort}");
            _acceptLoops.Add(AcceptLoopAsync(tcp, ConnectionKind.Tcp));
        }
        if (_unixListener is not null)
        {
            Log.ListeningUnix(o.UnixSocketPath!);
            _acceptLoops.Add(AcceptLoopAsync(_unixListener, ConnectionKind.UnixSocket));
        }
        StartHeartbeat();
    }

    private async Task AcceptLoopAsync(Socket listener, ConnectionKind kind)
    {
        await Task.Yield();
        while (!_shutdown.IsCancellationRequested)
        {
            Socket socket;
            try
            {
                socket = await listener.AcceptAsync(_shutdown.Token).ConfigureAwait(false);
            }
            catch (OperationCanceledException) { break; }
            catch (ObjectDisposedException) { break; }
            catch (SocketException ex)
            {
                Log.AcceptError(ex.Message);
                await Task.Delay(10).ConfigureAwait(false);
                continue;
            }
            if (LameDuckMode)
            {
                socket.Dispose();
                continue;
            }
            AcceptClient(socket, kind);
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
        _tcpListener?.Dispose();
        _unixListener?.Dispose();
        if (_unixListener is not null && _options.UnixSocketPath is { } p && File.Exists(p)) File.Delete(p);
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
