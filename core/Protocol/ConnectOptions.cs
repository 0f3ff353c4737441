using System.Text.Json.Serialization;

namespace NatsBroker.Protocol;

/// <summary>
/// The JSON body of a client's CONNECT (server/client.go ClientOpts):
/// <c>CONNECT {"verbose":false,"pedantic":false,"tls_required":false,"name":"","lang":"go","version":"1.2.2","protocol":1}</c>.
/// Unknown fields are ignored, as nats-server does. Missing fields keep nats-server's defaults
/// (server/client.go defaultOpts): verbose, pedantic and echo are on.
/// </summary>
public sealed class ConnectOptions
{
    [JsonPropertyName("verbose")] public bool Verbose { get; set; } = true;
    [JsonPropertyName("pedantic")] public bool Pedantic { get; set; } = true;
    [JsonPropertyName("tls_required")] public bool TlsRequired { get; set; }
    [JsonPropertyName("echo")] public bool Echo { get; set; } = true;
    [JsonPropertyName("headers")] public bool Headers { get; set; }
    [JsonPropertyName("no_responders")] public bool NoResponders { get; set; }
    [JsonPropertyName("name")] public string? Name { get; set; }
    [JsonPropertyName("lang")] public string? Lang { get; set; }
    [JsonPropertyName("version")] public string? Version { get; set; }
    [JsonPropertyName("protocol")] public int Protocol { get; set; }
    [JsonPropertyName("user")] public string? User { get; set; }
    [JsonPropertyName("pass")] public string? Pass { get; set; }
    [JsonPropertyName("auth_token")] public string? AuthToken { get; set; }
    [JsonPropertyName("nkey")] public string? Nkey { get; set; }
    [JsonPropertyName("sig")] public string? Sig { get; set; }
    [JsonPropertyName("jwt")] public string? Jwt { get; set; }
    /// <summary>ADR-55 (nats-server 2.12): a trusted proxy's signature of the INFO nonce (ClientConnection.Proxy.cs).</summary>
    [JsonPropertyName("proxy_sig")] public string? ProxySig { get; set; }
    /// <summary>Ours: the end user's address and TLS state, from a trusted gateway (contracts/Gateways).</summary>
    [JsonPropertyName("proxy_client")] public NatsBroker.Contracts.Gateways.ProxiedClient? ProxyClient { get; set; }
}
