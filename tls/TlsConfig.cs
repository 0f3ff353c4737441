using System.Net.Security;
using System.Security.Authentication;
using NatsBroker.Configuration;

namespace NatsBroker.Tls;

/// <summary>
/// The <c>tls {}</c> reader every protocol gateway uses (server/opts.go parseTLS): unknown keys inside it are errors,
/// as in nats-server, with its wording.
/// </summary>
public static class TlsConfig
{
    /// <summary>Reads a <c>tls {}</c> block into <paramref name="o"/> (the top-level one, and those in <c>websocket {}</c> and <c>mqtt {}</c>).</summary>
    public static void ReadTls(ConfigEntry block, TlsOptions o, List<ConfigError> errors)
    {
        foreach (var f in block.Value.AsMap())
        {
            var v = f.Value;
            void Bad(string what) => errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\": expected {what}, got {v.Describe()}"));
            switch (f.Key.ToLowerInvariant())
            {
                case "cert_file":
                    if (v.Kind == ConfigValueKind.String) o.CertFile = v.AsString(); else Bad("a string");
                    break;
                case "key_file":
                    if (v.Kind == ConfigValueKind.String) o.KeyFile = v.AsString(); else Bad("a string");
                    break;
                case "ca_file":
                    if (v.Kind == ConfigValueKind.String) o.CaFile = v.AsString(); else Bad("a string");
                    break;
                case "verify":
                    if (v.Kind == ConfigValueKind.Bool) o.Verify = v.AsBool(); else Bad("a boolean");
                    break;
                case "verify_and_map" or "map":
                    if (v.Kind == ConfigValueKind.Bool) o.VerifyAndMap = v.AsBool(); else Bad("a boolean");
                    break;
                case "timeout":
                    // opts.go: a number of seconds (int or float) or, since 2.x, a duration string.
                    if (v.Kind == ConfigValueKind.Integer) o.Timeout = TimeSpan.FromSeconds(v.AsInteger());
                    else if (v.Kind == ConfigValueKind.Float) o.Timeout = TimeSpan.FromSeconds(v.AsFloat());
                    else if (v.Kind == ConfigValueKind.String && GoDuration.TryParse(v.AsString(), out var t, out _)) o.Timeout = t;
                    else Bad("a number of seconds or a duration");
                    break;
                case "handshake_first" or "first" or "immediate":
                    HandshakeFirst(f, o, errors);
                    break;
                case "min_version":
                    if (v.Kind == ConfigValueKind.String && v.AsString() is "1.2" or "1.3")
                        o.MinVersion = v.AsString() == "1.3" ? SslProtocols.Tls13 : SslProtocols.Tls12;
                    else
                        errors.Add(new ConfigError(f.KeyPosition, $"unsupported TLS version {v.Describe()}: expected \"1.2\" or \"1.3\""));
                    break;
                case "cipher_suites":
                    CipherSuites(f, o, errors);
                    break;
                case "curve_preferences":
                    // Accepted for config compatibility; .NET on Linux takes OpenSSL's curve list (documented).
                    if (v.Kind != ConfigValueKind.Array) Bad("an array");
                    break;
                case "insecure":
                    // Only meaningful for outgoing connections in nats-server; nothing to do for a listener.
                    if (v.Kind != ConfigValueKind.Bool) Bad("a boolean");
                    break;
                case "reuse_port":
                    if (v.Kind == ConfigValueKind.Bool) o.ReusePort = v.AsBool(); else Bad("a boolean");
                    break;
                case "verify_cert_and_check_known_urls":
                    // server/opts.go parseTLS: only for routes, gateways and leaf nodes (a peer's URL is checked against
                    // its certificate). Every tls {} this reads is a client context (top level, websocket, mqtt), where
                    // true is a config error and false does nothing.
                    if (v.Kind != ConfigValueKind.Bool) Bad("a boolean");
                    else if (v.AsBool()) errors.Add(new ConfigError(f.KeyPosition, "verify_cert_and_check_known_urls not supported in this context"));
                    break;
                case "pinned_certs" or "ocsp_peer" or "cert_store" or "cert_match" or "cert_match_by" or "cert_match_skip_invalid"
                    or "ca_certs_match" or "connection_rate_limit" or "certs":
                    errors.Add(new ConfigError(f.KeyPosition, $"\"{f.Key}\" in tls is not supported by this server yet"));
                    break;
                default:
                    if (!v.UsedAsVariable) errors.Add(new ConfigError(f.KeyPosition, $"error parsing tls config, unknown field \"{f.Key}\""));
                    break;
            }
        }
        // server/opts.go GenTLSConfig: one of the pair without the other is an error; neither is accepted (the listener
        // then fails every handshake, CertificateSet.HasCertificate).
        if (o.CertFile.Length == 0 && o.KeyFile.Length > 0) errors.Add(new ConfigError(block.KeyPosition, "missing 'cert_file' in TLS configuration"));
        if (o.KeyFile.Length == 0 && o.CertFile.Length > 0) errors.Add(new ConfigError(block.KeyPosition, "missing 'key_file' in TLS configuration"));
    }

    /// <summary>nats-server 2.10: true/false, "auto" (50 ms fallback) or a duration (fallback after that long).</summary>
    private static void HandshakeFirst(ConfigEntry f, TlsOptions o, List<ConfigError> errors)
    {
        var v = f.Value;
        if (v.Kind == ConfigValueKind.Bool)
        {
            o.HandshakeFirst = v.AsBool();
            return;
        }
        if (v.Kind == ConfigValueKind.String)
        {
            var s = v.AsString();
            if (s.Equals("auto", StringComparison.OrdinalIgnoreCase) || s.Equals("auto_fallback", StringComparison.OrdinalIgnoreCase))
            {
                o.HandshakeFirst = true;
                o.HandshakeFirstFallback = TimeSpan.FromMilliseconds(50);
                return;
            }
            if (GoDuration.TryParse(s, out var d, out _))
            {
                o.HandshakeFirst = true;
                o.HandshakeFirstFallback = d;
                return;
            }
        }
        errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\": expected a boolean, \"auto\" or a duration, got {v.Describe()}"));
    }

    /// <summary>nats-server's parseTLS: a non-empty array of Go's names (<see cref="GoCipherSuites"/>), its wording for errors.</summary>
    private static void CipherSuites(ConfigEntry f, TlsOptions o, List<ConfigError> errors)
    {
        if (f.Value.Kind != ConfigValueKind.Array)
        {
            errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\": expected an array, got {f.Value.Describe()}"));
            return;
        }
        if (f.Value.AsArray().Count == 0)
        {
            errors.Add(new ConfigError(f.KeyPosition, "error parsing tls config, 'cipher_suites' cannot be empty"));
            return;
        }
        o.CipherSuites = [];
        foreach (var c in f.Value.AsArray())
        {
            var name = c.Kind == ConfigValueKind.String ? c.AsString() : "";
            if (GoCipherSuites.TryParse(name, out var suite))
                o.CipherSuites.Add(suite);
            else
                errors.Add(new ConfigError(c.Position, $"unrecognized cipher {name}"));
        }
    }
}
