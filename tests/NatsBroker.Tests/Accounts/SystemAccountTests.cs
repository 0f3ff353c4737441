using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// The system account against both servers: request services answered in nats-server's envelope and the connect,
/// disconnect and auth-error advisories, with a config shaped like NATS.Net's own lame-duck tests (accounts plus
/// system_account).
/// </summary>
public sealed class SystemAccountTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Config = """
        accounts {
          SYS: { users: [{user: sys, password: sys}] }
          A: { users: [{user: a, password: a}] }
        }
        system_account: SYS
        """;

    private const string SysConnect = """{"verbose":false,"pedantic":false,"user":"sys","pass":"sys","headers":true}""";
    private static readonly string[] ServerKeys = ["name", "host", "id", "ver", "seq", "jetstream", "time"];

    private static List<string> Keys(JsonElement e) => [.. e.EnumerateObject().Select(p => p.Name)];

    private static async Task<JsonElement> Request(RawClient sys, string subject, string body = "")
    {
        await sys.SendAsync($"PUB {subject} _INBOX.sys {body.Length}\r\n{body}\r\n");
        while (true)
        {
            var m = await sys.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
            if (m.Subject == "_INBOX.sys") return JsonDocument.Parse(m.Payload).RootElement.Clone();
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Server_requests_answer_in_the_system_envelope(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var sys = await Connected(s, SysConnect);
        string serverId = sys.Info!.Value.GetProperty("server_id").GetString()!;
        await sys.SendLineAsync("SUB _INBOX.sys 1");
        await sys.PingAsync();

        var ping = await Request(sys, "$SYS.REQ.SERVER.PING");
        Assert.Equal(ServerKeys, Keys(ping.GetProperty("server")));
        Assert.Equal(serverId, ping.GetProperty("server").GetProperty("id").GetString());
        var statsz = ping.GetProperty("statsz");
        foreach (var k in new[] { "start", "mem", "cores", "cpu", "connections", "total_connections", "active_accounts", "subscriptions", "sent", "received", "slow_consumers", "active_servers" })
            Assert.True(statsz.TryGetProperty(k, out _), k);
        Assert.True(statsz.GetProperty("connections").GetInt32() >= 1);

        var health = await Request(sys, "$SYS.REQ.SERVER.PING.HEALTHZ");
        Assert.Equal("ok", health.GetProperty("data").GetProperty("status").GetString());

        var varz = await Request(sys, $"$SYS.REQ.SERVER.{serverId}.VARZ");
        Assert.Equal(serverId, varz.GetProperty("data").GetProperty("server_id").GetString());
        Assert.Equal("SYS", varz.GetProperty("data").GetProperty("system_account").GetString());

        await using var a = await Connected(s, """{"verbose":false,"pedantic":false,"user":"a","pass":"a"}""");
        var connz = await Request(sys, "$SYS.REQ.ACCOUNT.A.CONNZ");
        Assert.Equal(1, connz.GetProperty("data").GetProperty("num_connections").GetInt32());
        var info = await Request(sys, "$SYS.REQ.ACCOUNT.A.INFO");
        Assert.Equal("A", info.GetProperty("data").GetProperty("account_name").GetString());
        Assert.Equal(1, info.GetProperty("data").GetProperty("client_connections").GetInt32());
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Connect_disconnect_and_auth_error_advisories(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var sys = await Connected(s, SysConnect);
        await sys.SendLineAsync("SUB $SYS.ACCOUNT.A.* 1");
        await sys.SendLineAsync("SUB $SYS.SERVER.*.CLIENT.AUTH.ERR 2");
        await sys.PingAsync();

        var a = await Connected(s, """{"verbose":false,"pedantic":false,"user":"a","pass":"a","name":"probe","lang":"raw","version":"9.9"}""");
        var connect = await NextEvent(sys, "$SYS.ACCOUNT.A.CONNECT");
        Assert.Equal("io.nats.server.advisory.v1.client_connect", connect.GetProperty("type").GetString());
        Assert.Equal(22, connect.GetProperty("id").GetString()!.Length);
        Assert.Equal(["type", "id", "timestamp", "server", "client"], Keys(connect));
        var client = connect.GetProperty("client");
        Assert.Equal("A", client.GetProperty("acc").GetString());
        Assert.Equal("a", client.GetProperty("user").GetString());
        Assert.Equal("probe", client.GetProperty("name").GetString());
        Assert.Equal("9.9", client.GetProperty("ver").GetString());
        Assert.Equal("Client", client.GetProperty("kind").GetString());
        Assert.Equal("nats", client.GetProperty("client_type").GetString());

        await a.DisposeAsync();
        var disconnect = await NextEvent(sys, "$SYS.ACCOUNT.A.DISCONNECT");
        Assert.Equal("io.nats.server.advisory.v1.client_disconnect", disconnect.GetProperty("type").GetString());
        Assert.Equal(["type", "id", "timestamp", "server", "client", "sent", "received", "reason"], Keys(disconnect));
        Assert.True(disconnect.GetProperty("client").TryGetProperty("stop", out _));

        await using var bad = await Raw(s, """{"verbose":false,"pedantic":false,"user":"a","pass":"wrong"}""");
        await bad.ExpectErrAsync("Authorization Violation");
        var authErr = await NextEvent(sys, null, ".CLIENT.AUTH.ERR");
        Assert.Equal("Authentication Failure", authErr.GetProperty("reason").GetString());
        Assert.Equal("a", authErr.GetProperty("client").GetProperty("user").GetString());
    }

    private static async Task<JsonElement> NextEvent(RawClient sys, string? subject, string? suffix = null)
    {
        while (true)
        {
            var m = await sys.ExpectMessageAsync(TimeSpan.FromSeconds(10), skipPongs: true);
            if ((subject is not null && m.Subject == subject) || (suffix is not null && m.Subject.EndsWith(suffix, StringComparison.Ordinal)))
                return JsonDocument.Parse(m.Payload).RootElement.Clone();
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task NatsNet_clients_connect_to_a_server_with_accounts_and_a_system_account(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        await using var a = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { Username = "a", Password = "a" } });
        await using var sys = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { Username = "sys", Password = "sys" } });
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(15));
        await a.PingAsync(cts.Token);
        var reply = await sys.RequestAsync<string, string>("$SYS.REQ.SERVER.PING.HEALTHZ", "", cancellationToken: cts.Token);
        Assert.Contains("\"status\":\"ok\"", reply.Data, StringComparison.Ordinal);
    }
}
