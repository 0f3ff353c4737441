using System.Text.Json.Serialization;

namespace NatsBroker.Cluster;

/// <summary>
/// A route INFO, sent and received (server/server.go Info, the fields route.go startRouteAcceptLoop and
/// processRouteInfo use). Field order and omission follow nats-server's struct tags; unknown fields from newer
/// peers (route_pool_size, compression, gossip_mode...) are ignored, which is how a 2.14.5 peer's INFO reads to a
/// 2.9 node.
/// </summary>
public sealed class RouteInfo
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("server_name")] public string ServerName { get; set; } = "";
    [JsonPropertyName("version")] public string Version { get; set; } = "";
    [JsonPropertyName("proto")] public int Proto { get; set; }
    [JsonPropertyName("go")] public string Go { get; set; } = "";
    [JsonPropertyName("host")] public string Host { get; set; } = "";
    [JsonPropertyName("port")] public int Port { get; set; }
    [JsonPropertyName("headers"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool Headers { get; set; }
    [JsonPropertyName("auth_required"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool AuthRequired { get; set; }
    [JsonPropertyName("tls_required"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsRequired { get; set; }
    [JsonPropertyName("tls_verify"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsVerify { get; set; }
    [JsonPropertyName("max_payload")] public int MaxPayload { get; set; }
    [JsonPropertyName("jetstream"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool JetStream { get; set; }
    /// <summary>The route URL peers should dial (<c>nats-route://host:port/</c>): set with <c>advertise</c>, and filled in
    /// from the TCP peer address when an INFO is forwarded to other routes (gossip).</summary>
    [JsonPropertyName("ip"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Ip { get; set; }
    [JsonPropertyName("connect_urls"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string[]? ConnectUrls { get; set; }
    [JsonPropertyName("ws_connect_urls"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string[]? WsConnectUrls { get; set; }
    [JsonPropertyName("ldm"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool LameDuckMode { get; set; }
    [JsonPropertyName("nonce"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Nonce { get; set; }
    [JsonPropertyName("cluster"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Cluster { get; set; }
    [JsonPropertyName("cluster_dynamic"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool ClusterDynamic { get; set; }
    /// <summary>Set on an INFO about a super-cluster gateway (not built: such INFOs are ignored).</summary>
    [JsonPropertyName("gateway"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Gateway { get; set; }
    [JsonPropertyName("lnoc"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool Lnoc { get; set; }
    /// <summary>Our cluster <c>permissions { import }</c> (server.go Info Import).</summary>
    [JsonPropertyName("import"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public RoutePermission? Import { get; set; }
    [JsonPropertyName("export"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public RoutePermission? Export { get; set; }
}

/// <summary>One side of route permissions as INFO carries it (server/auth.go SubjectPermission).</summary>
public sealed class RoutePermission
{
    [JsonPropertyName("allow"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? Allow { get; set; }
    [JsonPropertyName("deny"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? Deny { get; set; }

    public static RoutePermission? From(NatsBroker.Configuration.SubjectPermission? p) => p is null ? null : new RoutePermission { Allow = p.Allow, Deny = p.Deny };
}

/// <summary>
/// A route CONNECT (route.go sendRouteConnect, connectInfo). <c>name</c> is the sender's server ID; <c>lang</c> is
/// never set by a route, so a client that sends it is on the wrong port (processRouteConnect).
/// </summary>
public sealed class RouteConnect
{
    [JsonPropertyName("echo")] public bool Echo { get; set; } = true;
    [JsonPropertyName("verbose")] public bool Verbose { get; set; }
    [JsonPropertyName("pedantic")] public bool Pedantic { get; set; }
    [JsonPropertyName("user"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? User { get; set; }
    [JsonPropertyName("pass"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Pass { get; set; }
    [JsonPropertyName("tls_required")] public bool TlsRequired { get; set; }
    [JsonPropertyName("headers")] public bool Headers { get; set; }
    [JsonPropertyName("name")] public string Name { get; set; } = "";
    [JsonPropertyName("cluster")] public string Cluster { get; set; } = "";
    [JsonPropertyName("cluster_dynamic"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool Dynamic { get; set; }
    [JsonPropertyName("lnoc")] public bool Lnoc { get; set; }
    [JsonPropertyName("lang"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Lang { get; set; }
    [JsonPropertyName("gateway"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Gateway { get; set; }
}

[JsonSourceGenerationOptions(DefaultIgnoreCondition = JsonIgnoreCondition.Never, PropertyNameCaseInsensitive = false)]
[JsonSerializable(typeof(RouteInfo))]
[JsonSerializable(typeof(RouteConnect))]
internal sealed partial class RouteJsonContext : JsonSerializerContext;
