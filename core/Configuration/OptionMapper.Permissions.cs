using NatsBroker.Subjects;

namespace NatsBroker.Configuration;

/// <summary>
/// User permissions: publish/subscribe allow and deny lists and allow_responses (opts.go parseUserPermissions,
/// parseVariablePermissions, parseAllowResponses).
/// </summary>
internal sealed partial class OptionMapper
{
    private Permissions? Permissions(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, $"Expected permissions to be a map/struct, got {e.Value.Describe()}");
            return null;
        }
        var p = new Permissions();
        foreach (var f in e.Value.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "pub" or "publish" or "import":
                    p.Publish = SubjectPermission(f) ?? p.Publish;
                    break;
                case "sub" or "subscribe" or "export":
                    p.Subscribe = SubjectPermission(f) ?? p.Subscribe;
                    break;
                case "publish_allow_responses" or "allow_responses":
                    p.Response = ResponsePermission(f);
                    break;
                default:
                    if (!f.Value.UsedAsVariable)
                        Error(f.KeyPosition, $"Unknown field \"{f.Key}\" parsing permissions");
                    break;
            }
        }
        if (p.Response is not null)
        {
            // nats-server: allowing responses turns off the blanket publish allow.
            p.Publish ??= new SubjectPermission();
            p.Publish.Allow ??= [];
        }
        return p;
    }

    /// <summary>A subject or list of subjects (old style, meaning allow), or a map with allow and/or deny.</summary>
    private SubjectPermission? SubjectPermission(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
            return Subjects(e) is { } allow ? new SubjectPermission { Allow = allow } : null;
        var m = e.Value.AsMap();
        if (m.Count == 0)
            return null;
        var sp = new SubjectPermission();
        foreach (var f in m)
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "allow":
                    sp.Allow = Subjects(f) ?? sp.Allow;
                    break;
                case "deny":
                    sp.Deny = Subjects(f) ?? sp.Deny;
                    break;
                default:
                    if (!f.Value.UsedAsVariable)
                        Error(f.KeyPosition, $"Unknown field name \"{f.Key}\" parsing subject permissions, only 'allow' or 'deny' are permitted");
                    break;
            }
        }
        return sp;
    }

    private List<string>? Subjects(ConfigEntry e)
    {
        var v = e.Value;
        var subjects = new List<string>();
        if (v.Kind == ConfigValueKind.String)
            subjects.Add(v.AsString());
        else if (v.Kind == ConfigValueKind.Array)
        {
            foreach (var item in v.AsArray())
            {
                if (item.Kind != ConfigValueKind.String)
                {
                    Error(item.Position, "Subject in permissions array cannot be cast to string");
                    return null;
                }
                subjects.Add(item.AsString());
            }
        }
        else
        {
            Error(e.KeyPosition, $"Expected subject permissions to be a subject, or array of subjects, got {v.Describe()}");
            return null;
        }
        foreach (var s in subjects)
        {
            if (Subject.IsValid(s))
                continue;
            // A queue-qualified subscribe permission: "subject queue".
            var parts = s.Split([' ', '\t'], StringSplitOptions.RemoveEmptyEntries);
            if (parts.Length != 2)
            {
                Error(e.KeyPosition, $"subject \"{s}\" is not a valid subject");
                return null;
            }
            if (!Subject.IsValid(parts[0]))
            {
                Error(e.KeyPosition, $"subject \"{parts[0]}\" is not a valid subject");
                return null;
            }
        }
        return subjects;
    }

    private ResponsePermission? ResponsePermission(ConfigEntry e)
    {
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Bool)
            return v.AsBool() ? new ResponsePermission() : null;
        if (v.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, "error parsing response permissions, expected a boolean or a map");
            return null;
        }
        var rp = new ResponsePermission();
        foreach (var f in v.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "max" or "max_msgs" or "max_messages" or "max_responses":
                    // Negative means unlimited; 0 keeps the default (opts.go parseAllowResponses).
                    if (Integer(f, out long n, int.MinValue, int.MaxValue) && n != 0)
                        rp.MaxMsgs = (int)n;
                    break;
                case "expires" or "expiration" or "ttl":
                    if (f.Value.Kind != ConfigValueKind.String)
                    {
                        Error(f.KeyPosition, "error parsing expires, not a duration string");
                        return null;
                    }
                    if (!GoDuration.TryParse(f.Value.AsString(), out var ttl, out string? err))
                    {
                        Error(f.KeyPosition, $"error parsing expires: {err}");
                        return null;
                    }
                    if (ttl != TimeSpan.Zero)
                        rp.Expires = ttl;
                    break;
                default:
                    if (!f.Value.UsedAsVariable)
                        Error(f.KeyPosition, $"Unknown field \"{f.Key}\" parsing permissions");
                    break;
            }
        }
        return rp;
    }
}
