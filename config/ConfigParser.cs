using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>
/// Parses nats-server's configuration format (conf/lex.go, conf/parse.go) into a <see cref="ConfigTree"/>:
/// <list type="bullet">
/// <item><c>#</c> and <c>//</c> comments; <c>key: value</c>, <c>key = value</c>, <c>key value</c>;
/// values end at a new line, ',' or ';'.</item>
/// <item>maps <c>{ }</c> and arrays <c>[ ]</c> (comma or new line separated), nested freely.</item>
/// <item>strings: <c>"double"</c> (escapes \t \n \r \" \\ \xHH), <c>'single'</c> (raw), unquoted, and
/// <c>( ... )</c> blocks ended by a ')' alone on a line.</item>
/// <item>integers with size suffixes (k=1000, kb/ki/kib=1024, m, mb, g, gb, t, tb, p, pb, e, eb; any case),
/// floats, booleans (true/false/yes/no/on/off), Zulu datetimes, and IP addresses (kept as strings).
/// Durations such as "2m" or 10s are plain strings here; the option mapper interprets them.</item>
/// <item><c>include path</c>, relative to the including file; its keys are merged where it appears.</item>
/// <item><c>$name</c> variables: keys defined earlier in the enclosing maps (innermost first), then
/// environment variables (parsed as a value, so <c>PORT=4222</c> gives an integer).</item>
/// </list>
/// Errors throw a <see cref="ConfigException"/> with file:line:column.
/// </summary>
public static class ConfigParser
{
    private const int MaxIncludeDepth = 16;
    private const int MaxEnvDepth = 8;

    /// <summary>Reads and parses a config file.</summary>
    public static ConfigTree ParseFile(string path) => ParseFile(path, 0, null);

    /// <summary>Parses config text; <paramref name="file"/> names it in positions and anchors includes.</summary>
    public static ConfigTree Parse(string text, string? file = null)
    {
        var root = new Parser(text, file, 0, 0).ParseDocument();
        return new ConfigTree(file, root);
    }

    private static ConfigTree ParseFile(string path, int includeDepth, SourcePosition? includedFrom)
    {
        string text;
        try
        {
            text = File.ReadAllText(path);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            string reason = e is FileNotFoundException or DirectoryNotFoundException
                ? $"open {path}: no such file or directory"
                : $"open {path}: {e.Message}";
            throw includedFrom is null
                ? new ConfigException(null, reason)
                : new ConfigException(includedFrom, $"error parsing include file '{path}', {reason}");
        }
        var root = new Parser(text, path, includeDepth, 0).ParseDocument();
        return new ConfigTree(path, root);
    }

    private sealed class Parser(string text, string? file, int includeDepth, int envDepth)
    {
        private readonly ConfigLexer _lx = new(text, file);
        // Maps being built, outermost first: the scopes searched by $variables (arrays are not scopes).
        private readonly List<ConfigMap> _scopes = [];

        public ConfigMap ParseDocument()
        {
            var root = new ConfigMap();
            _scopes.Add(root);
            while (true)
            {
                _lx.SkipSpacesAndComments();
                // lex.go lexTop skips a '{' at the top level, so a whole file may be wrapped in { }; the closing
                // '}' ends a value or (on its own line) becomes a key Go drops at EOF. We skip both braces.
                if (_lx.Peek() is '{' or '}')
                {
                    _lx.Next();
                    continue;
                }
                if (_lx.AtEof)
                    break;
                if (_lx.Peek() == '/')
                    throw _lx.Error("Unexpected '/' (comments start with '#' or '//')");
                ParseEntry(root, inMap: false);

                // lexTopValueEnd: only blanks, then a comment, new line, EOF, ';', ',' or '}'.
                _lx.SkipBlanks();
                if (_lx.AtComment())
                {
                    _lx.SkipComment();
                    continue;
                }
                int c = _lx.Peek();
                if (c == -1)
                    break;
                if (ConfigLexer.IsNewline(c) || c is ';' or ',' or '}')
                {
                    _lx.Next();
                    continue;
                }
                throw _lx.Error($"Expected a top-level value to end with a new line, comment or EOF, but got '{ConfigLexer.Show(c)}' instead.");
            }
            return root;
        }

        private void ParseEntry(ConfigMap map, bool inMap)
        {
            var (key, keyPos, quoted) = _lx.ReadKey(inMap);
            if (!quoted && ConfigLexer.IsSpace(_lx.Peek()) && key.Equals("include", StringComparison.OrdinalIgnoreCase))
            {
                Include(map);
                return;
            }

            // lexKeyEnd: white space (new lines too) may separate the key from ':' / '=' or from the value.
            _lx.SkipSpaces();
            if (_lx.AtEof)
                throw ConfigLexer.Error(keyPos, $"key \"{key}\" has no value");
            if (ConfigLexer.IsKeySeparator(_lx.Peek()))
            {
                _lx.Next();
                // A top-level value must be on the same line as its key; in a map new lines are skipped.
                if (inMap)
                    _lx.SkipSpaces();
                else
                    _lx.SkipBlanks();
            }
            if (inMap)
            {
                if (_lx.Peek() == ',')
                    throw _lx.Error("Unexpected map value terminator ','.");
                if (_lx.Peek() is '}' or -1)
                    throw ConfigLexer.Error(keyPos, $"key \"{key}\" has no value");
            }
            map.Set(key, keyPos, ParseValue());
        }

        private ConfigValue ParseValue()
        {
            int c = _lx.Peek();
            if (c == '{')
                return ParseMap();
            if (c == '[')
                return ParseArray();
            return Convert(_lx.ReadScalar());
        }

        private ConfigValue ParseMap()
        {
            var at = _lx.Here;
            _lx.Next();
            var map = new ConfigMap();
            _scopes.Add(map);
            while (true)
            {
                _lx.SkipSpacesAndComments();
                int c = _lx.Peek();
                if (c == '}')
                {
                    _lx.Next();
                    break;
                }
                if (c == -1)
                    throw _lx.Error("Unexpected EOF processing map.");
                if (c == ']')
                    throw _lx.Error("Unexpected array end ']' processing map.");
                ParseEntry(map, inMap: true);

                // lexMapValueEnd
                _lx.SkipBlanks();
                if (_lx.AtComment())
                {
                    _lx.SkipComment();
                    continue;
                }
                c = _lx.Peek();
                if (ConfigLexer.IsNewline(c) || c is ';' or ',')
                {
                    _lx.Next();
                    continue;
                }
                if (c == '}')
                {
                    _lx.Next();
                    break;
                }
                if (c == -1)
                    throw _lx.Error("Unexpected EOF processing map.");
                throw _lx.Error($"Expected a map value terminator ',' or a map terminator '}}', but got '{ConfigLexer.Show(c)}' instead.");
            }
            _scopes.RemoveAt(_scopes.Count - 1);
            return ConfigValue.FromMap(map, at);
        }

        private ConfigValue ParseArray()
        {
            var at = _lx.Here;
            _lx.Next();
            var list = new List<ConfigValue>();
            while (true)
            {
                _lx.SkipSpacesAndComments();
                int c = _lx.Peek();
                if (c == ']')
                {
                    _lx.Next();
                    break;
                }
                if (c == ',')
                    throw _lx.Error("Unexpected array value terminator ','.");
                if (c == -1)
                    throw _lx.Error("Unexpected EOF processing array.");
                list.Add(ParseValue());

                // lexArrayValueEnd
                _lx.SkipBlanks();
                if (_lx.AtComment())
                {
                    _lx.SkipComment();
                    continue;
                }
                c = _lx.Peek();
                if (ConfigLexer.IsNewline(c) || c == ',')
                {
                    _lx.Next();
                    continue;
                }
                if (c == ']')
                {
                    _lx.Next();
                    break;
                }
                if (c == -1)
                    throw _lx.Error("Unexpected EOF processing array.");
                throw _lx.Error($"Expected an array value terminator ',' or an array terminator ']', but got '{ConfigLexer.Show(c)}' instead.");
            }
            return ConfigValue.FromArray(list, at);
        }

        private void Include(ConfigMap map)
        {
            var (path, at) = _lx.ReadIncludePath();
            if (includeDepth >= MaxIncludeDepth)
                throw ConfigLexer.Error(at, $"error parsing include file '{path}', includes nested more than {MaxIncludeDepth} deep (include cycle?)");
            // nats-server joins the include with the directory of the including file (parse.go p.fp).
            // Unlike Go's filepath.Join, an absolute include path stays absolute here.
            string baseDir = file is null ? Directory.GetCurrentDirectory() : Path.GetDirectoryName(Path.GetFullPath(file)) ?? "";
            string full = Path.GetFullPath(Path.Combine(baseDir, path));
            var included = ParseFile(full, includeDepth + 1, at);
            foreach (var e in included.Root)
                map.Set(e.Key, e.KeyPosition, e.Value);
        }

        private ConfigValue Convert(Token t)
        {
            var p = t.Position;
            switch (t.Kind)
            {
                case TokenKind.String:
                    return ConfigValue.FromString(t.Text, p);
                case TokenKind.Bool:
                    return ConfigValue.FromBool(t.Text.ToLowerInvariant() is "true" or "yes" or "on", p);
                case TokenKind.Integer:
                    return ConfigValue.FromInteger(ParseInteger(t), p);
                case TokenKind.Float:
                    if (!double.TryParse(t.Text, NumberStyles.Float, CultureInfo.InvariantCulture, out double d) || double.IsInfinity(d))
                        throw ConfigLexer.Error(p, $"float '{t.Text}' is out of the range");
                    return ConfigValue.FromFloat(d, p);
                case TokenKind.DateTime:
                    if (!DateTimeOffset.TryParseExact(t.Text, "yyyy-MM-dd'T'HH:mm:ss'Z'", CultureInfo.InvariantCulture,
                            DateTimeStyles.AssumeUniversal | DateTimeStyles.AdjustToUniversal, out var dt))
                        throw ConfigLexer.Error(p, $"expected Zulu formatted DateTime, but got '{t.Text}'");
                    return ConfigValue.FromDateTime(dt, p);
                default:
                    return LookupVariable(t);
            }
        }

        /// <summary>Digits with an optional size suffix (parse.go itemInteger).</summary>
        private static long ParseInteger(Token t)
        {
            string s = t.Text;
            int end = 0;
            while (end < s.Length && (char.IsDigit(s[end]) || s[end] == '-'))
                end++;
            if (!long.TryParse(s.AsSpan(0, end), NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out long n))
                throw ConfigLexer.Error(t.Position, $"integer '{s}' is out of the range");
            long mult = s[end..].ToLowerInvariant() switch
            {
                "" => 1,
                "k" => 1000L,
                "kb" or "ki" or "kib" => 1L << 10,
                "m" => 1000L * 1000,
                "mb" or "mi" or "mib" => 1L << 20,
                "g" => 1000L * 1000 * 1000,
                "gb" or "gi" or "gib" => 1L << 30,
                "t" => 1000L * 1000 * 1000 * 1000,
                "tb" or "ti" or "tib" => 1L << 40,
                "p" => 1000L * 1000 * 1000 * 1000 * 1000,
                "pb" or "pi" or "pib" => 1L << 50,
                "e" => 1000L * 1000 * 1000 * 1000 * 1000 * 1000,
                "eb" or "ei" or "eib" => 1L << 60,
                // nats-server silently drops a value with any other suffix (e.g. 1kbb); we report it.
                _ => throw ConfigLexer.Error(t.Position, $"invalid size suffix in '{s}'"),
            };
            try
            {
                return checked(n * mult);
            }
            catch (OverflowException)
            {
                throw ConfigLexer.Error(t.Position, $"integer '{s}' is out of the range");
            }
        }

        /// <summary>parse.go lookupVariable: enclosing maps innermost first, then the environment.</summary>
        private ConfigValue LookupVariable(Token t)
        {
            string name = t.Text;
            var p = t.Position;
            // A bcrypt hash like $2a$11$... is a plain string, not a variable (parse.go bcryptPrefix).
            if (name.StartsWith("2a$", StringComparison.Ordinal))
                return ConfigValue.FromString("$" + name, p);
            for (int i = _scopes.Count - 1; i >= 0; i--)
            {
                if (_scopes[i].TryGetValue(name, out var v))
                {
                    v.UsedAsVariable = true;
                    return v.At(p);
                }
            }
            string? env = Environment.GetEnvironmentVariable(name);
            if (env is not null)
            {
                if (env.Length == 0)
                    return ConfigValue.FromString("", p);
                if (envDepth >= MaxEnvDepth)
                    throw ConfigLexer.Error(p, $"variable reference for '{name}' on line {p.Line} could not be parsed: environment variables nested too deep");
                try
                {
                    var m = new Parser("pk=" + env, null, includeDepth, envDepth + 1).ParseDocument();
                    if (m.TryGetValue("pk", out var v))
                        return v.At(p);
                }
                catch (ConfigException e)
                {
                    throw ConfigLexer.Error(p, $"variable reference for '{name}' on line {p.Line} could not be parsed: {e.Message}");
                }
            }
            throw ConfigLexer.Error(p, $"variable reference for '{name}' on line {p.Line} can not be found");
        }
    }
}
