using System.Diagnostics;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// A config with a websocket, mqtt or tls block that nats-server 2.14.5 refuses is refused by ours with the same text
/// before anything binds (the core runs each supervised gateway's <c>-t</c> first: core/Hosting/GatewaySupervisor.Checks.cs),
/// and a good one still starts. Both servers get the same file by the same absolute path, so file:line:col positions
/// compare as they are. Before, the core bound its ports, started the gateway, and only then logged the gateway's
/// error (or, for a missing gateway, "[FTL] ... the gateway was not found" after its listeners were up).
/// </summary>
[Collection("Gateways")]
public sealed class GatewayConfigCheckTests(ITestOutputHelper output)
{
    private static readonly string Store = Path.Combine(Path.GetTempPath(), "gwcheck-js-" + Guid.NewGuid().ToString("N"));

    /// <summary>Block bodies nats-server refuses; {0} a websocket port, {1} an mqtt port.</summary>
    public static TheoryData<string, string> Refused() => new()
    {
        { "ws without tls", "websocket {{ port: {0} }}" },
        { "ws unknown field", "websocket {{ port: {0}, no_tls: true, bogus: 1 }}" },
        { "ws origin scheme", "websocket {{ port: {0}, no_tls: true, allowed_origins: [\"ftp://x.com\"] }}" },
        { "ws tls files missing", "websocket {{ port: {0}, tls {{ cert_file: \"/nonexistent.pem\", key_file: \"/nonexistent.key\" }} }}" },
        { "mqtt without jetstream", "mqtt {{ port: {1} }}" },
        { "mqtt ack_wait", "server_name: a\njetstream {{ store_dir: \"" + Store + "\" }}\nmqtt {{ port: {1}, ack_wait: \"bogus\" }}" },
        { "mqtt unknown field", "server_name: a\njetstream {{ store_dir: \"" + Store + "\" }}\nmqtt {{ port: {1}, bogus: 1 }}" },
        { "mqtt negative ack_wait", "server_name: a\njetstream {{ store_dir: \"" + Store + "\" }}\nmqtt {{ port: {1}, ack_wait: \"-1s\" }}" },
        { "tls files missing", "tls {{ cert_file: \"/nonexistent.pem\", key_file: \"/nonexistent.key\" }}" },
        { "tls unknown field", "tls {{ bogus: 1 }}" },
    };

    private static string WriteConfig(string body)
    {
        var path = Path.Combine(Path.GetTempPath(), $"gwcheck-{Guid.NewGuid():N}.conf");
        File.WriteAllText(path, "port: -1\n" + string.Format(System.Globalization.CultureInfo.InvariantCulture, body, TestPorts.Next(), TestPorts.Next()) + "\n");
        return path;
    }

    /// <summary>Runs a server until it exits (at most 30 s; killed after that) and returns its exit code and stderr.</summary>
    private static async Task<(int? Code, string Stderr)> RunAsync(ProcessStartInfo psi)
    {
        psi.RedirectStandardError = true;
        psi.RedirectStandardOutput = true;
        using var p = Process.Start(psi)!;
        var stderr = p.StandardError.ReadToEndAsync();
        var stdout = p.StandardOutput.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        try
        {
            await p.WaitForExitAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            await p.WaitForExitAsync();
            return (null, await stderr + await stdout);
        }
        return (p.ExitCode, await stderr + await stdout);
    }

    private static ProcessStartInfo Go(string oracle, params string[] args)
    {
        var psi = new ProcessStartInfo(oracle);
        foreach (var a in args) psi.ArgumentList.Add(a);
        return psi;
    }

    /// <summary>nats-server's refusal: its first line, "nats-server: reason".</summary>
    private static string FirstLine(string text) => text.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)[0];

    [SkippableTheory]
    [MemberData(nameof(Refused))]
    public async Task A_block_nats_server_refuses_is_refused_with_its_text_before_anything_binds(string name, string body)
    {
        var oracle = Prerequisites.RequireOracle214(output);
        var config = WriteConfig(body);
        try
        {
            var (goCode, goText) = await RunAsync(Go(oracle, "-c", config));
            var (ourCode, ourText) = await RunAsync(TestEnvironment.OursStartInfo("-c", config));
            output.WriteLine($"{name}\n2.14.5 ({goCode}): {goText}\nours ({ourCode}): {ourText}");
            Assert.Equal(1, goCode);
            Assert.Equal(1, ourCode);
            Assert.Equal(FirstLine(goText), FirstLine(ourText));
            // Refused before the core bound a port or started a gateway.
            Assert.DoesNotContain("Listening for", ourText, StringComparison.Ordinal);
            Assert.DoesNotContain("Started the", ourText, StringComparison.Ordinal);
            Assert.DoesNotContain("Server is ready", ourText, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(config);
        }
    }

    /// <summary>
    /// <c>-t</c>: nats-server checks the parse of its blocks (unknown fields, durations, the TLS files) and says
    /// "configuration file ... is valid" otherwise; ours refuses the same ones with the same text. The checks nats-server
    /// makes only at start (validateOptions: websocket without TLS, origins, mqtt without JetStream) ours makes at -t
    /// too, so there ours is stricter (Not_at_dash_t below).
    /// </summary>
    [SkippableTheory]
    [InlineData("websocket {{ port: {0}, no_tls: true, bogus: 1 }}")]
    [InlineData("tls {{ cert_file: \"/nonexistent.pem\", key_file: \"/nonexistent.key\" }}")]
    [InlineData("tls {{ bogus: 1 }}")]
    public async Task Dash_t_refuses_what_nats_server_dash_t_refuses(string body)
    {
        var oracle = Prerequisites.RequireOracle214(output);
        var config = WriteConfig(body);
        try
        {
            var (goCode, goText) = await RunAsync(Go(oracle, "-t", "-c", config));
            var (ourCode, ourText) = await RunAsync(TestEnvironment.OursStartInfo("-t", "-c", config));
            output.WriteLine($"2.14.5 ({goCode}): {goText}\nours ({ourCode}): {ourText}");
            Assert.Equal(1, goCode);
            Assert.Equal(1, ourCode);
            Assert.Equal(FirstLine(goText), FirstLine(ourText));
        }
        finally
        {
            File.Delete(config);
        }
    }

    [SkippableFact]
    public async Task Not_at_dash_t_nats_server_checks_websocket_tls_only_at_start_ours_already_at_dash_t()
    {
        var oracle = Prerequisites.RequireOracle214(output);
        var config = WriteConfig("websocket {{ port: {0} }}");
        try
        {
            var (goCode, goText) = await RunAsync(Go(oracle, "-t", "-c", config));
            var (ourCode, ourText) = await RunAsync(TestEnvironment.OursStartInfo("-t", "-c", config));
            output.WriteLine($"2.14.5 ({goCode}): {goText}\nours ({ourCode}): {ourText}");
            Assert.Equal(0, goCode);
            Assert.Contains("is valid", goText, StringComparison.Ordinal);
            Assert.Equal(1, ourCode);
            Assert.Equal("nats-server: websocket requires TLS configuration", FirstLine(ourText));
        }
        finally
        {
            File.Delete(config);
        }
    }

    [SkippableFact]
    public async Task A_good_config_is_valid_at_dash_t_and_starts()
    {
        var oracle = Prerequisites.RequireOracle214(output);
        int ws = TestPorts.Next(), mqtt = TestPorts.Next();
        var config = WriteConfig($"server_name: good\njetstream {{{{ store_dir: \"{Store}\" }}}}\n" +
            $"websocket {{{{ port: {ws}, no_tls: true, allowed_origins: [\"https://example.com\"] }}}}\nmqtt {{{{ port: {mqtt}, ack_wait: \"30s\" }}}}");
        try
        {
            var (goCode, goText) = await RunAsync(Go(oracle, "-t", "-c", config));
            var (ourCode, ourText) = await RunAsync(TestEnvironment.OursStartInfo("-t", "-c", config));
            output.WriteLine($"2.14.5 ({goCode}): {goText}\nours ({ourCode}): {ourText}");
            Assert.Equal(0, goCode);
            Assert.Equal(0, ourCode);
            Assert.Contains($"configuration file {config} is valid", ourText, StringComparison.Ordinal);

            var psi = TestEnvironment.OursStartInfo("-c", config);
            psi.RedirectStandardError = true;
            using var p = Process.Start(psi)!;
            try
            {
                using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(30));
                while (await p.StandardError.ReadLineAsync(cts.Token) is { } line)
                {
                    output.WriteLine(line);
                    if (line.Contains("Server is ready", StringComparison.Ordinal)) return;
                }
                Assert.Fail("the core exited without saying it is ready");
            }
            finally
            {
                if (!p.HasExited) p.Kill(entireProcessTree: true);
            }
        }
        finally
        {
            File.Delete(config);
        }
    }

    /// <summary>A gateway that is not there is refused before the core listens, not after "Server is ready".</summary>
    [Fact]
    public async Task A_missing_gateway_is_refused_before_anything_binds()
    {
        var config = WriteConfig("websocket {{ port: {0}, no_tls: true }}");
        try
        {
            var psi = TestEnvironment.OursStartInfo("-c", config);
            psi.Environment["NATSBROKER_WEBSOCKET_GATEWAY"] = "/nonexistent/NatsBroker.WebSocketGateway";
            var (code, text) = await RunAsync(psi);
            output.WriteLine(text);
            Assert.Equal(1, code);
            Assert.Equal("nats-server: websocket: the gateway was not found (build gateways/websocket or set NATSBROKER_WEBSOCKET_GATEWAY)", FirstLine(text));
            Assert.DoesNotContain("Listening for", text, StringComparison.Ordinal);
        }
        finally
        {
            File.Delete(config);
        }
    }
}
