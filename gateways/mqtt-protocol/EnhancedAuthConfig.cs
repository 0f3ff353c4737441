using System.Globalization;
using NatsBroker.Configuration;

namespace NatsBroker.MqttGateway;

/// <summary>
/// Reads <c>mqtt { enhanced_authentication {} }</c> (alias <c>enhanced_auth</c>) and the configured users SCRAM can
/// authenticate: the top-level <c>authorization { user, password }</c> / <c>authorization { users: [...] }</c> and
/// <c>accounts { A: { users: [...] } }</c> entries (server/opts.go parseAuthorization, parseUsers). Those are the
/// core's to validate: here they are only read, so a form this does not know is skipped, never an error.
/// </summary>
internal static class EnhancedAuthConfig
{
    public static void Block(ConfigEntry block, EnhancedAuthOptions o, List<ConfigError> errors)
    {
        foreach (var f in block.Value.AsMap())
        {
            var v = f.Value;
            void Bad(string what) => errors.Add(new ConfigError(f.KeyPosition, $"invalid value for \"{f.Key}\" in mqtt enhanced_authentication: expected {what}, got {v.Describe()}"));
            switch (f.Key.ToLowerInvariant())
            {
                case "scram_sha_256" or "scram":
                    if (v.Kind == ConfigValueKind.Bool) o.Scram = v.AsBool(); else Bad("a boolean");
                    break;
                case "scram_iterations":
                    if (v.Kind == ConfigValueKind.Integer && v.AsInteger() is >= 4096 and <= 10_000_000) o.ScramIterations = (int)v.AsInteger();
                    else Bad("an integer from 4096 (RFC 7677 section 4) to 10000000");
                    break;
                case "methods":
                    if (v.Kind == ConfigValueKind.String) AddMethod(v.AsString());
                    else if (v.Kind == ConfigValueKind.Array && v.AsArray().All(m => m.Kind == ConfigValueKind.String))
                        foreach (var m in v.AsArray()) AddMethod(m.AsString());
                    else Bad("a list of method names");
                    break;
                case "subject":
                    if (v.Kind == ConfigValueKind.String && v.AsString().Length > 0 && !v.AsString().Any(c => c is ' ' or '\t' or '*' or '>'))
                        o.Subject = v.AsString();
                    else Bad("a subject without wildcards");
                    break;
                case "timeout":
                    if (MqttConfig.Duration(v, out var t) && t > TimeSpan.Zero) o.Timeout = t; else Bad("a positive duration");
                    break;
                case "user" or "username":
                    if (v.Kind == ConfigValueKind.String) o.User = v.AsString(); else Bad("a string");
                    break;
                case "pass" or "password":
                    if (v.Kind == ConfigValueKind.String) o.Password = v.AsString(); else Bad("a string");
                    break;
                default:
                    if (!v.UsedAsVariable) errors.Add(new ConfigError(f.KeyPosition, $"unknown field \"{f.Key}\" in mqtt enhanced_authentication"));
                    break;
            }
            void AddMethod(string m)
            {
                // MQTT 5 section 3.1.2.11.9: the method is a UTF-8 string; an empty one names no method.
                if (m.Length == 0) Bad("non-empty method names");
                else if (!o.Methods.Contains(m, StringComparer.Ordinal)) o.Methods.Add(m);
            }
        }
        if (o.Methods.Count > 0 && o.Subject is null)
            errors.Add(new ConfigError(block.KeyPosition, "mqtt enhanced_authentication: \"methods\" need a \"subject\" to send each step to"));
        if (o.Scram && o.Methods.Contains(ScramSha256Exchange.MethodName, StringComparer.Ordinal))
            errors.Add(new ConfigError(block.KeyPosition,
                $"mqtt enhanced_authentication: {ScramSha256Exchange.MethodName} is built in; set scram_sha_256: false to hand it to the hook"));
    }

    /// <summary>The top-level <c>authorization</c> block's user(s).</summary>
    public static void AuthorizationUsers(ConfigValue block, Dictionary<string, string> users)
    {
        if (block.Kind != ConfigValueKind.Map) return;
        var map = block.AsMap();
        User(map, users);
        if (map.TryGetValue("users", out var list)) UserList(list, users);
    }

    /// <summary>Each account's <c>users</c> list.</summary>
    public static void AccountUsers(ConfigValue accounts, Dictionary<string, string> users)
    {
        if (accounts.Kind != ConfigValueKind.Map) return;
        foreach (var account in accounts.AsMap())
        {
            if (account.Value.Kind == ConfigValueKind.Map && account.Value.AsMap().TryGetValue("users", out var list)) UserList(list, users);
        }
    }

    private static void UserList(ConfigValue list, Dictionary<string, string> users)
    {
        if (list.Kind != ConfigValueKind.Array) return;
        foreach (var entry in list.AsArray())
        {
            if (entry.Kind == ConfigValueKind.Map) User(entry.AsMap(), users);
        }
    }

    private static void User(ConfigMap map, Dictionary<string, string> users)
    {
        string? name = null, password = null;
        foreach (var f in map)
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "user" or "username" when f.Value.Kind == ConfigValueKind.String:
                    name = f.Value.AsString();
                    break;
                case "pass" or "password" when f.Value.Kind is ConfigValueKind.String or ConfigValueKind.Integer:
                    password = f.Value.Kind == ConfigValueKind.String ? f.Value.AsString() : f.Value.AsInteger().ToString(CultureInfo.InvariantCulture);
                    break;
            }
        }
        // A Go map: a later entry with the same name wins (as the core's user table).
        if (name is { Length: > 0 } && password is not null) users[name] = password;
    }
}
