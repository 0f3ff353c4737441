using System.Text.Json;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>/accountz and account-filtered /connz with accounts configured, against both servers.</summary>
public sealed class AccountMonitoringTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Config = """
        accounts {
          A: { users: [{user: a, password: a}], exports: [{stream: "x.>"}] }
          B: { users: [{user: b, password: b}], imports: [{stream: {account: A, subject: "x.>"}, prefix: "pre"}] }
        }
        """;

    private static async Task<JsonElement> Get(ServerProcess s, int port, string path)
    {
        using var http = new HttpClient();
        // The harness waits for the client port only; the monitoring listener may come up a moment later.
        string text;
        for (int attempt = 0; ; attempt++)
        {
            try
            {
                text = await http.GetStringAsync($"http://{s.Host}:{port}{path}");
                break;
            }
            catch (HttpRequestException) when (attempt < 50)
            {
                await Task.Delay(100);
            }
        }
        return JsonDocument.Parse(text).RootElement.Clone();
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Accountz_and_connz_see_accounts(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, Output);
        // A fixed monitoring port in the config (both servers then report it the same way).
        int port = TestPorts.Next();
        await using var s = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = Config + $"\nhttp_port: {port}\n" }, Output);
        await using var a = await Connected(s, """{"verbose":false,"pedantic":false,"user":"a","pass":"a"}""");
        await a.SendLineAsync("SUB foo 1");
        await a.PingAsync();

        var list = (await Get(s, port, "/accountz")).GetProperty("accounts").EnumerateArray().Select(e => e.GetString()).ToList();
        Assert.Contains("$G", list);
        Assert.Contains("A", list);
        Assert.Contains("B", list);

        var detail = (await Get(s, port, "/accountz?acc=A")).GetProperty("account_detail");
        Assert.Equal("A", detail.GetProperty("account_name").GetString());
        Assert.Equal(1, detail.GetProperty("client_connections").GetInt32());
        var export = Assert.Single(detail.GetProperty("exports").EnumerateArray());
        Assert.Equal(("x.>", "stream"), (export.GetProperty("subject").GetString(), export.GetProperty("type").GetString()));

        var connz = await Get(s, port, "/connz?acc=A&auth=1");
        var conn = Assert.Single(connz.GetProperty("connections").EnumerateArray());
        Assert.Equal(("a", "A"), (conn.GetProperty("authorized_user").GetString(), conn.GetProperty("account").GetString()));
        Assert.Empty((await Get(s, port, "/connz?acc=B")).GetProperty("connections").EnumerateArray());
    }
}
