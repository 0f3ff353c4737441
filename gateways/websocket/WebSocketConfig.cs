using System.Globalization;
using NatsBroker.Configuration;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// Reads the gateway's part of the shared config: the <c>websocket {}</c> block (server/opts.go parseWebsocket,
/// validateWebsocketOptions) and top-level <c>max_control_line</c>. Unknown keys in the block are errors, as in
/// nats-server; keys it knows that this gateway does not serve yet are refused by name.
/// </summary>
public static class WebSocketConfig
{
    public static WebSocketOptions Load(ConfigTree tree)
    {
        ArgumentNullException.ThrowIfNull(tree);
        var o = new WebSocketOptions();
        var errors = new List<ConfigError>();
        bool saw = false;
        foreach (var e in tree.Root)
        {
            switch (e.Key.ToLowerInvariant())
            {
                case "max_control_line" when e.Value.Kind == ConfigValueKind.Integer:
                    o.MaxControlLine = (int)Math.Clamp(e.Value.AsInteger(), 256, 16 * 1024 * 1024);
                    break;
                case "websocket" or "ws":
                    saw = true;
                    if (e.Value.Kind != ConfigValueKind.Map)
                        errors.Add(new ConfigError(e.KeyPosition, $"expected websocket to be a map, got {e.Value.Describe()}"));
                    else
                        Block(e, o, errors);
                    break;
            }
        }
        if (!saw) errors.Add(new ConfigError(null, "the websocket gateway needs a \"websocket {}\" block in the configuration"));
        else if (o.Tls is null && !o.NoTls) errors.Add(new ConfigError(null, "websocket requires TLS configuration"));
        if (errors.Count > 0) throw new ConfigException(errors);
        // nats-server serves MQTT over WebSocket on the websocket port when MQTT is configured (server/mqtt.go).
        if (tree.Root.Any(e => e.Key.Equals("mqtt", StringComparison.OrdinalIgnoreCase))) o.Mqtt = NatsBroker.MqttGateway.MqttConfig.Load(tree);
        return o;
    }

    /// <summary>
    /// server/websocket.go validateWebsocketOptions (a start-up check, so without a position): an allowed origin
    /// must parse as a request URI (Go's url.ParseRequestURI), with an http or https scheme and a host.
    /// </summary>
    private static string? OriginError(string origin)
    {
        if (!Uri.TryCreate(origin, UriKind.Absolute, out var u) || !origin.Contains(':', StringComparison.Ordinal))
            return $"unable to parse allowed origin: parse \"{origin}\": invalid URI for request";
        if (u.Scheme is not ("http" or "https"))
            return $"unable to parse allowed origin \"{origin}\": allowed origins must be absolute URLs with http or https scheme";
        if (u.Host.Length == 0)
            return $"unable to parse allowed origin \"{origin}\": host is required";
        return null;
    }

    private static void Block(ConfigEntry block, WebSocketOptions o, List<ConfigError> errors)
    {
        foreach (var f in block.Value.AsMap())
        {
            var v = f.Value;
            void Bad(string what) => errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\": expected {what}, got {v.Describe()}"));
            var key = f.Key.ToLowerInvariant();
            if (ListenKeys.TryApply(key, v, o, Bad)) continue;
            switch (key)
            {
                case "advertise":
                    // Only used in cluster gossip of connect URLs; there is no cluster here.
                    if (v.Kind != ConfigValueKind.String) Bad("a string");
                    break;
                case "no_tls":
                    if (v.Kind == ConfigValueKind.Bool) o.NoTls = v.AsBool(); else Bad("a boolean");
                    break;
                case "tls":
                    if (v.Kind != ConfigValueKind.Map)
                    {
                        Bad("a map");
                        break;
                    }
                    o.Tls = new TlsOptions();
                    TlsConfig.ReadTls(f, o.Tls, errors);
                    break;
                case "same_origin":
                    if (v.Kind == ConfigValueKind.Bool) o.SameOrigin = v.AsBool(); else Bad("a boolean");
                    break;
                case "allowed_origins" or "allowed_origin" or "allow_origins" or "allow_origin" or "origins" or "origin":
                    if (v.Kind == ConfigValueKind.String) o.AllowedOrigins = [v.AsString()];
                    else if (v.Kind == ConfigValueKind.Array && v.AsArray().All(x => x.Kind == ConfigValueKind.String))
                        o.AllowedOrigins = [.. v.AsArray().Select(x => x.AsString())];
                    else Bad("a string or an array of strings");
                    foreach (var origin in o.AllowedOrigins)
                    {
                        if (OriginError(origin) is { } bad) errors.Add(new ConfigError(null, bad));
                    }
                    break;
                case "compression":
                    if (v.Kind == ConfigValueKind.Bool) o.Compression = v.AsBool(); else Bad("a boolean");
                    break;
                case "reuse_port":
                    if (v.Kind == ConfigValueKind.Bool) o.ReusePort = v.AsBool(); else Bad("a boolean");
                    break;
                case "handshake_timeout":
                    // opts.go parseDuration: a duration string, or (deprecated) a number of seconds.
                    if (v.Kind == ConfigValueKind.String && GoDuration.TryParse(v.AsString(), out var t, out _)) o.HandshakeTimeout = t;
                    else if (v.Kind == ConfigValueKind.Integer) o.HandshakeTimeout = TimeSpan.FromSeconds(v.AsInteger());
                    else if (v.Kind == ConfigValueKind.Float) o.HandshakeTimeout = TimeSpan.FromSeconds(v.AsFloat());
                    else Bad("a duration");
                    break;
                case "no_auth_user":
                    if (v.Kind == ConfigValueKind.String) o.NoAuthUser = v.AsString(); else Bad("a string");
                    break;
                case "jwt_cookie":
                    if (v.Kind == ConfigValueKind.String) o.JwtCookie = v.AsString(); else Bad("a string");
                    break;
                case "user_cookie":
                    if (v.Kind == ConfigValueKind.String) o.UserCookie = v.AsString(); else Bad("a string");
                    break;
                case "pass_cookie":
                    if (v.Kind == ConfigValueKind.String) o.PassCookie = v.AsString(); else Bad("a string");
                    break;
                case "token_cookie":
                    if (v.Kind == ConfigValueKind.String) o.TokenCookie = v.AsString(); else Bad("a string");
                    break;
                case "authorization" or "authentication":
                    // server/opts.go parseSimpleAuth. The password is the core's to check (it reads the same block).
                    if (v.Kind != ConfigValueKind.Map)
                    {
                        Bad("a map");
                        break;
                    }
                    foreach (var a in v.AsMap())
                    {
                        var av = a.Value;
                        void BadA(string what) => errors.Add(new ConfigError(a.KeyPosition, $"invalid value for \"{a.Key}\": expected {what}, got {av.Describe()}"));
                        switch (a.Key.ToLowerInvariant())
                        {
                            case "user" or "username":
                                if (av.Kind == ConfigValueKind.String) o.Username = av.AsString(); else BadA("a string");
                                break;
                            case "pass" or "password":
                                if (av.Kind != ConfigValueKind.String) BadA("a string");
                                break;
                            case "token":
                                if (av.Kind == ConfigValueKind.String) o.Token = av.AsString(); else BadA("a string");
                                break;
                            case "timeout":
                                // parseSimpleAuth: seconds, an integer or a float.
                                if (av.Kind == ConfigValueKind.Integer) o.AuthTimeout = TimeSpan.FromSeconds(av.AsInteger());
                                else if (av.Kind == ConfigValueKind.Float) o.AuthTimeout = TimeSpan.FromSeconds(av.AsFloat());
                                else BadA("a number of seconds");
                                break;
                            default:
                                if (!av.UsedAsVariable) errors.Add(new ConfigError(a.KeyPosition, $"unknown field \"{a.Key}\""));
                                break;
                        }
                    }
                    break;
                default:
                    if (!v.UsedAsVariable) errors.Add(new ConfigError(f.KeyPosition, $"unknown field \"{f.Key}\"")); // opts.go parseWebsocket: unknownConfigFieldErr
                    break;
            }
        }
    }
}
