using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// Failures on either side of the link: a gateway SIGKILLed while its clients publish (the core and its direct
/// clients carry on, the supervisor restarts the gateway, the clients reconnect), and a core restart under
/// externally managed gateways (the gateways stay up, their clients reconnect once the core is back).
/// </summary>
[Collection("Gateways")]
public sealed class GatewayFailureTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();
    private readonly ExternalGatewayProcesses _terminators = new(output);

    public void Dispose()
    {
        _terminators.Dispose();
        _pki.Dispose();
    }

    private NatsOpts TlsClient(int port, string name) => new()
    {
        Url = $"tls://127.0.0.1:{port}",
        Name = name,
        TlsOpts = new NatsTlsOpts { Mode = TlsMode.Require, CaFile = _pki.CaFile },
        ConnectTimeout = TimeSpan.FromSeconds(10),
        MaxReconnectRetry = -1,
        ReconnectWaitMin = TimeSpan.FromMilliseconds(100),
        ReconnectWaitMax = TimeSpan.FromMilliseconds(500),
    };

    private static int? StartedPid(string log)
    {
        var matches = System.Text.RegularExpressions.Regex.Matches(log, @"Started the tls-terminator gateway \(pid (\d+)\)");
        return matches.Count == 0 ? null : int.Parse(matches[^1].Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
    }

    /// <summary>A raw client on the core's Unix socket: subscribes to <paramref name="subject"/> and counts MSG lines.</summary>
    private sealed class DirectCounter : IAsyncDisposable
    {
        private readonly Socket _socket = new(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        private readonly CancellationTokenSource _stop = new();
        private Task? _reader;
        private long _count;

        public long Count => Interlocked.Read(ref _count);

        public async Task StartAsync(string path, string subject)
        {
            await _socket.ConnectAsync(new UnixDomainSocketEndPoint(path));
            await _socket.SendAsync(Encoding.ASCII.GetBytes($"CONNECT {{\"verbose\":false}}\r\nSUB {subject} 1\r\nPING\r\n"));
            _reader = Task.Run(ReadAsync);
        }

        private async Task ReadAsync()
        {
            var buffer = new byte[64 * 1024];
            var line = new StringBuilder();
            while (!_stop.IsCancellationRequested)
            {
                int n;
                try
                {
                    n = await _socket.ReceiveAsync(buffer, SocketFlags.None, _stop.Token);
                }
                catch (Exception ex) when (ex is OperationCanceledException or SocketException or ObjectDisposedException)
                {
                    return;
                }
                if (n == 0) return;
                for (int i = 0; i < n; i++)
                {
                    if (buffer[i] != '\n')
                    {
                        line.Append((char)buffer[i]);
                        continue;
                    }
                    var text = line.ToString();
                    line.Clear();
                    if (text.StartsWith("MSG ", StringComparison.Ordinal)) Interlocked.Increment(ref _count);
                    else if (text.StartsWith("PING", StringComparison.Ordinal)) await _socket.SendAsync("PONG\r\n"u8.ToArray());
                }
            }
        }

        public async ValueTask DisposeAsync()
        {
            await _stop.CancelAsync();
            _socket.Dispose();
            if (_reader is not null) await _reader;
            _stop.Dispose();
        }
    }

    /// <summary>Publishes on the core's Unix socket every millisecond until disposed.</summary>
    private static async Task<(Socket Socket, Task Loop, CancellationTokenSource Stop)> DirectPublisher(string path, string subject)
    {
        var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        await socket.ConnectAsync(new UnixDomainSocketEndPoint(path));
        await socket.SendAsync("CONNECT {\"verbose\":false}\r\n"u8.ToArray());
        var stop = new CancellationTokenSource();
        var pub = Encoding.ASCII.GetBytes($"PUB {subject} 1\r\nx\r\n");
        var loop = Task.Run(async () =>
        {
            while (!stop.IsCancellationRequested)
            {
                await socket.SendAsync(pub);
                await Task.Delay(1);
            }
        });
        return (socket, loop, stop);
    }

    /// <summary>Publishes through <paramref name="nc"/> until stopped, ignoring failures while it is disconnected.</summary>
    private static Task PublishLoop(NatsConnection nc, string subject, CancellationToken stop) => Task.Run(async () =>
    {
        while (!stop.IsCancellationRequested)
        {
            try
            {
                await nc.PublishAsync(subject, 1, cancellationToken: stop);
            }
            catch (Exception ex) when (ex is NatsException or OperationCanceledException)
            {
            }
            try { await Task.Delay(2, stop); } catch (OperationCanceledException) { }
        }
    });

    [Fact]
    public async Task Gateway_SIGKILLed_while_clients_publish_leaves_the_core_serving_and_clients_reconnect()
    {
        int port = TestPorts.Next();
        var config = $$"""
            tls { cert_file: "{{_pki.ServerCert}}", key_file: "{{_pki.ServerKey}}" }
            """;
        await using var core = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = config, Port = port, UnixSocket = true }, output);
        var first = StartedPid(core.Output);
        Assert.NotNull(first);

        // Direct traffic on the core's own socket, and TLS clients publishing through the gateway.
        await using var directSub = new DirectCounter();
        await directSub.StartAsync(core.UnixSocketPath!, "direct.>");
        await using var tlsSub = new DirectCounter();
        await tlsSub.StartAsync(core.UnixSocketPath!, "tls.>");
        var (pubSocket, pubLoop, pubStop) = await DirectPublisher(core.UnixSocketPath!, "direct.flow");
        var clients = new List<NatsConnection>();
        using var stop = new CancellationTokenSource();
        var loops = new List<Task>();
        try
        {
            for (int i = 0; i < 4; i++)
            {
                var nc = new NatsConnection(TlsClient(port, $"tls-{i}"));
                await nc.ConnectAsync();
                clients.Add(nc);
                loops.Add(PublishLoop(nc, $"tls.{i}", stop.Token));
            }
            var deadline = DateTime.UtcNow.AddSeconds(20);
            while ((tlsSub.Count < 100 || directSub.Count < 100) && DateTime.UtcNow < deadline) await Task.Delay(50);
            Assert.True(tlsSub.Count >= 100 && directSub.Count >= 100, $"no traffic before the kill: tls {tlsSub.Count}, direct {directSub.Count}");

            using (var p = Process.GetProcessById(first!.Value)) p.Kill();

            // While the gateway is down (the supervisor waits 1 s before the first restart) the core keeps
            // delivering its direct clients' messages.
            long beforeOutage = directSub.Count;
            await Task.Delay(500);
            Assert.True(directSub.Count > beforeOutage + 20, $"direct traffic stalled while the gateway was down: {beforeOutage} -> {directSub.Count}");

            deadline = DateTime.UtcNow.AddSeconds(30);
            while (StartedPid(core.Output) == first && DateTime.UtcNow < deadline) await Task.Delay(100);
            Assert.NotEqual(first, StartedPid(core.Output));
            Assert.False(core.HasExited);

            // Every TLS client reconnects through the new gateway and its messages reach the core again.
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
            foreach (var nc in clients)
            {
                while (nc.ConnectionState != NatsConnectionState.Open) await Task.Delay(100, cts.Token);
                await nc.PingAsync(cts.Token);
            }
            long afterRestart = tlsSub.Count;
            deadline = DateTime.UtcNow.AddSeconds(20);
            while (tlsSub.Count < afterRestart + 100 && DateTime.UtcNow < deadline) await Task.Delay(50);
            Assert.True(tlsSub.Count >= afterRestart + 100, $"TLS traffic did not resume: {afterRestart} -> {tlsSub.Count}");
            Assert.DoesNotContain("Unhandled exception", core.Output, StringComparison.Ordinal);
        }
        finally
        {
            await stop.CancelAsync();
            await Task.WhenAll(loops);
            await pubStop.CancelAsync();
            try { await pubLoop; } catch (Exception ex) when (ex is SocketException or ObjectDisposedException) { }
            pubSocket.Dispose();
            pubStop.Dispose();
            foreach (var nc in clients) await nc.DisposeAsync();
        }
    }

    private (Process, StringBuilder) StartTerminator(string config, int port, string seed, string socket) =>
        _terminators.Start("NatsBroker.TlsTerminator.dll", config, port, seed, socket);

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task Core_restart_with_an_external_gateway_clients_recover(bool hardKill)
    {
        using var key = KeyPair.CreatePair(PrefixByte.User);
        int port = TestPorts.Next();
        var socket = Path.Combine(Path.GetTempPath(), $"nb-{Guid.NewGuid():N}"[..12] + ".sock");
        var config = $$"""
            unix_socket: "{{socket}}"
            tls { cert_file: "{{_pki.ServerCert}}", key_file: "{{_pki.ServerKey}}" }
            gateways { managed: external }
            proxies { trusted = [ { key: "{{key.GetPublicKey()}}" } ] }
            """;
        var configPath = Path.Combine(_pki.Dir, "external.conf");
        File.WriteAllText(configPath, config);

        // The core does not listen on TCP here: the gateway does, and it is up before and after the core.
        var coreStart = ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions { Config = config, Port = port }, output);
        var deadline = DateTime.UtcNow.AddSeconds(30);
        while (!File.Exists(socket) && DateTime.UtcNow < deadline && !coreStart.IsCompleted) await Task.Delay(50);
        Assert.True(File.Exists(socket), "the core's socket did not appear");
        var (terminator, _) = StartTerminator(configPath, port, key.GetSeed(), socket);
        await using var core = await coreStart;

        await using var sub = new NatsConnection(TlsClient(port, "sub"));
        await using var pub = new NatsConnection(TlsClient(port, "pub"));
        await sub.ConnectAsync();
        await pub.ConnectAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await using (var s = await sub.SubscribeCoreAsync<int>("before"))
        {
            await sub.PingAsync(cts.Token);
            await pub.PublishAsync("before", 1, cancellationToken: cts.Token);
            Assert.Equal(1, (await s.Msgs.ReadAsync(cts.Token)).Data);
        }

        await core.RestartAsync(hard: hardKill);
        Assert.False(terminator.HasExited, "the gateway exited with the core");

        // Both clients come back through the same gateway process; subscriptions are replayed by the client.
        await using var after = await sub.SubscribeCoreAsync<int>("after");
        foreach (var nc in new[] { sub, pub })
        {
            while (nc.ConnectionState != NatsConnectionState.Open) await Task.Delay(100, cts.Token);
            await nc.PingAsync(cts.Token);
        }
        await pub.PublishAsync("after", 2, cancellationToken: cts.Token);
        Assert.Equal(2, (await after.Msgs.ReadAsync(cts.Token)).Data);
        Assert.False(terminator.HasExited);
    }
}
