namespace NatsBroker.Configuration;

/// <summary><c>authorization { auth_callout {} }</c>, as server/opts.go parseAuthCallout reads it (same error texts).</summary>
internal sealed partial class OptionMapper
{
    private SourcePosition? _authCalloutAt;

    private AuthCalloutOptions? AuthCallout(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, $"Expected authorization callout to be a map/struct, got {e.Value.Describe()}");
            return null;
        }
        _authCalloutAt = e.KeyPosition;
        var ac = new AuthCalloutOptions();
        bool hasIssuer = false;
        foreach (var f in e.Value.AsMap())
        {
            string s;
            switch (f.Key.ToLowerInvariant())
            {
                case "issuer":
                    if (!String(f, out s)) return null;
                    if (!NatsBroker.Auth.Jwt.Jwt.IsPublicKey(s, NATS.NKeys.PrefixByte.Account))
                    {
                        Error(f.KeyPosition, $"Expected callout user to be a valid public account nkey, got \"{s}\"");
                        return null;
                    }
                    ac.Issuer = s;
                    hasIssuer = true;
                    break;
                case "account" or "acc":
                    if (String(f, out s)) ac.Account = s;
                    break;
                case "auth_users" or "users":
                    if (StringArray(f, "auth_users") is not { } users) return null;
                    ac.AuthUsers = users;
                    break;
                case "xkey" or "key":
                    if (!String(f, out s)) return null;
                    if (!NatsBroker.Auth.Jwt.Jwt.IsPublicKey(s, NATS.NKeys.PrefixByte.Curve))
                    {
                        Error(f.KeyPosition, $"Expected callout xkey to be a valid public xkey, got \"{s}\"");
                        return null;
                    }
                    ac.XKey = s;
                    break;
                case "allowed_accounts":
                    if (StringArray(f, "allowed accounts") is not { } accounts) return null;
                    ac.AllowedAccounts = accounts;
                    break;
                default:
                    if (!f.Value.UsedAsVariable) Error(f.KeyPosition, $"Unknown field \"{f.Key}\" parsing authorization callout");
                    break;
            }
        }
        if (string.IsNullOrEmpty(ac.Account)) ac.Account = "$G";
        if (!hasIssuer)
        {
            Error(e.KeyPosition, "Authorization callouts require an issuer to be specified");
            return null;
        }
        if (ac.AuthUsers.Count == 0)
        {
            Error(e.KeyPosition, "Authorization callouts require authorized users to be specified");
            return null;
        }
        return ac;
    }

    private List<string>? StringArray(ConfigEntry f, string what)
    {
        if (f.Value.Kind != ConfigValueKind.Array)
        {
            Error(f.KeyPosition, $"Expected {what} field to be an array, got {f.Value.Describe()}");
            return null;
        }
        List<string> list = [];
        foreach (var item in f.Value.AsArray())
        {
            if (item.Kind != ConfigValueKind.String)
            {
                Error(item.Position, $"Expected {what} entries to be strings, got {item.Describe()}");
                return null;
            }
            list.Add(item.AsString());
        }
        return list;
    }

    /// <summary>opts.go processConfigFile: every allowed account must be a configured account.</summary>
    private void ValidateAuthCallout()
    {
        if (o.AuthCallout is not { } ac) return;
        foreach (var name in ac.AllowedAccounts)
        {
            if (!o.Accounts.Any(a => a.Name == name))
                Error(_authCalloutAt ?? default, $"auth_callout allowed account \"{name}\" not found in configured accounts");
        }
    }
}
