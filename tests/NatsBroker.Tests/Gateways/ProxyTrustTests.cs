using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using NATS.NKeys;
using NatsBroker.Gateways.Link;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways;

/// <summary>
/// The core's side of the link: ADR-55 trusted proxies over the Unix socket, without a gateway process in between.
/// </summary>
[Collection("Gateways")]
public sealed class ProxyTrustTests(ITestOutputHelper output)
{
    private static async Task<(Socket Socket, string Info)> OpenUnix(string path)
    {
        var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        await socket.ConnectAsync(new UnixDomainSocketEndPoint(path));
        return (socket, await ReadLine(socket));
    }

    private static Task<string> ReadLine(Socket socket) => SocketLines.ReadLineAsync(socket);

    [Fact]
    public async Task Signed_nonce_is_trusted_and_the_end_users_address_shows_in_connz_forged_one_is_refused()
    {
        using var trusted = KeyPair.CreatePair(PrefixByte.User);
        using var stranger = KeyPair.CreatePair(PrefixByte.User);
        var config = $$"""proxies { trusted = [ { key: "{{trusted.GetPublicKey()}}" } ] }""";
        await using var server = await ServerProcess.StartAsync(ServerKind.Ours,
            new ServerStartOptions { Config = config, UnixSocket = true, Monitoring = true }, output);

        // Only our uid may connect to the core's socket; the peer's uid is checked again for proxy trust.
        if (!OperatingSystem.IsWindows())
            Assert.Equal(UnixFileMode.UserRead | UnixFileMode.UserWrite, File.GetUnixFileMode(server.UnixSocketPath!));

        // Trusted: the client's real address replaces the Unix socket's.
        var (good, info) = await OpenUnix(server.UnixSocketPath!);
        using (good)
        {
            var nonce = JsonDocument.Parse(info[5..]).RootElement.GetProperty("nonce").GetString();
            Assert.False(string.IsNullOrEmpty(nonce));
            using var signer = new ProxySigner(trusted.GetSeed());
            var client = new Contracts.Gateways.ProxiedClient { Gateway = "test", Ip = "203.0.113.7", Port = 40123, TlsVersion = "1.3", TlsCipherSuite = "TLS_AES_128_GCM_SHA256" };
            var connect = CoreLink.RewriteConnect("CONNECT {\"verbose\":false,\"name\":\"via-proxy\"}"u8, signer, nonce, client)!;
            await good.SendAsync(connect);
            await good.SendAsync("PING\r\n"u8.ToArray());
            Assert.Equal("PONG", await ReadLine(good));

            using var http = new HttpClient();
            var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(server)));
            var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray(), c => c.GetProperty("name").GetString() == "via-proxy");
            Assert.Equal("203.0.113.7", conn.GetProperty("ip").GetString());
            Assert.Equal(40123, conn.GetProperty("port").GetInt32());
            Assert.Equal("1.3", conn.GetProperty("tls_version").GetString());
            Assert.Equal(trusted.GetPublicKey(), conn.GetProperty("proxy").GetProperty("key").GetString());
        }

        // A key the core does not trust: the same nondescript error as any failed auth (ADR-55), then close.
        var (bad, badInfo) = await OpenUnix(server.UnixSocketPath!);
        using (bad)
        {
            var nonce = JsonDocument.Parse(badInfo[5..]).RootElement.GetProperty("nonce").GetString();
            using var signer = new ProxySigner(stranger.GetSeed());
            var connect = CoreLink.RewriteConnect("CONNECT {\"verbose\":false}"u8, signer, nonce, new Contracts.Gateways.ProxiedClient { Ip = "198.51.100.1", Port = 1 })!;
            // One send: the core answers the refused CONNECT and closes, so a PING sent after it can meet a closed socket.
            byte[] connectAndPing = [.. connect, .. "PING\r\n"u8];
            await bad.SendAsync(connectAndPing);
            Assert.Equal("-ERR 'Authorization Violation'", await ReadLine(bad));
        }

        // A client cannot claim an address without a valid signature: proxy_client alone is ignored.
        var (plain, _) = await OpenUnix(server.UnixSocketPath!);
        using (plain)
        {
            await plain.SendAsync("CONNECT {\"verbose\":false,\"name\":\"liar\",\"proxy_client\":{\"ip\":\"192.0.2.9\",\"port\":9}}\r\nPING\r\n"u8.ToArray());
            Assert.Equal("PONG", await ReadLine(plain));
            using var http = new HttpClient();
            var connz = JsonDocument.Parse(await http.GetStringAsync(await GatewayTestHelpers.ConnzUri(server)));
            var conn = Assert.Single(connz.RootElement.GetProperty("connections").EnumerateArray(), c => c.GetProperty("name").GetString() == "liar");
            Assert.NotEqual("192.0.2.9", conn.GetProperty("ip").GetString());
            Assert.False(conn.TryGetProperty("proxy", out _));
        }
    }
}
