using System.Buffers;
using System.Text;
using System.Text.Json;
using NatsBroker.Monitoring;
using NatsBroker.Routing;
using NatsBroker.Server;

namespace NatsBroker.Accounts;

/// <summary>
/// Writes and publishes <c>io.nats.server.metric.v1.service_latency</c> (server/accounts.go ServiceLatency,
/// sendLatencyResult) into the exporting account on the export's results subject. Field order and omissions as
/// nats-server's encoding/json writes them: type, id, timestamp, status, description?, requestor?, responder?,
/// header?, start, service, system, total; durations in nanoseconds. One per server (it knows the server's name
/// for the responder's ClientInfo).
/// </summary>
internal sealed class ServiceLatencyReporter(string serverName)
{
    public const string MetricType = "io.nats.server.metric.v1.service_latency";

    /// <summary>One measurement, as the tracking code computed it (accounts.go sendTrackingLatency and friends).</summary>
    public readonly record struct Result(int Status, string? Description, DateTime RequestStart, TimeSpan Service, TimeSpan System, TimeSpan Total);

    /// <summary>Publishes a metric within the caller's delivery batch (the request or response being routed).</summary>
    public void Publish(Account exporter, string subject, in Result result, IPublisher? requestor, bool share, IPublisher? responder,
        SortedDictionary<string, List<string>>? header, DeliveryBatch? batch)
    {
        var json = Build(result, requestor, share, responder, header);
        var subjectBytes = Encoding.UTF8.GetBytes(subject);
        if (batch is null) exporter.Router.PublishInternal(subjectBytes, default, default, json);
        else exporter.Router.Publish(null, subjectBytes, default, -1, new ReadOnlySequence<byte>(json), null, batch);
    }

    private byte[] Build(in Result r, IPublisher? requestor, bool share, IPublisher? responder, SortedDictionary<string, List<string>>? header)
    {
        var buffer = new ArrayBufferWriter<byte>(768);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteString("type", MetricType);
            w.WriteString("id", SystemEventWriter.NewId());
            w.WriteString("timestamp", GoFormat.Time(DateTime.UtcNow));
            w.WriteNumber("status", r.Status);
            if (!string.IsNullOrEmpty(r.Description)) w.WriteString("description", r.Description);
            WriteClient(w, "requestor", requestor, share);
            WriteClient(w, "responder", responder, detailed: true);
            if (header is { Count: > 0 })
            {
                w.WriteStartObject("header");
                foreach (var (key, values) in header)
                {
                    w.WriteStartArray(key);
                    foreach (var v in values) w.WriteStringValue(v);
                    w.WriteEndArray();
                }
                w.WriteEndObject();
            }
            w.WriteString("start", GoFormat.Time(r.RequestStart));
            w.WriteNumber("service", Nanoseconds(r.Service));
            w.WriteNumber("system", Nanoseconds(r.System));
            w.WriteNumber("total", Nanoseconds(r.Total));
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>The RTT a measurement uses for a requestor or responder: a client connection's; zero for anything else.</summary>
    public static TimeSpan Rtt(IPublisher? p) => p is ClientConnection c ? c.Rtt : TimeSpan.Zero;

    /// <summary>
    /// A connected user's JWT identity (sub, iss, name), read from the payload without checking the signature again:
    /// the JWT was verified when the client connected, and a metric should not cost an Ed25519 verification.
    /// </summary>
    private readonly record struct JwtIdentity(string? Subject, string? Issuer, string? Name)
    {
        public static JwtIdentity Of(string token)
        {
            var parts = token.Split('.');
            if (parts.Length != 3 || Auth.Jwt.Jwt.Base64UrlDecode(parts[1]) is not { } json) return default;
            try
            {
                using var doc = JsonDocument.Parse(json);
                var root = doc.RootElement;
                return new JwtIdentity(Auth.Jwt.JwtClaims.Str(root, "sub"), Auth.Jwt.JwtClaims.Str(root, "iss"), Auth.Jwt.JwtClaims.Str(root, "name"));
            }
            catch (JsonException)
            {
                return default; // verified at connect, so not expected; the metric then goes without the JWT's identity
            }
        }
    }

    private static long Nanoseconds(TimeSpan t) => t.Ticks * 100;

    /// <summary>
    /// client.go getClientInfo: account and RTT always; the rest when <paramref name="detailed"/> (the responder, or
    /// a requestor whose import shares). Left out for publishers that are not client connections (nil ClientInfo).
    /// </summary>
    private void WriteClient(Utf8JsonWriter w, string name, IPublisher? p, bool detailed)
    {
        if (p is not ClientConnection c) return;
        var connect = c.Connect;
        var jwt = detailed && !string.IsNullOrEmpty(connect?.Jwt) ? JwtIdentity.Of(connect.Jwt) : default;
        w.WriteStartObject(name);
        if (detailed)
        {
            w.WriteString("start", GoFormat.Time(c.ConnectedAt));
            if (!string.IsNullOrEmpty(c.RemoteIp)) w.WriteString("host", c.RemoteIp);
            w.WriteNumber("id", c.Id);
        }
        w.WriteString("acc", c.Account.Name);
        if (detailed)
        {
            // client.go getRawAuthUser: the nkey, the user name, a JWT user's public key, or the token.
            string? user = !string.IsNullOrEmpty(connect?.Nkey) ? connect.Nkey : jwt.Subject ?? c.AuthorizedUser ?? connect?.User;
            if (!string.IsNullOrEmpty(user)) w.WriteString("user", user);
            if (!string.IsNullOrEmpty(connect?.Name)) w.WriteString("name", connect.Name);
            if (!string.IsNullOrEmpty(connect?.Lang)) w.WriteString("lang", connect.Lang);
            if (!string.IsNullOrEmpty(connect?.Version)) w.WriteString("ver", connect.Version);
        }
        long rtt = Nanoseconds(c.Rtt);
        if (rtt != 0) w.WriteNumber("rtt", rtt);
        if (detailed)
        {
            w.WriteString("server", serverName);
            if (!string.IsNullOrEmpty(connect?.Jwt)) w.WriteString("jwt", connect.Jwt);
            if (!string.IsNullOrEmpty(jwt.Issuer)) w.WriteString("issuer_key", jwt.Issuer);
            if (!string.IsNullOrEmpty(jwt.Name)) w.WriteString("name_tag", jwt.Name);
            w.WriteString("kind", "Client");
            w.WriteString("client_type", "nats");
        }
        w.WriteEndObject();
    }
}
