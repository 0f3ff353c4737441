using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>The <c>authorization</c> block and its users (opts.go parseAuthorization, parseUsers).</summary>
internal sealed partial class OptionMapper
{
    private static readonly HashSet<string> ConnectionTypes = new(StringComparer.Ordinal)
    {
        "STANDARD", "WEBSOCKET", "LEAFNODE", "MQTT",
    };

    private void Authorization(ConfigEntry auth)
    {
        if (!Expect(auth, ConfigValueKind.Map, "a map"))
            return;
        string? user = null, pass = null, token = null;
        TimeSpan? timeout = null;
        List<UserConfig>? users = null;
        Permissions? defaults = null;
        foreach (var e in auth.Value.AsMap())
        {
            string s;
            switch (e.Key.ToLowerInvariant())
            {
                case "user" or "username":
                    if (String(e, out s)) user = s;
                    break;
                case "pass" or "password":
                    if (String(e, out s)) pass = s;
                    break;
                case "token":
                    if (String(e, out s)) token = s;
                    break;
                case "timeout":
                    timeout = AuthTimeout(e);
                    break;
                case "proxy_required":
                    if (Bool(e, out var proxyRequired)) o.ProxyRequired = proxyRequired;
                    break;
                case "users":
                    users = Users(e);
                    break;
                case "default_permission" or "default_permissions" or "permissions":
                    defaults = Permissions(e);
                    break;
                case "auth_callout" or "auth_hook":
                    o.AuthCallout = AuthCallout(e);
                    break;
                default:
                    Unknown(e);
                    break;
            }
        }

        var at = auth.KeyPosition;
        if ((user is not null || pass is not null) && token is not null)
        {
            Error(at, "Cannot have a user/pass and token");
            return;
        }
        if (users is not null && user is not null)
        {
            Error(at, "Can not have a single user/pass and a users array");
            return;
        }
        if (users is not null && token is not null)
        {
            Error(at, "Can not have a token and a users array");
            return;
        }
        o.Username = user;
        o.Password = pass;
        o.Authorization = token;
        if (timeout is { } t)
            o.AuthTimeout = t == TimeSpan.Zero ? TimeSpan.FromSeconds(2) : t;
        if (users is null)
            return;
        var seen = new HashSet<string>(o.Users.Select(u => u.Nkey ?? u.User), StringComparer.Ordinal);
        foreach (var u in users)
        {
            if (!seen.Add(u.Nkey ?? u.User))
            {
                Error(at, $"Duplicate user \"{u.User}\" detected");
                return;
            }
            u.Permissions ??= defaults;
        }
        o.Users.AddRange(users);
    }

    /// <summary>Seconds as an integer or float, or (as nats-server 2.10 allows) a duration string.</summary>
    private TimeSpan? AuthTimeout(ConfigEntry e)
    {
        var v = e.Value;
        double secs;
        switch (v.Kind)
        {
            case ConfigValueKind.Integer:
                secs = v.AsInteger();
                break;
            case ConfigValueKind.Float:
                secs = v.AsFloat();
                break;
            case ConfigValueKind.String:
                if (!GoDuration.TryParse(v.AsString(), out var d, out string? err))
                {
                    Error(e.KeyPosition, $"error parsing authorization config, 'timeout' {err}");
                    return null;
                }
                secs = d.TotalSeconds;
                break;
            default:
                Error(e.KeyPosition, $"error parsing authorization config, 'timeout' wrong type: {v.Describe()}");
                return null;
        }
        if (secs < 0 || double.IsNaN(secs) || secs > 365 * 24 * 3600)
        {
            Error(e.KeyPosition, "error parsing authorization config, 'timeout' must be between 0 and one year of seconds");
            return null;
        }
        if (secs > 60)
            Warnings.Add(new ConfigError(e.KeyPosition, string.Create(CultureInfo.InvariantCulture,
                $"invalid use of field \"{e.Key}\": timeout of {secs} seconds is high, consider keeping it under 60 seconds")));
        return TimeSpan.FromSeconds(secs);
    }

    private List<UserConfig>? Users(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"Expected users field to be an array, got {e.Value.Describe()}");
            return null;
        }
        var users = new List<UserConfig>();
        foreach (var item in e.Value.AsArray())
        {
            if (item.Kind != ConfigValueKind.Map)
            {
                Error(item.Position, $"Expected user entry to be a map/struct, got {item.Describe()}");
                continue;
            }
            var u = new UserConfig();
            bool hasUser = false;
            foreach (var f in item.AsMap())
            {
                string s;
                switch (f.Key.ToLowerInvariant())
                {
                    case "user" or "username":
                        if (String(f, out s))
                        {
                            u.User = s;
                            hasUser = true;
                        }
                        break;
                    case "pass" or "password":
                        if (String(f, out s)) u.Password = s;
                        break;
                    case "permission" or "permissions" or "authorization":
                        u.Permissions = Permissions(f);
                        break;
                    case "allowed_connection_types" or "connection_types" or "clients":
                        u.AllowedConnectionTypes = ConnectionTypeList(f);
                        break;
                    case "proxy_required":
                        if (Bool(f, out var proxyRequired)) u.ProxyRequired = proxyRequired;
                        break;
                    case "nkey":
                        if (String(f, out s))
                        {
                            if (!IsUserNkey(s))
                                Error(f.KeyPosition, "Not a valid public nkey for a user");
                            u.Nkey = s;
                            hasUser = true;
                        }
                        break;
                    default:
                        Unknown(f);
                        break;
                }
            }
            if (!hasUser)
            {
                Error(item.Position, "User entry requires a user");
                continue;
            }
            users.Add(u);
        }
        return users;
    }

    private static bool IsUserNkey(string key)
    {
        try
        {
            return NATS.NKeys.KeyPair.IsValidPublicKey(NATS.NKeys.PrefixByte.User, key);
        }
        catch (NATS.NKeys.NKeysException)
        {
            return false; // bad checksum or encoding
        }
    }

    private List<string>? ConnectionTypeList(ConfigEntry e)
    {
        var list = StringList(e, "allowed connection types");
        if (list is null)
            return null;
        var result = new List<string>();
        foreach (var t in list)
        {
            string up = t.ToUpperInvariant();
            if (!ConnectionTypes.Contains(up))
            {
                Error(e.KeyPosition, $"invalid connection types [\"{t}\"]");
                return null;
            }
            result.Add(up);
        }
        return result;
    }
}
