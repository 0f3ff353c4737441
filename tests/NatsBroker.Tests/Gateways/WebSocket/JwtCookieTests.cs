using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Accounts;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>
/// <c>websocket { jwt_cookie }</c> end to end with the core's operator-mode users: a browser that cannot set
/// CONNECT's jwt sends it in a cookie on the upgrade request; the gateway puts it in CONNECT (nats-server
/// client.go processConnect: only when CONNECT has no jwt), and the core authenticates the user into the JWT's
/// account. Go nats-server 2.9.10 with the same config is the oracle.
/// </summary>
[Collection("Gateways")]
public sealed class JwtCookieTests(ITestOutputHelper output)
{
    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Sys = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair A = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair B = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair Browser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair InA = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair InB = KeyPair.CreatePair(PrefixByte.User);

    private static string Config(int wsPort) =>
        $$"""
        operator: {{JwtFactory.Operator(Op, Sys.GetPublicKey())}}
        system_account: {{Sys.GetPublicKey()}}
        resolver: MEMORY
        resolver_preload: {
          {{Sys.GetPublicKey()}}: {{JwtFactory.Account(Op, Sys, name: "SYS")}}
          {{A.GetPublicKey()}}: {{JwtFactory.Account(Op, A, name: "A")}}
          {{B.GetPublicKey()}}: {{JwtFactory.Account(Op, B, name: "B")}}
        }
        websocket {
          port: {{wsPort}}
          no_tls: true
          jwt_cookie: "my_jwt"
        }
        """;

    private async Task<(ServerProcess Server, int WsPort)> Start(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        int wsPort = TestPorts.Next();
        var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Config(wsPort), Port = TestPorts.Next() }, output);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        return (server, wsPort);
    }

    /// <summary>Reads WebSocket frames until the text received contains <paramref name="expected"/> or the server closes.</summary>
    private static async Task<string> ReadUntil(RawWs ws, string expected)
    {
        var text = new StringBuilder();
        while (!text.ToString().Contains(expected, StringComparison.Ordinal))
        {
            (int op, byte[] payload) = await ws.ReadFrame();
            if (op == 8)
            {
                text.Append("<close>");
                break;
            }
            text.Append(Encoding.UTF8.GetString(payload));
        }
        return text.ToString();
    }

    private static async Task SendText(RawWs ws, string ops) => await ws.Send(1, Encoding.ASCII.GetBytes(ops), fin: true);

    private static NatsOpts Creds(ServerProcess s, string file) => new()
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { CredsFile = file },
        ConnectTimeout = TimeSpan.FromSeconds(10),
    };

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task A_bearer_user_jwt_in_the_cookie_logs_the_browser_into_its_account(ServerKind kind)
    {
        var (server, wsPort) = await Start(kind);
        await using var _ = server;
        string bearer = JwtFactory.User(A, Browser, new JsonObject { ["bearer_token"] = true });
        using var ws = await RawWs.Connect(wsPort, $"Cookie: other=1; my_jwt={bearer}\r\n");
        Assert.StartsWith("INFO ", await ReadUntil(ws, "\r\n"), StringComparison.Ordinal);
        await SendText(ws, "CONNECT {\"verbose\":false,\"pedantic\":false}\r\nSUB cookie.x 1\r\nPING\r\n");
        Assert.Contains("PONG", await ReadUntil(ws, "PONG"), StringComparison.Ordinal);

        // Only its account's traffic reaches it: B publishes first, then A.
        string dir = Directory.CreateTempSubdirectory("cookie").FullName;
        try
        {
            string aCreds = Path.Combine(dir, "a.creds"), bCreds = Path.Combine(dir, "b.creds");
            await File.WriteAllTextAsync(aCreds, JwtFactory.Creds(JwtFactory.User(A, InA), InA));
            await File.WriteAllTextAsync(bCreds, JwtFactory.Creds(JwtFactory.User(B, InB), InB));
            await using (var b = new NatsConnection(Creds(server, bCreds)))
            {
                await b.PublishAsync("cookie.x", "from-b");
                await b.PingAsync();
            }
            await using var a = new NatsConnection(Creds(server, aCreds));
            await a.PublishAsync("cookie.x", "from-a");
            string got = await ReadUntil(ws, "from-a");
            Assert.Contains("MSG cookie.x 1 6\r\nfrom-a", got, StringComparison.Ordinal);
            Assert.DoesNotContain("from-b", got, StringComparison.Ordinal);
        }
        finally
        {
            Directory.Delete(dir, recursive: true);
        }
    }

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task A_user_jwt_in_the_cookie_still_needs_the_nonce_signed_unless_it_is_a_bearer_token(ServerKind kind)
    {
        var (server, wsPort) = await Start(kind);
        await using var _ = server;
        string jwt = JwtFactory.User(A, Browser);

        // Signed: the nonce the client saw (the core's, relayed by the gateway) signed with the user's key.
        using (var ws = await RawWs.Connect(wsPort, $"Cookie: my_jwt={jwt}\r\n"))
        {
            string info = await ReadUntil(ws, "\r\n");
            string nonce = JsonDocument.Parse(info["INFO ".Length..].Trim()).RootElement.GetProperty("nonce").GetString()!;
            await SendText(ws, $"CONNECT {{\"verbose\":false,\"sig\":\"{JwtFactory.SignNonce(Browser, nonce)}\"}}\r\nPING\r\n");
            Assert.Contains("PONG", await ReadUntil(ws, "PONG"), StringComparison.Ordinal);
        }

        // Not signed: refused as nats-server refuses it.
        using (var ws = await RawWs.Connect(wsPort, $"Cookie: my_jwt={jwt}\r\n"))
        {
            await ReadUntil(ws, "\r\n");
            await SendText(ws, "CONNECT {\"verbose\":false}\r\nPING\r\n");
            Assert.Contains("-ERR 'Authorization Violation'", await ReadUntil(ws, "Authorization Violation"), StringComparison.Ordinal);
        }

        // No cookie, no credentials: refused.
        using (var ws = await RawWs.Connect(wsPort))
        {
            await ReadUntil(ws, "\r\n");
            await SendText(ws, "CONNECT {\"verbose\":false}\r\nPING\r\n");
            Assert.Contains("-ERR 'Authorization Violation'", await ReadUntil(ws, "Authorization Violation"), StringComparison.Ordinal);
        }
    }
}
