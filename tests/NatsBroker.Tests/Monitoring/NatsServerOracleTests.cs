using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Monitoring;

/// <summary>nats-server (the reference implementation) started on free ports with monitoring on.</summary>
public sealed class NatsServerOracle : IAsyncDisposable
{
    private readonly Process _process;

    private NatsServerOracle(Process process, int port, int httpPort)
    {
        _process = process;
        Port = port;
        Http = new HttpClient { BaseAddress = new Uri($"http://127.0.0.1:{httpPort}"), Timeout = TimeSpan.FromSeconds(10) };
    }

    public int Port { get; }
    public HttpClient Http { get; }

    public static async Task<NatsServerOracle> StartAsync()
    {
        var exe = Prerequisites.RequireGoServer();
        int port = TestPorts.Next(), httpPort = TestPorts.Next();
        var psi = new ProcessStartInfo(exe)
        {
            ArgumentList = { "-a", "127.0.0.1", "-p", port.ToString(System.Globalization.CultureInfo.InvariantCulture), "-m", httpPort.ToString(System.Globalization.CultureInfo.InvariantCulture) },
            RedirectStandardError = true,
            RedirectStandardOutput = true,
            UseShellExecute = false,
        };
        var process = Process.Start(psi)!;
        process.BeginErrorReadLine();
        process.BeginOutputReadLine();
        var oracle = new NatsServerOracle(process, port, httpPort);
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (true)
        {
            try
            {
                using var r = await oracle.Http.GetAsync("/healthz");
                if (r.IsSuccessStatusCode) return oracle;
            }
            catch (HttpRequestException) when (DateTime.UtcNow < deadline)
            {
            }
            Assert.False(process.HasExited, "nats-server exited at start-up");
            await Task.Delay(50);
        }
    }

    public async Task<JsonElement> GetJsonAsync(string path)
    {
        var body = await Http.GetStringAsync(path);
        using var doc = JsonDocument.Parse(body);
        return doc.RootElement.Clone();
    }

    public async ValueTask DisposeAsync()
    {
        Http.Dispose();
        if (!_process.HasExited)
        {
            _process.Kill();
            await _process.WaitForExitAsync();
        }
        _process.Dispose();
    }
}

/// <summary>
/// Differential: the field names of our /varz, /connz and /subsz against nats-server's, with the same traffic on both.
/// Intentional differences are listed here and in docs/monitoring.md.
/// </summary>
public sealed class NatsServerOracleTests
{
    /// <summary>Fields nats-server writes that we do not.</summary>
    private static readonly Dictionary<string, string[]> OnlyInNatsServer = new()
    {
        ["/varz"] = [],
        ["/connz?subs=1"] = [],
        ["/connz?subs=1 connection"] = [],
        ["/subsz"] = [],
        ["/subsz?subs=1"] = [],
        ["/routez"] = [],
        ["/gatewayz"] = [],
        ["/leafz"] = [],
        ["/jsz"] = [],
        ["/accountz"] = [],
    };

    private static List<string> Keys(JsonElement e) => [.. e.EnumerateObject().Select(p => p.Name)];

    private static void AssertSameFields(string what, JsonElement ours, JsonElement theirs)
    {
        var o = Keys(ours);
        var t = Keys(theirs).Except(OnlyInNatsServer[what]).ToList();
        var missing = t.Except(o).ToList();
        var extra = o.Except(t).ToList();
        Assert.True(missing.Count == 0 && extra.Count == 0,
            $"{what}: missing [{string.Join(", ", missing)}], extra [{string.Join(", ", extra)}]");
        // Same order too: Go writes struct fields in declaration order and we declare them the same way.
        Assert.Equal(t, o);
    }

    [SkippableFact]
    public async Task TopLevelFields_MatchNatsServer()
    {
        await using var oracle = await NatsServerOracle.StartAsync();
        await using var broker = await MonitoredBroker.StartAsync();
        const string traffic = "SUB foo 1\r\nPUB foo 2\r\nhi\r\n";
        await using var theirs = await RawClient.ConnectAsync(oracle.Port, "x");
        await using var ours = await RawClient.ConnectAsync(broker.ClientPort, "x");
        await theirs.SendAndFlushAsync(traffic);
        await ours.SendAndFlushAsync(traffic);

        foreach (var path in new[] { "/varz", "/subsz", "/subsz?subs=1", "/routez", "/gatewayz", "/leafz", "/jsz", "/accountz" })
        {
            AssertSameFields(path, await broker.GetJsonAsync(path), await oracle.GetJsonAsync(path));
        }

        var ourConnz = await broker.GetJsonAsync("/connz?subs=1");
        var theirConnz = await oracle.GetJsonAsync("/connz?subs=1");
        AssertSameFields("/connz?subs=1", ourConnz, theirConnz);
        AssertSameFields("/connz?subs=1 connection", ourConnz.GetProperty("connections")[0], theirConnz.GetProperty("connections")[0]);

        // Same values where the traffic determines them.
        foreach (var field in new[] { "in_msgs", "out_msgs", "in_bytes", "out_bytes", "subscriptions" })
        {
            Assert.Equal(theirConnz.GetProperty("connections")[0].GetProperty(field).GetInt64(),
                ourConnz.GetProperty("connections")[0].GetProperty(field).GetInt64());
        }
        var ourVarz = await broker.GetJsonAsync("/varz");
        var theirVarz = await oracle.GetJsonAsync("/varz");
        foreach (var field in new[] { "max_connections", "ping_interval", "ping_max", "auth_timeout", "max_control_line", "max_payload", "max_pending", "write_deadline", "tls_timeout", "in_msgs", "out_msgs", "connections" })
        {
            Assert.Equal(theirVarz.GetProperty(field).GetDouble(), ourVarz.GetProperty(field).GetDouble());
        }
    }
}
