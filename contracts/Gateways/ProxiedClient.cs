using System.Text.Json.Serialization;

namespace NatsBroker.Contracts.Gateways;

/// <summary>
/// What a trusted gateway tells the core about the end user it relays, inside that user's CONNECT
/// (the <see cref="ProxyConnectFields.Client"/> field), next to the ADR-55 <c>proxy_sig</c>.
/// nats-server 2.12's trusted proxies (ADR-55) only sign the nonce; this object is our extension: the core
/// applies it only when the signature verifies, so the end user's connection shows its real address and TLS
/// state in /connz and a verified certificate can become the user (<c>verify_and_map</c>).
/// </summary>
public sealed class ProxiedClient
{
    /// <summary>The gateway kind, e.g. <c>tls-terminator</c> (shown in /connz under <c>proxy</c>).</summary>
    [JsonPropertyName("gateway")] public string? Gateway { get; set; }
    /// <summary>The end user's IP address as the gateway saw it.</summary>
    [JsonPropertyName("ip")] public string? Ip { get; set; }
    [JsonPropertyName("port")] public int Port { get; set; }
    /// <summary>TLS version as nats-server prints it in /connz ("1.2", "1.3"); null for a plain connection.</summary>
    [JsonPropertyName("tls_version"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? TlsVersion { get; set; }
    /// <summary>Cipher suite name in Go's spelling (tls.CipherSuiteName), e.g. TLS_AES_128_GCM_SHA256.</summary>
    [JsonPropertyName("tls_cipher_suite"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? TlsCipherSuite { get; set; }
    /// <summary>The TLS handshake came before INFO (<c>handshake_first</c>).</summary>
    [JsonPropertyName("tls_first"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingDefault)] public bool TlsFirst { get; set; }
    /// <summary>Subject of the verified client certificate (RFC 2253 order, as Go prints it).</summary>
    [JsonPropertyName("tls_peer_subject"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? TlsPeerSubject { get; set; }
    /// <summary>
    /// Set only under <c>verify_and_map</c>: the verified certificate's identities in the order nats-server tries
    /// them (server/auth.go checkClientTLSCertSubject: e-mail addresses, DNS names, URIs, then the subject).
    /// The core maps the first one that names a configured user; none matching is an Authorization Violation.
    /// </summary>
    [JsonPropertyName("tls_map"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public List<string>? TlsMapIdentities { get; set; }
    /// <summary>
    /// The gateway's own <c>no_auth_user</c> (nats-server's <c>websocket { no_auth_user }</c>): a user who sends no
    /// credentials becomes this configured user, instead of the top-level no_auth_user.
    /// </summary>
    [JsonPropertyName("no_auth_user"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? NoAuthUser { get; set; }
    /// <summary>The WebSocket upgrade's Origin header, when the user came over WebSocket and sent one.</summary>
    [JsonPropertyName("ws_origin"), JsonIgnore(Condition = JsonIgnoreCondition.WhenWritingNull)] public string? WebSocketOrigin { get; set; }
}

/// <summary>Names of the CONNECT fields a gateway adds.</summary>
public static class ProxyConnectFields
{
    /// <summary>ADR-55: base64url (no padding) ed25519 signature of the INFO nonce by the proxy's nkey.</summary>
    public const string Signature = "proxy_sig";
    /// <summary>Our extension: a <see cref="ProxiedClient"/> object.</summary>
    public const string Client = "proxy_client";
}

[JsonSerializable(typeof(ProxiedClient))]
public sealed partial class GatewayJsonContext : JsonSerializerContext;
