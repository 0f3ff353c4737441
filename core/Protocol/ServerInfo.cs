using System.Text.Json.Serialization;

namespace NatsBroker.Protocol;

/// <summary>
/// The INFO the server sends on accept (server/server.go Info). Field names and omission rules follow
/// nats-server so clients that read them (server_id, version, headers, max_payload, ...) see the same JSON.
/// </summary>
public sealed class ServerInfo
{
    [JsonPropertyName("server_id")] public string ServerId { get; set; } = "";
    [JsonPropertyName("server_name")] public string ServerName { get; set; } = "";
    [JsonPropertyName("version")] public string Version { get; set; } = "";
    [JsonPropertyName("proto")] public int Proto { get; set; } = 1;
    [JsonPropertyName("git_commit"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? GitCommit { get; set; }
    [JsonPropertyName("go")] public string Go { get; set; } = "";
    [JsonPropertyName("host")] public string Host { get; set; } = "";
    [JsonPropertyName("port")] public int Port { get; set; }
    [JsonPropertyName("headers")] public bool Headers { get; set; }
    [JsonPropertyName("auth_required"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool AuthRequired { get; set; }
    [JsonPropertyName("tls_required"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsRequired { get; set; }
    [JsonPropertyName("max_payload")] public int MaxPayload { get; set; }
    [JsonPropertyName("jetstream"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool JetStream { get; set; }
    [JsonPropertyName("client_id")] public ulong ClientId { get; set; }
    [JsonPropertyName("client_ip")] public string? ClientIp { get; set; }
    [JsonPropertyName("nonce"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? Nonce { get; set; }
    /// <summary>In a cluster: the client URLs of this node and its peers (server.go Info ClientConnectURLs).</summary>
    [JsonPropertyName("connect_urls"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string[]? ConnectUrls { get; set; }
    [JsonPropertyName("ldm"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool LameDuckMode { get; set; }
    /// <summary>The JetStream API level (server.go sets it in every INFO, with or without JetStream).</summary>
    [JsonPropertyName("api_lvl"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public int ApiLevel { get; set; }
    /// <summary>The server's x25519 public key (auth callout encryption); nats-server 2.10+ sends it in every INFO.</summary>
    [JsonPropertyName("xkey"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? XKey { get; set; }
    /// <summary>Our implementation's name and version; nats-server has no such field, clients ignore it.</summary>
    [JsonPropertyName("implementation")] public string Implementation { get; set; } = "";
}

[JsonSourceGenerationOptions(DefaultIgnoreCondition = JsonIgnoreCondition.Never, PropertyNameCaseInsensitive = false)]
[JsonSerializable(typeof(ServerInfo))]
[JsonSerializable(typeof(ConnectOptions))]
internal sealed partial class ProtocolJsonContext : JsonSerializerContext;
