using System.Collections;
using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>Where a key or value was read: file (null when parsed from a string), 1-based line and column.</summary>
/// <remarks>
/// nats-server reports the column 0-based on the first line and 1-based on the others (a quirk of its lexer,
/// conf/lex.go measures from the previous '\n'); we always report a true 1-based column.
/// </remarks>
public readonly record struct SourcePosition(string? File, int Line, int Column)
{
    public override string ToString() =>
        File is null
            ? string.Create(CultureInfo.InvariantCulture, $"{Line}:{Column}")
            : string.Create(CultureInfo.InvariantCulture, $"{File}:{Line}:{Column}");
}

/// <summary>The types nats-server's conf parser produces (conf/parse.go: string, bool, int64, float64, time, map, array).</summary>
public enum ConfigValueKind
{
    String,
    Integer,
    Float,
    Bool,
    DateTime,
    Map,
    Array,
}

/// <summary>One value of the generic config tree; remembers where it was read.</summary>
public sealed class ConfigValue
{
    private readonly object _value;

    private ConfigValue(ConfigValueKind kind, object value, SourcePosition position)
    {
        Kind = kind;
        _value = value;
        Position = position;
    }

    public ConfigValueKind Kind { get; }
    public SourcePosition Position { get; }

    /// <summary>
    /// True once the value was referenced as <c>$name</c>. nats-server does not report a key as unknown
    /// when it was only defined to be used as a variable (opts.go: <c>tk.IsUsedVariable()</c>).
    /// </summary>
    public bool UsedAsVariable { get; internal set; }

    public static ConfigValue FromString(string s, SourcePosition p) => new(ConfigValueKind.String, s, p);
    public static ConfigValue FromInteger(long v, SourcePosition p) => new(ConfigValueKind.Integer, v, p);
    public static ConfigValue FromFloat(double v, SourcePosition p) => new(ConfigValueKind.Float, v, p);
    public static ConfigValue FromBool(bool v, SourcePosition p) => new(ConfigValueKind.Bool, v, p);
    public static ConfigValue FromDateTime(DateTimeOffset v, SourcePosition p) => new(ConfigValueKind.DateTime, v, p);
    public static ConfigValue FromMap(ConfigMap v, SourcePosition p) => new(ConfigValueKind.Map, v, p);
    public static ConfigValue FromArray(IReadOnlyList<ConfigValue> v, SourcePosition p) => new(ConfigValueKind.Array, v, p);

    /// <summary>The same value seen from another place (a <c>$var</c> reference).</summary>
    internal ConfigValue At(SourcePosition p) => new(Kind, _value, p);

    public string AsString() => Kind == ConfigValueKind.String ? (string)_value : throw WrongKind(ConfigValueKind.String);
    public long AsInteger() => Kind == ConfigValueKind.Integer ? (long)_value : throw WrongKind(ConfigValueKind.Integer);
    public double AsFloat() => Kind == ConfigValueKind.Float ? (double)_value : throw WrongKind(ConfigValueKind.Float);
    public bool AsBool() => Kind == ConfigValueKind.Bool ? (bool)_value : throw WrongKind(ConfigValueKind.Bool);
    public DateTimeOffset AsDateTime() => Kind == ConfigValueKind.DateTime ? (DateTimeOffset)_value : throw WrongKind(ConfigValueKind.DateTime);
    public ConfigMap AsMap() => Kind == ConfigValueKind.Map ? (ConfigMap)_value : throw WrongKind(ConfigValueKind.Map);
    public IReadOnlyList<ConfigValue> AsArray() => Kind == ConfigValueKind.Array ? (IReadOnlyList<ConfigValue>)_value : throw WrongKind(ConfigValueKind.Array);

    /// <summary>The raw CLR value: string, long, double, bool, DateTimeOffset, ConfigMap or IReadOnlyList&lt;ConfigValue&gt;.</summary>
    public object RawValue => _value;

    /// <summary>Short description for error messages, e.g. <c>string "abc"</c> or <c>integer 5</c>.</summary>
    public string Describe() => Kind switch
    {
        ConfigValueKind.String => $"string \"{_value}\"",
        ConfigValueKind.Integer => string.Create(CultureInfo.InvariantCulture, $"integer {_value}"),
        ConfigValueKind.Float => string.Create(CultureInfo.InvariantCulture, $"float {_value}"),
        ConfigValueKind.Bool => (bool)_value ? "boolean true" : "boolean false",
        ConfigValueKind.DateTime => "datetime",
        ConfigValueKind.Map => "map",
        _ => "array",
    };

    public override string ToString() => Kind switch
    {
        ConfigValueKind.Map => "{...}",
        ConfigValueKind.Array => "[...]",
        _ => Convert.ToString(_value, CultureInfo.InvariantCulture) ?? "",
    };

    private InvalidOperationException WrongKind(ConfigValueKind wanted) =>
        new($"{Position}: expected {wanted}, got {Describe()}");
}

/// <summary>A key of a map with the position of the key itself (nats-server reports field errors at the key).</summary>
public sealed record ConfigEntry(string Key, SourcePosition KeyPosition, ConfigValue Value);

/// <summary>
/// A map (a <c>{}</c> block or the top level). Keys are case-sensitive here, as in nats-server's Go map;
/// option lookup is case-insensitive (opts.go lowercases keys). A repeated key replaces the earlier value.
/// Entries keep the order of first appearance.
/// </summary>
[System.Diagnostics.CodeAnalysis.SuppressMessage("Naming", "CA1710", Justification = "Named after the config format's 'map'.")]
public sealed class ConfigMap : IReadOnlyCollection<ConfigEntry>
{
    private readonly List<ConfigEntry> _entries = [];
    private readonly Dictionary<string, int> _index = new(StringComparer.Ordinal);

    public int Count => _entries.Count;

    public void Set(string key, SourcePosition keyPosition, ConfigValue value)
    {
        var entry = new ConfigEntry(key, keyPosition, value);
        if (_index.TryGetValue(key, out var i))
            _entries[i] = entry;
        else
        {
            _index[key] = _entries.Count;
            _entries.Add(entry);
        }
    }

    public bool TryGetValue(string key, out ConfigValue value)
    {
        if (_index.TryGetValue(key, out var i))
        {
            value = _entries[i].Value;
            return true;
        }
        value = null!;
        return false;
    }

    public ConfigValue this[string key] =>
        TryGetValue(key, out var v) ? v : throw new KeyNotFoundException(key);

    public IEnumerator<ConfigEntry> GetEnumerator() => _entries.GetEnumerator();
    IEnumerator IEnumerable.GetEnumerator() => GetEnumerator();
}

/// <summary>The parsed contents of a config file: the top-level map.</summary>
public sealed class ConfigTree(string? file, ConfigMap root)
{
    /// <summary>The path given to the parser (null when parsed from a string).</summary>
    public string? File { get; } = file;
    public ConfigMap Root { get; } = root;
}
