using System.Globalization;
using NatsBroker.Configuration;
using NatsBroker.Tls;

namespace NatsBroker.TlsTerminator;

/// <summary>
/// Reads the terminator's part of the shared config: top-level <c>host</c>/<c>net</c>, <c>port</c>, <c>listen</c>,
/// <c>max_control_line</c> and the <c>tls {}</c> block (server/opts.go parseTLS; <see cref="TlsConfig"/>, shared with the
/// other protocol gateways). Every other key belongs to the
/// core and is left to it. Unknown keys inside <c>tls</c> are errors, as in nats-server.
/// </summary>
public static class TerminatorConfig
{
    public static TerminatorOptions Load(ConfigTree tree) => Load(tree, relayOnly: false);

    /// <param name="relayOnly"><c>--relay-only</c>: plain NATS, no <c>tls {}</c> block needed (<see cref="TerminatorOptions.RelayOnly"/>).</param>
    public static TerminatorOptions Load(ConfigTree tree, bool relayOnly)
    {
        ArgumentNullException.ThrowIfNull(tree);
        var o = new TerminatorOptions { RelayOnly = relayOnly };
        var errors = new List<ConfigError>();
        bool sawTls = false;
        foreach (var e in tree.Root)
        {
            switch (e.Key.ToLowerInvariant())
            {
                case "host" or "net" when e.Value.Kind == ConfigValueKind.String:
                    o.Host = e.Value.AsString();
                    break;
                case "port" when e.Value.Kind == ConfigValueKind.Integer:
                    o.Port = (int)e.Value.AsInteger();
                    break;
                case "listen" when e.Value.Kind == ConfigValueKind.String:
                    var hp = e.Value.AsString();
                    int colon = hp.LastIndexOf(':');
                    if (colon >= 0 && int.TryParse(hp.AsSpan(colon + 1), NumberStyles.Integer, CultureInfo.InvariantCulture, out int lp))
                    {
                        if (colon > 0) o.Host = hp[..colon];
                        o.Port = lp;
                    }
                    break;
                case "listen" when e.Value.Kind == ConfigValueKind.Integer:
                    o.Port = (int)e.Value.AsInteger();
                    break;
                case "allow_non_tls" when e.Value.Kind == ConfigValueKind.Bool:
                    o.AllowNonTls = e.Value.AsBool();
                    break;
                case "max_control_line" when e.Value.Kind == ConfigValueKind.Integer:
                    o.MaxControlLine = (int)Math.Clamp(e.Value.AsInteger(), 256, 16 * 1024 * 1024);
                    break;
                case "tls":
                    sawTls = true;
                    if (e.Value.Kind != ConfigValueKind.Map)
                        errors.Add(new ConfigError(e.KeyPosition, $"expected tls to be a map, got {e.Value.Describe()}"));
                    else
                        TlsConfig.ReadTls(e, o, errors);
                    break;
            }
        }
        if (!sawTls && !relayOnly) errors.Add(new ConfigError(null, "the tls-terminator needs a \"tls {}\" block in the configuration"));
        if (errors.Count > 0) throw new ConfigException(errors);
        return o;
    }
}
