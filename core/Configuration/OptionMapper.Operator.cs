using NatsBroker.Auth.Jwt;

namespace NatsBroker.Configuration;

/// <summary>
/// Operator mode and the system account (server/opts.go: "operator", "resolver", "resolver_preload",
/// "system_account", "no_system_account"; server/server.go validateTrustedOperators).
/// </summary>
internal sealed partial class OptionMapper
{
    private SourcePosition? _operatorAt;

    /// <summary>Handles the operator-mode keys; false when <paramref name="key"/> is not one of them.</summary>
    private bool OperatorKey(ConfigEntry e, string key)
    {
        var op = o.Operator;
        switch (key)
        {
            case "operator" or "operators" or "root_operator" or "root_operators":
                _operatorAt = e.KeyPosition;
                if (e.Value.Kind == ConfigValueKind.Array)
                {
                    foreach (var item in e.Value.AsArray())
                        if (item.Kind == ConfigValueKind.String) AddOperator(e, item.AsString());
                        else Error(item.Position, $"error parsing operators: unsupported type {item.Describe()}");
                }
                else if (String(e, out var one))
                {
                    AddOperator(e, one);
                }
                return true;
            case "resolver" or "account_resolver" or "accounts_resolver":
                Resolver(e);
                return true;
            case "resolver_preload":
                if (!Expect(e, ConfigValueKind.Map, "a map of account public keys to JWTs")) return true;
                foreach (var f in e.Value.AsMap())
                {
                    if (String(f, out var jwt)) op.Preload[f.Key] = jwt.Trim();
                }
                return true;
            case "system_account" or "system":
                if (String(e, out var sys)) op.SystemAccount = sys;
                return true;
            case "mappings" or "maps":
                Mappings(e, o.Mappings);
                return true;
            case "no_system_account" or "no_system" or "no_sys_acc":
                if (Bool(e, out bool no)) op.NoSystemAccount = no;
                return true;
            default:
                return false;
        }
    }

    private void AddOperator(ConfigEntry e, string value)
    {
        string jwt = value.Trim();
        if (!jwt.StartsWith("eyJ", StringComparison.Ordinal))
        {
            // A file: the plain JWT or one decorated like a .creds file (nats-server readOperatorJWT).
            string path = value;
            if (!File.Exists(path) && o.ConfigFile is { } cf && Path.GetDirectoryName(Path.GetFullPath(cf)) is { } dir && File.Exists(Path.Combine(dir, value)))
                path = Path.Combine(dir, value);
            try
            {
                jwt = ReadDecoratedJwt(File.ReadAllText(path));
            }
            catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
            {
                Error(e.KeyPosition, $"error parsing operator JWT: open {value}: no such file or directory");
                return;
            }
        }
        var claims = AccountResolver.ReadOperator(jwt, out string error);
        if (claims is null)
        {
            Error(e.KeyPosition, $"error parsing operator JWT: {error}");
            return;
        }
        o.Operator.Operators.Add(claims);
    }

    /// <summary>The JWT inside "-----BEGIN ... JWT-----" markers, or the text itself when it has none.</summary>
    internal static string ReadDecoratedJwt(string text)
    {
        var lines = text.Split('\n').Select(l => l.Trim()).ToList();
        int begin = lines.FindIndex(l => l.StartsWith("-----BEGIN", StringComparison.Ordinal) && l.Contains("JWT", StringComparison.Ordinal));
        if (begin >= 0)
        {
            for (int i = begin + 1; i < lines.Count; i++)
                if (lines[i].Length > 0 && !lines[i].StartsWith("---", StringComparison.Ordinal)) return lines[i];
        }
        return text.Trim();
    }

    private void Resolver(ConfigEntry e)
    {
        var op = o.Operator;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String)
        {
            string s = v.AsString();
            if (string.Equals(s, "MEMORY", StringComparison.OrdinalIgnoreCase))
            {
                op.Resolver = ResolverKind.Memory;
                return;
            }
            // URL(...) asks an account server over HTTP: nothing here speaks to one.
            Error(e.KeyPosition, $"resolver \"{s}\" is not supported by this server yet (MEMORY, or {{type: full|cache, dir: ...}})");
            return;
        }
        if (!Expect(e, ConfigValueKind.Map, "MEMORY or a map {type, dir}"))
            return;
        string? type = null;
        foreach (var f in v.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "type":
                    if (String(f, out var t)) type = t.ToLowerInvariant();
                    break;
                case "dir":
                    if (String(f, out var d)) op.ResolverDir = d;
                    break;
                case "limit":
                    if (Integer(f, out long n, 1, int.MaxValue)) op.ResolverLimit = (int)n;
                    break;
                case "allow_delete":
                    if (Bool(f, out bool b)) op.AllowDelete = b;
                    break;
                case "interval" or "timeout" or "ttl" or "hard_delete":
                    break; // peer sync timing: there are no peers to sync with
                default:
                    Unknown(f);
                    break;
            }
        }
        switch (type)
        {
            case "full": op.Resolver = ResolverKind.Full; break;
            case "cache": op.Resolver = ResolverKind.Cache; break;
            default:
                Error(e.KeyPosition, "missing or unknown resolver type (full or cache)");
                return;
        }
        if (string.IsNullOrEmpty(op.ResolverDir))
            op.ResolverDir = "jwt"; // nats-server's default directory for the dir resolver
    }

    /// <summary>After the whole file (server.go validateTrustedOperators): operator mode needs a resolver and excludes config users.</summary>
    private void ValidateOperatorMode()
    {
        var op = o.Operator;
        if (!op.Enabled)
        {
            if (op.Resolver is not null || op.Preload.Count > 0)
                Error(_operatorAt ?? default, "resolver requires an operator (operator mode)");
            return;
        }
        var at = _operatorAt ?? default;
        if (op.Resolver is null)
            Error(at, "operators require an account resolver");
        if (o.Users.Count > 0 || o.Username is not null || o.Authorization is not null)
            Error(at, "operators do not allow authorization blocks or users (use user JWTs)");
        if (o.Accounts.Count > 0)
            Error(at, "operators do not allow Accounts to be configured directly");
        foreach (var (key, jwt) in op.Preload)
        {
            var payload = Jwt.TryDecode(jwt, out string error);
            if (payload is null)
            {
                Error(at, $"error preloading account {key}: {error}");
                continue;
            }
            var claims = new AccountClaims(payload.Value, jwt);
            if (claims.Subject != key)
                Error(at, $"error preloading account {key}: the JWT's subject is {claims.Subject}");
        }
    }
}
