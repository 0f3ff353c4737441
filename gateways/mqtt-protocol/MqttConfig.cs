using System.Globalization;
using NatsBroker.Configuration;
using NatsBroker.Gateways.Link;
using NatsBroker.Tls;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Reads the gateway's part of the shared config: the <c>mqtt {}</c> block (server/opts.go parseMQTT,
/// validateMQTTOptions) and top-level <c>max_payload</c>. Unknown keys in the block are errors, as in nats-server.
/// </summary>
public static class MqttConfig
{
    public static MqttOptions Load(ConfigTree tree)
    {
        ArgumentNullException.ThrowIfNull(tree);
        var o = new MqttOptions();
        var errors = new List<ConfigError>();
        bool saw = false;
        foreach (var e in tree.Root)
        {
            switch (e.Key.ToLowerInvariant())
            {
                case "max_payload" when e.Value.Kind == ConfigValueKind.Integer:
                    o.MaxPayload = (int)Math.Clamp(e.Value.AsInteger(), 1, 64 * 1024 * 1024);
                    break;
                case "mqtt":
                    saw = true;
                    if (e.Value.Kind != ConfigValueKind.Map)
                        errors.Add(new ConfigError(e.KeyPosition, $"expected mqtt to be a map, got {e.Value.Describe()}"));
                    else
                        Block(e, o, errors);
                    break;
                // The users SCRAM-SHA-256 may authenticate (EnhancedAuthConfig); the core reads and checks these blocks.
                case "authorization" or "authentication":
                    EnhancedAuthConfig.AuthorizationUsers(e.Value, o.Users);
                    break;
                case "accounts":
                    EnhancedAuthConfig.AccountUsers(e.Value, o.Users);
                    break;
            }
        }
        if (!saw) errors.Add(new ConfigError(null, "the mqtt gateway needs an \"mqtt {}\" block in the configuration"));
        if (errors.Count > 0) throw new ConfigException(errors);
        return o;
    }

    private static void Block(ConfigEntry block, MqttOptions o, List<ConfigError> errors)
    {
        foreach (var f in block.Value.AsMap())
        {
            var v = f.Value;
            void Bad(string what) => errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\": expected {what}, got {v.Describe()}"));
            var key = f.Key.ToLowerInvariant();
            if (ListenKeys.TryApply(key, v, o, Bad)) continue;
            switch (key)
            {
                case "tls":
                    if (v.Kind != ConfigValueKind.Map)
                    {
                        Bad("a map");
                        break;
                    }
                    o.Tls = new TlsOptions();
                    TlsConfig.ReadTls(f, o.Tls, errors);
                    break;
                case "authorization" or "authentication":
                    if (v.Kind != ConfigValueKind.Map) Bad("a map");
                    else Authorization(f, o, errors);
                    break;
                case "no_auth_user":
                    if (v.Kind == ConfigValueKind.String) o.NoAuthUser = v.AsString(); else Bad("a string");
                    break;
                // server/opts.go parseDuration ("error parsing ack_wait: <Go's error>", at the key), then
                // server/mqtt.go validateMQTTOptions: a negative value is refused without a position, 0 keeps the default.
                case "ack_wait" or "ackwait":
                    if (PositiveDuration(f, "ack_wait", "ack wait must be a positive value", errors) is { } aw) o.AckWait = aw;
                    break;
                case "js_api_timeout" or "api_timeout":
                    if (PositiveDuration(f, "js_api_timeout", "JS API timeout must be a positive value", errors) is { } jt) o.JsApiTimeout = jt;
                    break;
                case "max_ack_pending" or "max_pending" or "max_inflight":
                    // server/opts.go: a uint16; 0 means the default.
                    if (v.Kind == ConfigValueKind.Integer && v.AsInteger() is >= 0 and <= 0xFFFF)
                        o.MaxAckPending = v.AsInteger() == 0 ? 1024 : (int)v.AsInteger();
                    else errors.Add(new ConfigError(f.KeyPosition, $"invalid value {v.Describe()}, should be in [0..65535] range"));
                    break;
                case "stream_replicas":
                    if (v.Kind == ConfigValueKind.Integer) o.StreamReplicas = (int)v.AsInteger(); else Bad("an integer");
                    break;
                case "consumer_replicas":
                    if (v.Kind == ConfigValueKind.Integer) o.ConsumerReplicas = (int)v.AsInteger(); else Bad("an integer");
                    break;
                case "consumer_memory_storage":
                    if (v.Kind == ConfigValueKind.Bool) o.ConsumerMemoryStorage = v.AsBool(); else Bad("a boolean");
                    break;
                case "consumer_inactive_threshold" or "consumer_auto_cleanup":
                    if (Duration(v, out var it)) o.ConsumerInactiveThreshold = it; else Bad("a duration");
                    break;
                case "reuse_port":
                    if (v.Kind == ConfigValueKind.Bool) o.ReusePort = v.AsBool(); else Bad("a boolean");
                    break;
                case "reject_qos2_publish":
                    if (v.Kind == ConfigValueKind.Bool) o.RejectQoS2Publish = v.AsBool(); else Bad("a boolean");
                    break;
                case "downgrade_qos2_subscribe":
                    if (v.Kind == ConfigValueKind.Bool) o.DowngradeQoS2Subscribe = v.AsBool(); else Bad("a boolean");
                    break;
                case "max_keepalive" or "max_keep_alive":
                    // Ours (Mosquitto's max_keepalive): MQTT 5 clients asking for no keep-alive or a longer one get
                    // this as the Server Keep Alive in CONNACK (MQTT 5 section 3.2.2.3.14). 0 = no limit.
                    if (v.Kind == ConfigValueKind.Integer && v.AsInteger() is >= 0 and <= 0xFFFF) o.MaxKeepAlive = (ushort)v.AsInteger();
                    else errors.Add(new ConfigError(f.KeyPosition, $"invalid value {v.Describe()}, should be in [0..65535] range"));
                    break;
                case "session_sweep_interval":
                    // Ours (SessionSweeper): how often expired MQTT 5 sessions are deleted; 0 = only when their client ID connects.
                    if (Duration(v, out var si) && si >= TimeSpan.Zero) o.SessionSweepInterval = si; else Bad("a duration");
                    break;
                case "enhanced_authentication" or "enhanced_auth":
                    if (v.Kind != ConfigValueKind.Map) Bad("a map");
                    else EnhancedAuthConfig.Block(f, o.EnhancedAuth, errors);
                    break;
                case "js_domain":
                    errors.Add(new ConfigError(f.KeyPosition, $"\"{f.Key}\" in mqtt is not supported by this server yet"));
                    break;
                default:
                    if (!v.UsedAsVariable) errors.Add(new ConfigError(f.KeyPosition, $"unknown field \"{f.Key}\"")); // opts.go parseMQTT: unknownConfigFieldErr
                    break;
            }
        }
    }

    /// <summary>server/opts.go parseMQTT's authorization: a single user/password or a token, and a timeout.</summary>
    private static void Authorization(ConfigEntry block, MqttOptions o, List<ConfigError> errors)
    {
        foreach (var f in block.Value.AsMap())
        {
            var v = f.Value;
            switch (f.Key.ToLowerInvariant())
            {
                case "user" or "username" when v.Kind == ConfigValueKind.String:
                    o.AuthUser = v.AsString();
                    break;
                case "pass" or "password" when v.Kind is ConfigValueKind.String or ConfigValueKind.Integer:
                    o.AuthPassword = v.Kind == ConfigValueKind.String ? v.AsString() : v.AsInteger().ToString(CultureInfo.InvariantCulture);
                    break;
                case "token" when v.Kind == ConfigValueKind.String:
                    o.AuthToken = v.AsString();
                    break;
                case "timeout":
                    if (v.Kind == ConfigValueKind.Integer) o.ConnectTimeout = TimeSpan.FromSeconds(v.AsInteger());
                    else if (v.Kind == ConfigValueKind.Float) o.ConnectTimeout = TimeSpan.FromSeconds(v.AsFloat());
                    else if (!Duration(v, out var t)) errors.Add(new ConfigError(f.KeyPosition, "invalid authorization timeout"));
                    else o.ConnectTimeout = t;
                    break;
                case "users" or "permissions" or "nkeys":
                    errors.Add(new ConfigError(f.KeyPosition, $"\"{f.Key}\" in mqtt authorization is not supported by this server yet"));
                    break;
                default:
                    if (!v.UsedAsVariable) errors.Add(new ConfigError(f.KeyPosition, $"unknown field \"{f.Key}\" in mqtt authorization"));
                    break;
            }
        }
        if (o.AuthToken is not null && o.AuthUser is not null)
            errors.Add(new ConfigError(block.KeyPosition, "mqtt authorization: a token cannot be used with a user"));
    }

    /// <summary>server/opts.go parseDuration: a duration string, or (deprecated) a number of seconds.</summary>
    private static TimeSpan? PositiveDuration(ConfigEntry f, string field, string negative, List<ConfigError> errors)
    {
        var v = f.Value;
        if (v.Kind == ConfigValueKind.String && !GoDuration.TryParse(v.AsString(), out _, out var why))
        {
            errors.Add(new ConfigError(f.KeyPosition, $"error parsing {field}: {why}"));
            return null;
        }
        if (!Duration(v, out var t))
        {
            errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\": expected a duration, got {v.Describe()}"));
            return null;
        }
        if (t < TimeSpan.Zero) errors.Add(new ConfigError(null, negative));
        return t > TimeSpan.Zero ? t : null;
    }

    internal static bool Duration(ConfigValue v, out TimeSpan t)
    {
        t = default;
        if (v.Kind == ConfigValueKind.String) return GoDuration.TryParse(v.AsString(), out t, out _);
        if (v.Kind == ConfigValueKind.Integer) { t = TimeSpan.FromSeconds(v.AsInteger()); return true; }
        if (v.Kind == ConfigValueKind.Float) { t = TimeSpan.FromSeconds(v.AsFloat()); return true; }
        return false;
    }
}
