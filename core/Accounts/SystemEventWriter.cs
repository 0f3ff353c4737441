using System.Buffers;
using System.Security.Cryptography;
using System.Text.Json;
using NatsBroker.Monitoring;
using NatsBroker.Server;

namespace NatsBroker.Accounts;

/// <summary>
/// The JSON of the system account's messages, field for field as nats-server 2.9.10 writes them (server/events.go):
/// the <c>server</c> object (ServerInfo: name, host, id, ver, seq, jetstream, time), the request envelope
/// <c>{"server":..,"data":..}</c>, statsz, and the client connect / disconnect / auth-error advisories.
/// Every message gets the next <c>seq</c>.
/// </summary>
internal sealed class SystemEventWriter(NatsServer server)
{
    private const string Base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    private long _seq;

    private void WriteServer(Utf8JsonWriter w)
    {
        w.WriteString("name", server.ServerName);
        w.WriteString("host", server.Options.Host);
        w.WriteString("id", server.ServerId);
        w.WriteString("ver", NatsServer.CompatibleVersion);
        w.WriteNumber("seq", Interlocked.Increment(ref _seq));
        w.WriteBoolean("jetstream", server.JetStream is not null);
        w.WriteString("time", GoFormat.Time(DateTime.UtcNow));
    }

    private static byte[] Build(Action<Utf8JsonWriter> body)
    {
        var buffer = new ArrayBufferWriter<byte>(1024);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            body(w);
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>A nuid-shaped event id (22 base62 characters).</summary>
    internal static string NewId()
    {
        Span<byte> raw = stackalloc byte[22];
        RandomNumberGenerator.Fill(raw);
        Span<char> id = stackalloc char[22];
        for (int i = 0; i < id.Length; i++) id[i] = Base62[raw[i] % Base62.Length];
        return new string(id);
    }

    /// <summary>The SHUTDOWN event: the ServerInfo object alone.</summary>
    public byte[] ServerInfo() => Build(WriteServer);

    /// <summary>
    /// <c>$SYS.REQ.USER.INFO</c>'s answer (events.go userInfoReq, UserInfo): <c>{"server":..,"data":{"user","account",
    /// "account_name","user_name"?,"permissions"?,"expires"?}}</c>; expires is a Go duration in nanoseconds, whole seconds.
    /// </summary>
    public byte[] UserInfo(string user, string account, string accountName, string? userName, Auth.ClientPermissions? permissions, TimeSpan? expires) =>
        Build(w =>
        {
            w.WriteStartObject("server");
            WriteServer(w);
            w.WriteEndObject();
            w.WriteStartObject("data");
            w.WriteString("user", user);
            w.WriteString("account", account);
            if (accountName.Length > 0) w.WriteString("account_name", accountName);
            if (!string.IsNullOrEmpty(userName)) w.WriteString("user_name", userName);
            if (permissions is not null)
            {
                w.WritePropertyName("permissions");
                permissions.WritePublic(w);
            }
            // time.Until(expires).Truncate(time.Second), omitted when zero.
            if (expires is { } e && (long)e.TotalSeconds != 0) w.WriteNumber("expires", (long)e.TotalSeconds * 1_000_000_000L);
            w.WriteEndObject();
        });

    /// <summary>A request's answer: <c>{"server":{..},"data":&lt;json&gt;}</c>.</summary>
    public byte[] Response(ReadOnlySpan<byte> dataJson)
    {
        var data = dataJson.ToArray();
        return Build(w =>
        {
            w.WriteStartObject("server");
            WriteServer(w);
            w.WriteEndObject();
            w.WritePropertyName("data");
            using var doc = JsonDocument.Parse(data);
            doc.RootElement.WriteTo(w);
        });
    }

    /// <summary>
    /// The directory resolver's answer to a claims update (server/accounts.go respondToUpdate, a Go map, so keys
    /// sorted): <c>{"data":{"account","code","message"},"server":..}</c>, or <c>{"error":{"account","code","description"},"server":..}</c>.
    /// </summary>
    public byte[] ClaimsResponse(string account, int code, string message, bool isError) => Build(w =>
    {
        w.WriteStartObject(isError ? "error" : "data");
        w.WriteString("account", account);
        w.WriteNumber("code", code);
        w.WriteString(isError ? "description" : "message", message);
        w.WriteEndObject();
        w.WriteStartObject("server");
        WriteServer(w);
        w.WriteEndObject();
    });

    /// <summary>STATSZ (the PING answer and the periodic event): <c>{"server":..,"statsz":{..}}</c>.</summary>
    public byte[] Statsz()
    {
        var (rss, cpu) = server.ProcessUsage();
        var (inMsgs, inBytes, outMsgs, outBytes) = server.MessageTotals();
        int activeAccounts = server.Accounts.All.Count(a => a.Connections > 0);
        long subscriptions = server.Accounts.All.Sum(a => (long)a.Router.SubList.Count);
        return Build(w =>
        {
            w.WriteStartObject("server");
            WriteServer(w);
            w.WriteEndObject();
            w.WriteStartObject("statsz");
            w.WriteString("start", GoFormat.Time(server.StartTime));
            w.WriteNumber("mem", rss);
            w.WriteNumber("cores", Environment.ProcessorCount);
            w.WriteNumber("cpu", Math.Round(cpu));
            w.WriteNumber("connections", server.ClientCount);
            w.WriteNumber("total_connections", server.TotalConnections);
            w.WriteNumber("active_accounts", activeAccounts);
            w.WriteNumber("subscriptions", subscriptions);
            WriteCounts(w, "sent", outMsgs, outBytes);
            WriteCounts(w, "received", inMsgs, inBytes);
            w.WriteNumber("slow_consumers", server.SlowConsumers);
            w.WriteNumber("active_servers", 1);
            w.WriteEndObject();
        });
    }

    private static void WriteCounts(Utf8JsonWriter w, string name, long msgs, long bytes)
    {
        w.WriteStartObject(name);
        w.WriteNumber("msgs", msgs);
        w.WriteNumber("bytes", bytes);
        w.WriteEndObject();
    }

    /// <summary>io.nats.server.advisory.v1.client_connect ($SYS.ACCOUNT.&lt;acc&gt;.CONNECT).</summary>
    public byte[] ClientConnect(ClientConnection c) => Build(w =>
    {
        Header(w, "io.nats.server.advisory.v1.client_connect", DateTime.UtcNow);
        WriteClient(w, c, disconnect: false, c.Account.Name);
    });

    /// <summary>
    /// io.nats.server.advisory.v1.client_disconnect: $SYS.ACCOUNT.&lt;acc&gt;.DISCONNECT, and the auth error event
    /// $SYS.SERVER.&lt;id&gt;.CLIENT.AUTH.ERR (same shape, reason "Authentication Failure", account <c>$G</c>).
    /// </summary>
    public byte[] ClientDisconnect(ClientConnection c, string reason, string account) => Build(w =>
    {
        Header(w, "io.nats.server.advisory.v1.client_disconnect", c.ClosedAt ?? DateTime.UtcNow);
        WriteClient(w, c, disconnect: true, account);
        // The client's own view: what it sent is what the server received.
        WriteCounts(w, "sent", c.OutMsgs, c.OutBytes);
        WriteCounts(w, "received", c.InMsgs, c.InBytes);
        w.WriteString("reason", reason);
    });

    private void Header(Utf8JsonWriter w, string type, DateTime timestamp)
    {
        w.WriteString("type", type);
        w.WriteString("id", NewId());
        w.WriteString("timestamp", GoFormat.Time(timestamp));
        w.WriteStartObject("server");
        WriteServer(w);
        w.WriteEndObject();
    }

    private static void WriteClient(Utf8JsonWriter w, ClientConnection c, bool disconnect, string account)
    {
        var connect = c.Connect;
        w.WriteStartObject("client");
        w.WriteString("start", GoFormat.Time(c.ConnectedAt));
        w.WriteString("host", c.RemoteIp);
        w.WriteNumber("id", c.Id);
        w.WriteString("acc", account);
        string? user = c.AuthorizedUser ?? connect?.User;
        if (!string.IsNullOrEmpty(user)) w.WriteString("user", user);
        if (!string.IsNullOrEmpty(connect?.Name)) w.WriteString("name", connect.Name);
        if (!string.IsNullOrEmpty(connect?.Lang)) w.WriteString("lang", connect.Lang);
        if (!string.IsNullOrEmpty(connect?.Version)) w.WriteString("ver", connect.Version);
        if (disconnect)
        {
            long rttNs = (long)c.Rtt.TotalNanoseconds;
            if (rttNs > 0) w.WriteNumber("rtt", rttNs);
            w.WriteString("stop", GoFormat.Time(c.ClosedAt ?? DateTime.UtcNow));
        }
        if (!string.IsNullOrEmpty(connect?.Jwt)) w.WriteString("jwt", connect.Jwt);
        w.WriteString("kind", "Client");
        w.WriteString("client_type", "nats");
        w.WriteEndObject();
    }
}
