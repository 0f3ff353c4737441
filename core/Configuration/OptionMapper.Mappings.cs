using NatsBroker.Accounts;

namespace NatsBroker.Configuration;

/// <summary>
/// <c>mappings {}</c>, top-level (the global account) or in an account (server/opts.go parseAccountMappings):
/// <c>"src": "dst"</c>, <c>"src": {destination: "dst", weight: 50%}</c> or a list of such maps. Weights are percents
/// (an integer or "NN%"), at most 100 in total; a single destination without a weight takes 100.
/// </summary>
internal sealed partial class OptionMapper
{
    private void Mappings(ConfigEntry e, List<SubjectMappingConfig> into)
    {
        if (!Expect(e, ConfigValueKind.Map, "a map of subject mappings"))
            return;
        foreach (var m in e.Value.AsMap())
        {
            var dests = new List<MappingDestination>();
            bool ok = true;
            switch (m.Value.Kind)
            {
                case ConfigValueKind.String:
                    dests.Add(new MappingDestination(m.Value.AsString(), 100));
                    break;
                case ConfigValueKind.Map:
                    ok = MappingDestinationEntry(m, m.Value, dests);
                    break;
                case ConfigValueKind.Array:
                    foreach (var item in m.Value.AsArray())
                    {
                        if (item.Kind != ConfigValueKind.Map)
                        {
                            Error(item.Position, $"Unknown entry type for mapping destination: {item.Describe()}");
                            ok = false;
                            continue;
                        }
                        ok &= MappingDestinationEntry(m, item, dests);
                    }
                    break;
                default:
                    Error(m.KeyPosition, $"Unknown type {m.Value.Describe()} for mapping destination");
                    continue;
            }
            if (!ok) continue;
            if (dests.Count == 0)
            {
                Error(m.KeyPosition, $"no mapping destinations for \"{m.Key}\"");
                continue;
            }
            // A list of destinations without weights shares 100% equally only when there is one (nats-server requires weights otherwise).
            if (dests.Count == 1 && dests[0].Weight == 0) dests[0] = dests[0] with { Weight = 100 };
            if (dests.Sum(d => d.Weight) > 100)
            {
                Error(m.KeyPosition, $"Mapping \"{m.Key}\": total weight is greater than 100%");
                continue;
            }
            if (!NatsBroker.Subjects.Subject.IsValid(System.Text.Encoding.UTF8.GetBytes(m.Key)))
            {
                Error(m.KeyPosition, $"invalid mapping source subject \"{m.Key}\"");
                continue;
            }
            bool valid = true;
            foreach (var d in dests)
            {
                if (SubjectMappings.Validate(m.Key, d.Subject) is { } err)
                {
                    Error(m.KeyPosition, $"Error adding mapping for \"{m.Key}\" to \"{d.Subject}\": {err}");
                    valid = false;
                }
            }
            if (valid) into.Add(new SubjectMappingConfig(m.Key, dests));
        }
    }

    private bool MappingDestinationEntry(ConfigEntry at, ConfigValue map, List<MappingDestination> dests)
    {
        string? dest = null;
        int weight = 0;
        foreach (var f in map.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "destination" or "dest":
                    if (String(f, out var d)) dest = d; else return false;
                    break;
                case "weight":
                    if (f.Value.Kind == ConfigValueKind.Integer)
                    {
                        weight = (int)f.Value.AsInteger();
                    }
                    else if (f.Value.Kind == ConfigValueKind.String && int.TryParse(f.Value.AsString().TrimEnd('%'), System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out int w))
                    {
                        weight = w;
                    }
                    else
                    {
                        Error(f.KeyPosition, $"Invalid weight {f.Value.Describe()} for mapping destination");
                        return false;
                    }
                    if (weight is < 0 or > 100)
                    {
                        Error(f.KeyPosition, $"Invalid weight {weight} for mapping destination");
                        return false;
                    }
                    break;
                case "cluster":
                    break; // cluster-scoped destinations: no clusters here, the destination applies everywhere
                default:
                    Unknown(f);
                    return false;
            }
        }
        if (dest is null)
        {
            Error(at.KeyPosition, $"mapping for \"{at.Key}\" has no destination");
            return false;
        }
        dests.Add(new MappingDestination(dest, weight));
        return true;
    }
}
