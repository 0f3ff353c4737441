using NatsBroker.Tls;

namespace NatsBroker.MqttGateway;

/// <summary>The <c>mqtt {}</c> block of the shared nats-server config (server/opts.go parseMQTT, MQTTOpts).</summary>
public sealed class MqttOptions : NatsBroker.Gateways.Link.IGatewayListenOptions
{
    public string Host { get; set; } = "0.0.0.0";
    /// <summary>-1 = random. nats-server's default MQTT port is 1883.</summary>
    public int Port { get; set; } = 1883;
    /// <summary>The block's <c>tls {}</c> (TlsConfig, shared by every protocol gateway): mqtts.</summary>
    public TlsOptions? Tls { get; set; }
    /// <summary><c>authorization { user, password }</c>: the one user MQTT clients must present (nats-server's override).</summary>
    public string? AuthUser { get; set; }
    public string? AuthPassword { get; set; }
    /// <summary><c>authorization { token }</c>: MQTT clients present it as their password.</summary>
    public string? AuthToken { get; set; }
    /// <summary>Time a client has to send CONNECT (<c>authorization { timeout }</c>; nats-server's AUTH_TIMEOUT default 2 s).</summary>
    public TimeSpan ConnectTimeout { get; set; } = TimeSpan.FromSeconds(2);
    public string? NoAuthUser { get; set; }
    /// <summary>Redelivery interval of unacknowledged QoS 1/2 messages (server/mqtt.go mqttDefaultAckWait).</summary>
    public TimeSpan AckWait { get; set; } = TimeSpan.FromSeconds(30);
    /// <summary>Outstanding unacknowledged QoS 1/2 messages per subscription (mqttDefaultMaxAckPending).</summary>
    public int MaxAckPending { get; set; } = 1024;
    /// <summary>Replicas of the $MQTT_* streams (0 = as nats-server decides: 1 without a cluster).</summary>
    public int StreamReplicas { get; set; }
    public int ConsumerReplicas { get; set; }
    public bool ConsumerMemoryStorage { get; set; }
    /// <summary>Inactive threshold of QoS consumers (zero = none).</summary>
    public TimeSpan ConsumerInactiveThreshold { get; set; }
    /// <summary>JetStream API request timeout (mqttDefaultJSAPITimeout).</summary>
    public TimeSpan JsApiTimeout { get; set; } = TimeSpan.FromSeconds(5);
    /// <summary>
    /// Ours: how long a closed connection may take to settle its session (unsubscribe, then a JetStream request per
    /// durable consumer and one for the record), and so how long a successor with the same client ID waits for it.
    /// Each request has <see cref="JsApiTimeout"/>; a single budget of one timeout for all of them can run out on a loaded
    /// machine, leaving the record of a session that was to end.
    /// </summary>
    public TimeSpan SessionEndTimeout => JsApiTimeout * 4;
    public bool RejectQoS2Publish { get; set; }
    /// <summary>Ours, not nats-server's: <c>reuse_port: true</c> binds with SO_REUSEPORT so several gateway instances share the port.</summary>
    public bool ReusePort { get; set; }
    /// <summary>Ours: the longest keep-alive an MQTT 5 client gets (Server Keep Alive); 0 = what the client asks.</summary>
    public ushort MaxKeepAlive { get; set; }
    public bool DowngradeQoS2Subscribe { get; set; }
    /// <summary>Top-level max_payload: the largest NATS message (headers included) an MQTT PUBLISH may become.</summary>
    public int MaxPayload { get; set; } = 1024 * 1024;
    public TimeSpan DrainTimeout { get; set; } = TimeSpan.FromSeconds(10);
    /// <summary>Ours: how often expired sessions nobody reconnected to are deleted (<see cref="SessionSweeper"/>); zero = never.</summary>
    public TimeSpan SessionSweepInterval { get; set; } = TimeSpan.FromSeconds(30);
    /// <summary>Ours: <c>enhanced_authentication {}</c>, the MQTT 5 authentication methods offered.</summary>
    public EnhancedAuthOptions EnhancedAuth { get; } = new();
    /// <summary>
    /// The configured users and their passwords (plaintext or bcrypt) from the top-level <c>authorization</c> and
    /// <c>accounts</c> blocks: the ones SCRAM-SHA-256 may authenticate (the core still checks every login itself).
    /// </summary>
    public Dictionary<string, string> Users { get; } = new(StringComparer.Ordinal);
}
