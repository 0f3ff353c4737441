using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>
/// The server's <c>jetstream</c> entry (opts.go parseJetStream, getStorageSize); its <c>limits</c> block is in
/// OptionMapper.JetStreamLimits.cs.
/// </summary>
internal sealed partial class OptionMapper
{
    private static readonly HashSet<string> UnsupportedJetStream = new(StringComparer.Ordinal)
    {
        "key", "ek", "encryption_key", "cipher", "extension_hint", "unique_tag",
        "max_outstanding_catchup",
    };

    /// <summary>
    /// The forms a <c>jetstream</c> entry takes besides a map, in the server block and in an account (opts.go
    /// parseJetStream / parseJetStreamForAccount): a bool, or "enabled"/"enable"/"disabled"/"disable". Null for a map
    /// (the caller reads its keys) and after an error, which is reported here.
    /// </summary>
    private bool? JetStreamSwitch(ConfigEntry e)
    {
        var v = e.Value;
        switch (v.Kind)
        {
            case ConfigValueKind.Bool:
                return v.AsBool();
            case ConfigValueKind.String:
                switch (v.AsString().ToLowerInvariant())
                {
                    case "enabled" or "enable":
                        return true;
                    case "disabled" or "disable":
                        return false;
                }
                Error(e.KeyPosition, $"Expected 'enabled' or 'disabled' for string value, got '{v.AsString()}'");
                return null;
            case ConfigValueKind.Map:
                return null;
            default:
                Error(e.KeyPosition, $"Expected map, bool or string to define JetStream, got {v.Describe()}");
                return null;
        }
    }

    private void JetStream(ConfigEntry e)
    {
        var v = e.Value;
        if (JetStreamSwitch(e) is { } on)
        {
            o.JetStream = on;
            return;
        }
        if (v.Kind != ConfigValueKind.Map) return;
        bool enable = true;
        foreach (var f in v.AsMap())
        {
            string key = f.Key.ToLowerInvariant();
            if (UnsupportedJetStream.Contains(key))
            {
                Unsupported(f, "jetstream");
                continue;
            }
            string s;
            switch (key)
            {
                case "store" or "store_dir" or "storedir":
                    if (o.StoreDir is not null)
                        Error(f.KeyPosition, "Duplicate 'store_dir' configuration");
                    else if (String(f, out s))
                        o.StoreDir = s;
                    break;
                case "max_memory_store" or "max_mem_store" or "max_mem":
                    if (StorageSize(f, "max_mem_store", out long mem)) o.JetStreamMaxMemory = mem;
                    break;
                case "max_file_store" or "max_file":
                    if (StorageSize(f, "max_file_store", out long file)) o.JetStreamMaxStore = file;
                    break;
                case "enable" or "enabled":
                    if (Bool(f, out bool b)) enable = b;
                    break;
                case "domain":
                    if (String(f, out s)) o.JetStreamDomain = s;
                    break;
                case "sync" or "sync_interval":
                    // opts.go: the string "always" turns on sync-always; anything else is a duration.
                    if (f.Value.Kind == ConfigValueKind.String && string.Equals(f.Value.AsString(), "always", StringComparison.OrdinalIgnoreCase))
                    {
                        o.JetStreamSyncAlways = true;
                    }
                    else if (Duration(f, allowSeconds: false, out var interval))
                    {
                        o.JetStreamSyncInterval = interval;
                    }
                    break;
                case "limits":
                    JetStreamLimits(f);
                    break;
                case "store_engine":
                    // Our extension: which storage engine backs file streams (see ServerOptions.StorageEngine).
                    if (String(f, out s))
                    {
                        if (s.Length == 0)
                            Error(f.KeyPosition, "store_engine can not be empty");
                        else
                            o.StorageEngine = s;
                    }
                    break;
                case "persist_mode":
                    // nats-server 2.12 names this per stream (stream.go PersistModeType: "", "default", "async");
                    // here it is also the default for the file streams that do not set it.
                    if (String(f, out s))
                    {
                        if (s is "" or "default") o.JetStreamPersistAsync = false;
                        else if (s == "async") o.JetStreamPersistAsync = true;
                        else Error(f.KeyPosition, $"persist_mode must be \"default\" or \"async\", got \"{s}\"");
                    }
                    break;
                case "store_engine_options":
                    // Our extension: a free block handed to the engine; values are kept as their text.
                    if (f.Value.Kind != ConfigValueKind.Map)
                    {
                        Error(f.KeyPosition, $"store_engine_options must be a map, got {f.Value.Describe()}");
                        break;
                    }
                    foreach (var opt in f.Value.AsMap())
                    {
                        if (EngineOptionText(opt.Value) is { } text) o.StorageEngineOptions[opt.Key] = text;
                        else Error(opt.KeyPosition, $"store_engine_options value of '{opt.Key}' must be a string, number or boolean, got {opt.Value.Describe()}");
                    }
                    break;
                case "store_engine_path" or "store_engine_paths":
                    // Our extension: third-party engine assemblies, loaded one by one by path (never a folder scan).
                    if (f.Value.Kind == ConfigValueKind.Array)
                    {
                        foreach (var item in f.Value.AsArray())
                        {
                            if (item.Kind == ConfigValueKind.String) o.StorageEnginePaths.Add(item.AsString());
                            else Error(item.Position, $"store_engine_path entries must be strings, got {item.Describe()}");
                        }
                    }
                    else if (String(f, out s))
                    {
                        o.StorageEnginePaths.Add(s);
                    }
                    break;
                default:
                    Unknown(f);
                    break;
            }
        }
        o.JetStream = enable;
    }

    /// <summary>The text of a scalar store_engine_options value (numbers invariant, booleans lower case), or null.</summary>
    private static string? EngineOptionText(ConfigValue v) => v.Kind switch
    {
        ConfigValueKind.String => v.AsString(),
        ConfigValueKind.Integer => v.AsInteger().ToString(CultureInfo.InvariantCulture),
        ConfigValueKind.Float => v.AsFloat().ToString(CultureInfo.InvariantCulture),
        ConfigValueKind.Bool => v.AsBool() ? "true" : "false",
        _ => null,
    };

    /// <summary>opts.go getStorageSize: an integer (size suffixes allowed) or a string ending in K, M, G or T.</summary>
    private bool StorageSize(ConfigEntry e, string name, out long size)
    {
        size = 0;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Integer)
            size = v.AsInteger();
        else if (v.Kind == ConfigValueKind.String)
        {
            string s = v.AsString();
            if (s.Length == 0)
                return true;
            int shift = s[^1] switch { 'K' => 10, 'M' => 20, 'G' => 30, 'T' => 40, _ => -1 };
            if (!long.TryParse(s.AsSpan(0, s.Length - 1), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out long num))
            {
                Error(e.KeyPosition, $"{name} strconv.ParseInt: parsing \"{s[..^1]}\": invalid syntax");
                return false;
            }
            if (shift < 0)
            {
                Error(e.KeyPosition, $"{name} sizes defined as strings must end in K, M, G, T");
                return false;
            }
            try
            {
                size = checked(num * (1L << shift));
            }
            catch (OverflowException)
            {
                Error(e.KeyPosition, $"{name} value is too big");
                return false;
            }
        }
        else
        {
            Error(e.KeyPosition, $"{name} must be int64 or string");
            return false;
        }
        if (size < -1)
        {
            Error(e.KeyPosition, $"{name} value can not be negative (use -1 for unlimited)");
            return false;
        }
        return true;
    }
}
