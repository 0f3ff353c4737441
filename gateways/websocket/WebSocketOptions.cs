using NatsBroker.Tls;

namespace NatsBroker.WebSocketGateway;

/// <summary>The <c>websocket {}</c> block of the shared nats-server config (server/opts.go parseWebsocket).</summary>
public sealed class WebSocketOptions : NatsBroker.Gateways.Link.IGatewayListenOptions
{
    public string Host { get; set; } = "0.0.0.0";
    /// <summary>-1 = random.</summary>
    public int Port { get; set; }
    /// <summary><c>no_tls: true</c>: plain ws:// (nats-server refuses a websocket block with neither tls nor no_tls).</summary>
    public bool NoTls { get; set; }
    /// <summary>The block's <c>tls {}</c> (TlsConfig, shared by every protocol gateway): wss://.</summary>
    public TlsOptions? Tls { get; set; }
    public bool SameOrigin { get; set; }
    public List<string> AllowedOrigins { get; set; } = [];
    /// <summary><c>compression</c>: permessage-deflate when the client offers it.</summary>
    public bool Compression { get; set; }
    /// <summary>Ours, not nats-server's: <c>reuse_port: true</c> binds with SO_REUSEPORT so several gateway instances share the port.</summary>
    public bool ReusePort { get; set; }
    /// <summary>Time for the TLS and HTTP upgrade handshake (nats-server: the HTTP server's ReadTimeout); zero = none.</summary>
    public TimeSpan HandshakeTimeout { get; set; }
    public string? NoAuthUser { get; set; }
    /// <summary>Cookie whose value is the user's JWT when CONNECT has none.</summary>
    public string? JwtCookie { get; set; }
    /// <summary>Cookies whose values are the user name, password and token when CONNECT has none (nats-server 2.11).</summary>
    public string? UserCookie { get; set; }
    public string? PassCookie { get; set; }
    public string? TokenCookie { get; set; }
    /// <summary>
    /// <c>authorization { user, password, token }</c>: the block's own simple auth, checked by the core
    /// (core/Configuration/ListenerAuthOverride.cs). The gateway needs to know only whether it makes auth required
    /// (INFO).
    /// </summary>
    public string? Username { get; set; }
    public string? Token { get; set; }

    /// <summary>
    /// The block's <c>authorization { timeout }</c>, which replaces auth_timeout for WebSocket clients
    /// (server/websocket.go createWSClient). Applied here, from the upgrade until CONNECT is forwarded, because the
    /// core cannot tell a WebSocket link from another Unix-socket client before CONNECT (the core only makes sure
    /// its own timer does not fire first: ServerOptions.WebSocketAuthTimeout). Null: the core's auth_timeout.
    /// </summary>
    public TimeSpan? AuthTimeout { get; set; }

    /// <summary>server/websocket.go wsConfigAuth: a user, a token or a no_auth_user in the block is an auth override.</summary>
    public bool AuthOverride => !string.IsNullOrEmpty(Username) || !string.IsNullOrEmpty(Token) || !string.IsNullOrEmpty(NoAuthUser);
    /// <summary>Longest CONNECT line looked at (top-level max_control_line).</summary>
    public int MaxControlLine { get; set; } = 4096;
    public TimeSpan DrainTimeout { get; set; } = TimeSpan.FromSeconds(10);
    /// <summary>The config's <c>mqtt {}</c> block when it has one: <c>/mqtt</c> upgrades then carry MQTT (null: refused, 501).</summary>
    public NatsBroker.MqttGateway.MqttOptions? Mqtt { get; set; }
}
