using System.Globalization;
using NatsBroker.Configuration;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// The address keys every gateway block shares (`websocket {}`, `mqtt {}`): host/net, port and listen, read as
/// nats-server reads them in its websocket and mqtt blocks.
/// </summary>
public static class ListenKeys
{
    /// <summary>
    /// Applies <paramref name="key"/> to <paramref name="o"/> when it is an address key; false when the key is not one.
    /// A wrong value is reported through <paramref name="bad"/> with what was expected.
    /// </summary>
    public static bool TryApply(string key, ConfigValue v, IGatewayListenOptions o, Action<string> bad)
    {
        switch (key)
        {
            case "host" or "net":
                if (v.Kind == ConfigValueKind.String) o.Host = v.AsString(); else bad("a string");
                return true;
            case "port":
                if (v.Kind == ConfigValueKind.Integer) o.Port = (int)v.AsInteger(); else bad("an integer");
                return true;
            case "listen":
                if (v.Kind == ConfigValueKind.Integer) o.Port = (int)v.AsInteger();
                else if (v.Kind == ConfigValueKind.String && v.AsString() is var hp && hp.LastIndexOf(':') is int colon and >= 0
                    && int.TryParse(hp.AsSpan(colon + 1), NumberStyles.Integer, CultureInfo.InvariantCulture, out int lp))
                {
                    if (colon > 0) o.Host = hp[..colon];
                    o.Port = lp;
                }
                else bad("host:port");
                return true;
            default:
                return false;
        }
    }
}
