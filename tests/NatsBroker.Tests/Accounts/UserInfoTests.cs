using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// <c>$SYS.REQ.USER.INFO</c> with NATS.Net, on nats-server's own test config (server/client_test.go
/// TestClientUserInfoReq). nats-server 2.9.10 does not answer it (2.10 does), so this runs against ours.
/// </summary>
public sealed class UserInfoTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private const string Config = """
        PERMS = {
          publish = { allow: "$SYS.REQ.>", deny: "$SYS.REQ.ACCOUNT.>" }
          subscribe = "_INBOX.>"
          allow_responses: true
        }
        accounts: {
          A: { users: [ { user: dlc, password: pass, permissions: $PERMS } ] }
          $SYS { users = [ { user: "admin", pass: "s3cr3t!" } ] }
        }
        no_auth_user: dlc
        """;

    internal static async Task<JsonElement> UserInfoAsync(NatsConnection nc)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var reply = await nc.RequestAsync<byte[], byte[]>("$SYS.REQ.USER.INFO", [], cancellationToken: cts.Token);
        using var doc = JsonDocument.Parse(reply.Data!);
        Assert.True(doc.RootElement.TryGetProperty("server", out var server));
        Assert.Equal(nc.ServerInfo!.Id, server.GetProperty("id").GetString());
        return doc.RootElement.GetProperty("data").Clone();
    }

    [SkippableFact]
    public async Task Users_learn_their_account_and_permissions()
    {
        var s = await SharedAsync(ServerKind.Ours, Config);
        await using (var dlc = new NatsConnection(new NatsOpts { Url = s.Url }))
        {
            var info = await UserInfoAsync(dlc);
            Assert.Equal(
                """{"user":"dlc","account":"A","account_name":"A","permissions":{"publish":{"allow":["$SYS.REQ.\u003E"],"deny":["$SYS.REQ.ACCOUNT.\u003E"]},"subscribe":{"allow":["_INBOX.\u003E"]},"responses":{"max":1,"ttl":120000000000}}}""",
                info.GetRawText());
        }

        await using var admin = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { Username = "admin", Password = "s3cr3t!" } });
        Assert.Equal("""{"user":"admin","account":"$SYS","account_name":"$SYS"}""", (await UserInfoAsync(admin)).GetRawText());
    }

    /// <summary>
    /// <c>$SYS.REQ.USER.&lt;acc&gt;.INFO</c> (events.go userDirectReqSubj) is the system account's subject behind the
    /// imports: a system user publishing it directly gets its own info, whatever account the subject names.
    /// </summary>
    [SkippableFact]
    public async Task The_system_account_form_answers_about_the_requester()
    {
        var s = await SharedAsync(ServerKind.Ours, Config);
        await using var admin = new NatsConnection(new NatsOpts { Url = s.Url, AuthOpts = new NatsAuthOpts { Username = "admin", Password = "s3cr3t!" } });
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var reply = await admin.RequestAsync<byte[], byte[]>("$SYS.REQ.USER.A.INFO", [], cancellationToken: cts.Token);
        using var doc = JsonDocument.Parse(reply.Data!);
        Assert.Equal("""{"user":"admin","account":"$SYS","account_name":"$SYS"}""", doc.RootElement.GetProperty("data").GetRawText());

        // Outside the system account the subject is nothing special: nobody answers.
        await using var dlc = new NatsConnection(new NatsOpts { Url = s.Url });
        await Assert.ThrowsAnyAsync<NatsException>(async () =>
            await dlc.RequestAsync<byte[], byte[]>("$SYS.REQ.USER.A.INFO", [], replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(1) }, cancellationToken: cts.Token));
    }

    [SkippableFact]
    public async Task A_user_without_publish_permission_for_it_gets_no_answer()
    {
        var s = await SharedAsync(ServerKind.Ours, Config.Replace("allow: \"$SYS.REQ.>\"", "allow: \"other\"", StringComparison.Ordinal));
        await using var dlc = new NatsConnection(new NatsOpts { Url = s.Url, RequestTimeout = TimeSpan.FromSeconds(1) });
        await Assert.ThrowsAnyAsync<NatsException>(async () =>
            await dlc.RequestAsync<byte[], byte[]>("$SYS.REQ.USER.INFO", [], replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(1) }));
    }
}
