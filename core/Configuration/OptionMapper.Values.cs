using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>
/// Readers of typed values shared by every block (the opts.go parse helpers): string, bool, integer, port, listen
/// address, duration, string list. Each reports a wrong type or range at the key.
/// </summary>
internal sealed partial class OptionMapper
{
    private bool Expect(ConfigEntry e, ConfigValueKind kind, string what)
    {
        if (e.Value.Kind == kind)
            return true;
        Error(e.KeyPosition, $"invalid value for \"{e.Key}\": expected {what}, got {e.Value.Describe()}");
        return false;
    }

    private bool String(ConfigEntry e, out string s)
    {
        s = "";
        if (!Expect(e, ConfigValueKind.String, "a string"))
            return false;
        s = e.Value.AsString();
        return true;
    }

    private bool Bool(ConfigEntry e, out bool b)
    {
        b = false;
        if (!Expect(e, ConfigValueKind.Bool, "a boolean (true/false, yes/no, on/off)"))
            return false;
        b = e.Value.AsBool();
        return true;
    }

    private bool Integer(ConfigEntry e, out long n, long min = long.MinValue, long max = long.MaxValue)
    {
        n = 0;
        if (!Expect(e, ConfigValueKind.Integer, "an integer"))
            return false;
        n = e.Value.AsInteger();
        if (n > max)
        {
            Error(e.KeyPosition, $"{e.Key} value is too big");
            return false;
        }
        if (n < min)
        {
            Error(e.KeyPosition, min == 0 ? $"{e.Key} value can not be negative" : string.Create(CultureInfo.InvariantCulture, $"{e.Key} value can not be less than {min}"));
            return false;
        }
        return true;
    }

    private bool Port(ConfigEntry e, out int port)
    {
        port = 0;
        if (!Integer(e, out long n, -1, 65535))
            return false;
        port = (int)n;
        return true;
    }

    /// <summary>opts.go parseListen: a port, or "host:port".</summary>
    private bool Listen(ConfigEntry e, out string host, out int port)
    {
        host = "";
        port = 0;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Integer)
            return Port(e, out port);
        if (v.Kind != ConfigValueKind.String)
        {
            Error(e.KeyPosition, $"expected port or host:port, got {v.Describe()}");
            return false;
        }
        string s = v.AsString();
        // Go net.SplitHostPort: "host:port" with exactly one ':', or "[v6]:port".
        int colon = s.LastIndexOf(':');
        bool bracketed = s.StartsWith('[');
        if (colon < 0 || (!bracketed && s.IndexOf(':', StringComparison.Ordinal) != colon)
            || (bracketed && (colon == 0 || s[colon - 1] != ']')))
        {
            Error(e.KeyPosition, $"could not parse address string \"{s}\"");
            return false;
        }
        host = bracketed ? s[1..(colon - 1)] : s[..colon];
        string p = s[(colon + 1)..];
        if (!int.TryParse(p, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out port) || port < -1 || port > 65535)
        {
            Error(e.KeyPosition, $"could not parse port \"{p}\"");
            return false;
        }
        return true;
    }

    /// <summary>
    /// A Go duration string. Where nats-server still accepts an integer number of seconds
    /// (ping_interval, write_deadline) that is allowed with its warning.
    /// </summary>
    private bool Duration(ConfigEntry e, bool allowSeconds, out TimeSpan d)
    {
        d = default;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String)
        {
            if (GoDuration.TryParse(v.AsString(), out d, out string? err))
                return true;
            Error(e.KeyPosition, $"error parsing {e.Key}: {err}");
            return false;
        }
        if (allowSeconds && v.Kind == ConfigValueKind.Integer)
        {
            Warnings.Add(new ConfigError(e.KeyPosition,
                $"invalid use of field \"{e.Key}\": {e.Key} should be converted to a duration"));
            long secs = v.AsInteger();
            if (secs < 0 || secs > (long)TimeSpan.MaxValue.TotalSeconds)
            {
                Error(e.KeyPosition, $"{e.Key} value is out of range");
                return false;
            }
            d = TimeSpan.FromSeconds(secs);
            return true;
        }
        Error(e.KeyPosition, $"invalid value for \"{e.Key}\": expected a duration string such as \"10s\" or \"2m\", got {v.Describe()}");
        return false;
    }

    private List<string>? StringList(ConfigEntry e, string what)
    {
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String)
            return [v.AsString()];
        if (v.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"error parsing {what}: unsupported type {v.Describe()}");
            return null;
        }
        var list = new List<string>();
        foreach (var item in v.AsArray())
        {
            if (item.Kind != ConfigValueKind.String)
            {
                Error(item.Position, $"error parsing {what}: unsupported type in array {item.Describe()}");
                return null;
            }
            list.Add(item.AsString());
        }
        return list;
    }
}
