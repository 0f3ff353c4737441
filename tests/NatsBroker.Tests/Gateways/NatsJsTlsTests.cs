using System.Net;
using System.Net.Sockets;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// nats.js 2.29 over TLS (tests/js/tls.mjs): ours through the supervised tls-terminator, nats-server with its
/// in-process TLS, the same config file for both.
/// </summary>
[Collection("Gateways")]
public sealed class NatsJsTlsTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    private async Task Run(ServerKind kind, string tlsExtra, string @case, (string Cert, string Key)? clientCert = null)
    {
        Prerequisites.RequireNode(output);
        Prerequisites.RequireServer(kind, output);
        var config = $$"""
            tls {
              cert_file: "{{_pki.ServerCert}}"
              key_file: "{{_pki.ServerKey}}"
              {{tlsExtra}}
            }
            """;
        await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = config, Port = TestPorts.Next() }, output);
        var env = new Dictionary<string, string> { ["CASE"] = @case, ["CA_FILE"] = _pki.CaFile };
        if (clientCert is { } c)
        {
            env["CERT_FILE"] = c.Cert;
            env["KEY_FILE"] = c.Key;
        }
        // The server certificate names localhost and 127.0.0.1.
        await NodeClient.RunAndAssertOkAsync("tls.mjs", [$"tls://127.0.0.1:{server.Port}"], TimeSpan.FromSeconds(60), env, output);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public Task Info_first_pub_sub_large_messages_and_request_reply(ServerKind kind) => Run(kind, "", "info-first");

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public Task Mutual_TLS_refuses_without_a_certificate_and_serves_with_one(ServerKind kind) =>
        Run(kind, $"ca_file: \"{_pki.CaFile}\"\nverify: true", "mtls", _pki.Issue("jsclient", "CN=js client"));

    /// <summary>nats-server 2.9.10 has no handshake_first (2.10.?), so ours only.</summary>
    [SkippableFact]
    public Task Handshake_first() => Run(ServerKind.Ours, "handshake_first: true", "handshake-first");
}
