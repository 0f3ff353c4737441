namespace NatsBroker.MqttGateway;

/// <summary>
/// <c>mqtt { enhanced_authentication { ... } }</c> (ours: nats-server has no MQTT 5): which MQTT 5 authentication
/// methods (section 4.12) MQTT clients may name in CONNECT. Built in: SCRAM-SHA-256 for configured users with a
/// plaintext password. Hook: each AUTH step of a method in <see cref="Methods"/> becomes a NATS request to
/// <see cref="Subject"/>, answered by the operator's service (README "Enhanced authentication").
/// </summary>
public sealed class EnhancedAuthOptions
{
    /// <summary><c>scram_sha_256</c>: offer the built-in SCRAM-SHA-256 (default true).</summary>
    public bool Scram { get; set; } = true;
    /// <summary><c>scram_iterations</c>: PBKDF2 iterations of the SCRAM keys (RFC 7677 section 4: at least 4096).</summary>
    public int ScramIterations { get; set; } = 4096;
    /// <summary><c>methods</c>: the methods the hook service decides.</summary>
    public List<string> Methods { get; } = [];
    /// <summary><c>subject</c>: where each step is requested.</summary>
    public string? Subject { get; set; }
    /// <summary><c>timeout</c>: how long a step's reply may take (then 0x87 Not authorized).</summary>
    public TimeSpan Timeout { get; set; } = TimeSpan.FromSeconds(2);
    /// <summary><c>user</c> / <c>password</c>: the core user the gateway sends the requests as (default: none, so the
    /// mqtt block's or top-level no_auth_user).</summary>
    public string? User { get; set; }
    public string? Password { get; set; }
}
