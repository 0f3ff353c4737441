using System.Globalization;
using System.Text;

namespace NatsBroker.Configuration;

/// <summary>Kinds of scalar token the lexer reads where a value is expected.</summary>
internal enum TokenKind
{
    String,
    Integer,
    Float,
    Bool,
    DateTime,
    Variable,
}

/// <summary>A scalar token: its kind, text (escapes already applied; for integers the raw "64KB" form) and start.</summary>
internal readonly record struct Token(TokenKind Kind, string Text, SourcePosition Position);

/// <summary>
/// Character-level scanning of nats-server's conf format (conf/lex.go). The format is context sensitive
/// (what ends a token depends on whether we are at the top level, in a map or in an array), so the
/// <see cref="ConfigParser"/> drives the lexer and asks for the token it expects next.
/// </summary>
internal sealed class ConfigLexer(string input, string? file)
{
    private const int Eof = -1;
    private readonly string _s = input;
    private int _pos;
    private int _line = 1;
    private int _lineStart;

    public string? File { get; } = file;

    public SourcePosition Here => new(File, _line, _pos - _lineStart + 1);

    public int Peek(int ahead = 0) => _pos + ahead < _s.Length ? _s[_pos + ahead] : Eof;

    public int Next()
    {
        if (_pos >= _s.Length)
            return Eof;
        char c = _s[_pos++];
        if (c == '\n')
        {
            _line++;
            _lineStart = _pos;
        }
        return c;
    }

    public bool AtEof => _pos >= _s.Length;

    public ConfigException Error(string message) => Error(Here, message);

    public static ConfigException Error(SourcePosition at, string message) => new(at, message);

    // lex.go isWhitespace: only space and tab; isNL: '\n' and '\r'.
    public static bool IsBlank(int c) => c is ' ' or '\t';
    public static bool IsNewline(int c) => c is '\n' or '\r';
    public static bool IsSpace(int c) => c != Eof && char.IsWhiteSpace((char)c);
    public static bool IsKeySeparator(int c) => c is ':' or '=';

    /// <summary>Describes a character for an error message, escaping new lines as nats-server does.</summary>
    public static string Show(int c) => c switch
    {
        Eof => "EOF",
        '\n' => "\\n",
        '\r' => "\\r",
        _ => ((char)c).ToString(),
    };

    public void SkipBlanks()
    {
        while (IsBlank(Peek()))
            Next();
    }

    public void SkipSpaces()
    {
        while (IsSpace(Peek()))
            Next();
    }

    /// <summary>True at '#' or '//' (both start a comment to the end of the line).</summary>
    public bool AtComment() => Peek() == '#' || (Peek() == '/' && Peek(1) == '/');

    /// <summary>Consumes a comment up to (not including) the end of the line.</summary>
    public void SkipComment()
    {
        while (!AtEof && !IsNewline(Peek()))
            Next();
    }

    /// <summary>Skips white space, new lines and comments (between map keys, array values, top-level keys).</summary>
    public void SkipSpacesAndComments()
    {
        while (true)
        {
            SkipSpaces();
            if (!AtComment())
                return;
            SkipComment();
        }
    }

    /// <summary>Reads a key: quoted with '"' or '\'' (no escapes), or bare up to white space, ':' or '='.</summary>
    public (string Key, SourcePosition Position, bool Quoted) ReadKey(bool inMap)
    {
        var start = Here;
        int c = Peek();
        if (IsKeySeparator(c))
            throw Error($"Unexpected key separator '{Show(c)}'");
        if (c is '"' or '\'')
        {
            int quote = Next();
            var keyStart = Here;
            int from = _pos;
            while (Peek() != quote)
            {
                if (AtEof)
                    throw Error(inMap ? "Unexpected EOF processing quoted map key." : "Unexpected EOF.");
                Next();
            }
            string key = _s[from.._pos];
            Next();
            return (key, keyStart, true);
        }
        int begin = _pos;
        while (!AtEof && !IsSpace(Peek()) && !IsKeySeparator(Peek()))
            Next();
        if (AtEof && inMap)
            throw Error("Unexpected EOF processing map key.");
        return (_s[begin.._pos], start, false);
    }

    /// <summary>
    /// Reads the path after the <c>include</c> keyword (lex.go lexInclude): quoted, or bare up to white space,
    /// new line, ';' or '}'.
    /// </summary>
    public (string Path, SourcePosition Position) ReadIncludePath()
    {
        SkipBlanks();
        var at = Here;
        int c = Peek();
        switch (c)
        {
            case '[': throw Error("Expected include value but found start of an array");
            case '{': throw Error("Expected include value but found start of a map");
            case '(': throw Error("Expected include value but found start of a block");
            case '\\': throw Error("Expected include value but found escape sequence");
            case '\n' or '\r' or Eof: throw Error("Expected include value but found new line");
        }
        if (c == '-' || char.IsDigit((char)c))
            throw Error("Expected include value but found start of a number");
        if (c is '"' or '\'')
        {
            int quote = Next();
            int from = _pos;
            while (Peek() != quote)
            {
                if (AtEof)
                    throw Error(quote == '"' ? "Unexpected EOF in double quoted include" : "Unexpected EOF in quoted include");
                Next();
            }
            string p = _s[from.._pos];
            Next();
            return (p, at);
        }
        int begin = _pos;
        while (!AtEof && !IsNewline(Peek()) && !IsBlank(Peek()) && Peek() != ';' && Peek() != '}' && Peek() != '\'')
            Next();
        string path = _s[begin.._pos];
        if (Peek() == '\'')
            Next();
        return (path, at);
    }

    /// <summary>
    /// Reads a scalar value (anything but '[' and '{', which the parser handles). Mirrors lexValue and the
    /// states it leads to in lex.go.
    /// </summary>
    public Token ReadScalar()
    {
        var at = Here;
        int c = Peek();
        switch (c)
        {
            case '\'':
                return new Token(TokenKind.String, ReadSingleQuoted(at), at);
            case '"':
                Next();
                return new Token(TokenKind.String, ReadDoubleQuoted(at), at);
            case '(':
                return new Token(TokenKind.String, ReadBlock(), at);
            case '-':
                return ReadNegativeNumber(at);
            case '.':
                throw Error("Floats must start with a digit");
            case '\n' or '\r':
                throw Error("Expected value but found new line");
            case Eof:
                // "key =" at the very end: nats-server yields an empty string (lexString at EOF).
                return new Token(TokenKind.String, "", at);
        }
        if (char.IsDigit((char)c))
            return ReadNumberOrString(at);
        return ReadBareString(_pos, at);
    }

    // An unterminated string is reported where it starts, which is where the mistake usually is.
    private string ReadSingleQuoted(SourcePosition start)
    {
        Next();
        int from = _pos;
        while (Peek() != '\'')
        {
            if (AtEof)
                throw Error(start, "Unexpected EOF.");
            Next();
        }
        string s = _s[from.._pos];
        Next();
        return s;
    }

    /// <summary>
    /// A '(' block string: everything up to a ')' alone on its line (lex.go lexBlock). The value keeps the
    /// text after '(' and the new line before the closing ')'.
    /// </summary>
    private string ReadBlock()
    {
        Next();
        int from = _pos;
        while (true)
        {
            if (AtEof)
                throw Error("Unexpected EOF processing block.");
            int c = Next();
            if (c == ')' && _pos >= 2 && _s[_pos - 2] == '\n' && (Peek() == '\n' || AtEof))
                return _s[from..(_pos - 1)];
        }
    }

    // Characters that end a number (lex.go lexNumberOrDateOrStringOrIP). nats-server does not list ']' here,
    // which turns the last number of "[1, 2]" into the string "2"; we end numbers at ']' too.
    private static bool EndsNumber(int c) =>
        c == Eof || IsNewline(c) || IsBlank(c) || c is '}' or ']' or ';' or ',';

    private static bool IsSizeSuffix(int c) => c is 'k' or 'K' or 'm' or 'M' or 'g' or 'G' or 't' or 'T' or 'p' or 'P' or 'e' or 'E';

    private Token ReadNumberOrString(SourcePosition at)
    {
        int begin = _pos;
        while (char.IsDigit((char)Peek()))
            Next();
        int c = Peek();
        if (c == '-')
        {
            if (_pos - begin != 4)
                throw Error("All ISO8601 dates must be in full Zulu form.");
            return ReadDate(begin, at);
        }
        if (c == '.')
            return ReadFloatOrIp(begin, at);
        if (IsSizeSuffix(c))
        {
            // "1k", "64KB", "1MiB": an integer with a size suffix (lexConvenientNumber); "500ms" is a string.
            Next();
            while (Peek() is 'b' or 'B' or 'i' or 'I')
                Next();
            if (EndsNumber(Peek()))
                return new Token(TokenKind.Integer, _s[begin.._pos], at);
            return ReadBareString(begin, at);
        }
        if (EndsNumber(c))
            return new Token(TokenKind.Integer, _s[begin.._pos], at);
        // Anything else makes it an unquoted string that starts with digits, e.g. 10s or 1h30m.
        return ReadBareString(begin, at);
    }

    private Token ReadNegativeNumber(SourcePosition at)
    {
        int begin = _pos;
        Next();
        int c = Peek();
        if (!char.IsDigit((char)c))
        {
            if (c == '.')
                throw Error("Floats must start with a digit, not '.'.");
            throw Error($"Expected a digit but got '{Show(c)}'.");
        }
        while (char.IsDigit((char)Peek()))
            Next();
        if (Peek() == '.')
            return ReadFloatOrIp(begin, at);
        if (IsSizeSuffix(Peek()))
        {
            Next();
            while (Peek() is 'b' or 'B' or 'i' or 'I')
                Next();
            if (!EndsNumber(Peek()))
                return ReadBareString(begin, at);
        }
        return new Token(TokenKind.Integer, _s[begin.._pos], at);
    }

    private Token ReadFloatOrIp(int begin, SourcePosition at)
    {
        Next(); // '.'
        int c = Peek();
        if (!char.IsDigit((char)c))
            throw Error($"Floats must have a digit after the '.', but got '{Show(c)}' instead.");
        while (char.IsDigit((char)Peek()))
            Next();
        if (Peek() != '.')
            return new Token(TokenKind.Float, _s[begin.._pos], at);
        // A second '.': an IP address such as 127.0.0.1:4222 (lexIPAddr), kept as a string.
        while (Peek() is '.' or ':' or '-' || char.IsDigit((char)Peek()))
            Next();
        return new Token(TokenKind.String, _s[begin.._pos], at);
    }

    private Token ReadDate(int begin, SourcePosition at)
    {
        // YYYY- already seen; expect MM-DDTHH:MM:SSZ (lexDateAfterYear).
        const string format = "-00-00T00:00:00Z";
        foreach (char f in format)
        {
            int c = Next();
            if (f == '0')
            {
                if (c == Eof || !char.IsDigit((char)c))
                    throw Error($"Expected digit in ISO8601 datetime, but found '{Show(c)}' instead.");
            }
            else if (c != f)
                throw Error($"Expected '{f}' in ISO8601 datetime, but found '{Show(c)}' instead.");
        }
        return new Token(TokenKind.DateTime, _s[begin.._pos], at);
    }

    /// <summary>
    /// An unquoted string (lex.go lexString): up to a new line, white space, ',', ';', ']' or '}'. Escapes are
    /// processed. Without escapes, true/false/yes/no/on/off are booleans and a leading '$' makes a variable.
    /// </summary>
    private Token ReadBareString(int begin, SourcePosition at)
    {
        _pos = begin; // may restart a token that began like a number ("10s")
        int from = _pos;
        var sb = new StringBuilder();
        bool escaped = false;
        while (true)
        {
            int c = Peek();
            if (c == Eof || IsNewline(c) || IsBlank(c) || c is ';' or ',' or ']' or '}')
                break;
            if (c == '\'')
            {
                // nats-server ends an unquoted string at a single quote and swallows the quote.
                sb.Append(_s, from, _pos - from);
                Next();
                return new Token(TokenKind.String, sb.ToString(), at);
            }
            if (c == '\\')
            {
                sb.Append(_s, from, _pos - from);
                Next();
                AppendEscape(sb);
                from = _pos;
                escaped = true;
                continue;
            }
            Next();
        }
        sb.Append(_s, from, _pos - from);
        string text = sb.ToString();
        if (!escaped)
        {
            switch (text.ToLowerInvariant())
            {
                case "true" or "false" or "yes" or "no" or "on" or "off":
                    return new Token(TokenKind.Bool, text, at);
            }
            if (text.StartsWith('$'))
                return new Token(TokenKind.Variable, text[1..], at);
        }
        return new Token(TokenKind.String, text, at);
    }

    /// <summary>A double-quoted string, opening quote consumed; may span lines.</summary>
    private string ReadDoubleQuoted(SourcePosition start)
    {
        var sb = new StringBuilder();
        while (true)
        {
            int c = Peek();
            if (c == Eof)
                throw Error(start, "Unexpected EOF.");
            if (c == '"')
            {
                Next();
                return sb.ToString();
            }
            Next();
            if (c == '\\')
                AppendEscape(sb);
            else
                sb.Append((char)c);
        }
    }

    /// <summary>After a backslash: \xHH, \t, \n, \r, \" and \\ (lexStringEscape); nothing else.</summary>
    private void AppendEscape(StringBuilder sb)
    {
        int c = Next();
        switch (c)
        {
            case 't': sb.Append('\t'); return;
            case 'n': sb.Append('\n'); return;
            case 'r': sb.Append('\r'); return;
            case '"': sb.Append('"'); return;
            case '\\': sb.Append('\\'); return;
            case 'x':
                int h1 = Next(), h2 = Next();
                if (IsNewline(h1) || IsNewline(h2) || h1 == Eof || h2 == Eof)
                    throw Error("Expected two hexadecimal digits after '\\x', but hit end of line");
                string hex = $"{(char)h1}{(char)h2}";
                if (!byte.TryParse(hex, NumberStyles.HexNumber, CultureInfo.InvariantCulture, out byte b))
                    throw Error($"Expected two hexadecimal digits after '\\x', but got '{hex}'");
                // Go appends the raw byte; bytes >= 0x80 are taken as Latin-1 code points here.
                sb.Append((char)b);
                return;
        }
        throw Error($"Invalid escape character '{Show(c)}'. Only the following escape characters are allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.");
    }
}
