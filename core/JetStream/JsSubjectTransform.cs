using System.Globalization;
using System.Text;

namespace NatsBroker.JetStream;

/// <summary>
/// A JetStream subject transform (nats-server subject_transform.go NewSubjectTransform / Match): a source filter
/// (empty = "&gt;") and a destination whose tokens are literals, "$N" or "{{wildcard(N)}}" (the N-th '*' of the
/// source), "{{partition(n[,N...])}}" (FNV-1a hash of the named tokens, or the whole subject, modulo n), and a
/// trailing "&gt;" that carries the source's "&gt;" tokens. Used by stream subject_transform, source and mirror
/// subject_transforms and republish. Mapping functions other than wildcard and partition are refused as invalid.
/// </summary>
internal sealed class JsSubjectTransform
{
    private enum Kind { Literal, Wildcard, Partition }

    private readonly string _source;
    private readonly string _destination;
    private readonly string[] _sourceTokens;
    private readonly (Kind Kind, string Literal, int[] SourceIndexes, int Partitions)[] _dest;
    private readonly bool _passThrough;

    private JsSubjectTransform(string source, string destination, string[] sourceTokens, (Kind, string, int[], int)[] dest)
    {
        _source = source;
        _destination = destination;
        _sourceTokens = sourceTokens;
        _dest = dest;
        _passThrough = source == ">" && destination == ">";
    }

    public string Source => _source;

    /// <summary>Builds a transform, or returns the error text nats-server would report (wrapped by the caller).</summary>
    public static JsSubjectTransform? Create(string? source, string? destination, out string? error)
    {
        error = null;
        if (string.IsNullOrEmpty(source)) source = ">";
        if (string.IsNullOrEmpty(destination)) destination = ">";
        if (!JsSubjects.IsValid(source) || !JsSubjects.IsValid(destination))
        {
            error = "invalid subject";
            return null;
        }
        var st = source.Split('.');
        var dt = destination.Split('.');
        bool srcFwc = st[^1] == ">", dstFwc = dt[^1] == ">";
        if (dt.Contains("*") || srcFwc != dstFwc)
        {
            error = "invalid subject";
            return null;
        }
        // The i-th '*' of the source (1-based) is source token index wildcardAt[i].
        var wildcardAt = new List<int> { -1 };
        for (int i = 0; i < st.Length; i++) if (st[i] == "*") wildcardAt.Add(i);
        var dest = new (Kind, string, int[], int)[dt.Length];
        for (int i = 0; i < dt.Length; i++)
        {
            var tok = dt[i];
            if (!TryParseToken(tok, out var kind, out var args, out int partitions, out error))
            {
                error = $"invalid mapping destination: {error} in {tok}";
                return null;
            }
            var indexes = new int[args.Length];
            for (int a = 0; a < args.Length; a++)
            {
                if (args[a] < 1 || args[a] >= wildcardAt.Count)
                {
                    error = $"invalid mapping destination: wildcard index out of range in {tok}: [{args[a]}]";
                    return null;
                }
                indexes[a] = wildcardAt[args[a]];
            }
            if (kind == Kind.Wildcard && indexes.Length != 1)
            {
                error = $"invalid mapping destination: wildcard index out of range in {tok}";
                return null;
            }
            dest[i] = (kind, tok, indexes, partitions);
        }
        return new JsSubjectTransform(source, destination, st, dest);
    }

    private static bool TryParseToken(string tok, out Kind kind, out int[] args, out int partitions, out string? error)
    {
        kind = Kind.Literal;
        args = [];
        partitions = 0;
        error = null;
        if (tok.Length > 1 && tok[0] == '$')
        {
            // "$N" (legacy); a '$' token that is not a number stays literal, as in nats-server.
            if (int.TryParse(tok.AsSpan(1), NumberStyles.None, CultureInfo.InvariantCulture, out int n))
            {
                kind = Kind.Wildcard;
                args = [n];
            }
            return true;
        }
        if (tok.Length <= 4 || !tok.StartsWith("{{", StringComparison.Ordinal) || !tok.EndsWith("}}", StringComparison.Ordinal)) return true;
        var body = tok[2..^2].Trim();
        int open = body.IndexOf('(');
        if (open <= 0 || !body.EndsWith(')'))
        {
            error = "unknown function";
            return false;
        }
        var name = body[..open].Trim().ToLowerInvariant();
        var argText = body[(open + 1)..^1];
        var parts = argText.Length == 0 ? [] : argText.Split(',').Select(p => p.Trim()).ToArray();
        var numbers = new int[parts.Length];
        for (int i = 0; i < parts.Length; i++)
        {
            if (!int.TryParse(parts[i], NumberStyles.None, CultureInfo.InvariantCulture, out numbers[i]))
            {
                error = "invalid argument";
                return false;
            }
        }
        switch (name)
        {
            case "wildcard":
                if (numbers.Length != 1) { error = numbers.Length == 0 ? "not enough arguments passed to the function" : "too many arguments passed to the function"; return false; }
                kind = Kind.Wildcard;
                args = numbers;
                return true;
            case "partition":
                if (numbers.Length < 1) { error = "not enough arguments passed to the function"; return false; }
                kind = Kind.Partition;
                partitions = numbers[0];
                args = numbers[1..];
                return true;
            default:
                error = "unknown function";
                return false;
        }
    }

    /// <summary>The transformed subject, or null when <paramref name="subject"/> does not match the source filter.</summary>
    public string? Match(string subject)
    {
        if (_passThrough) return subject;
        var tokens = subject.Split('.');
        if (_source != ">" && !MatchesSource(tokens)) return null;
        var sb = new StringBuilder(subject.Length + 16);
        for (int i = 0; i < _dest.Length; i++)
        {
            var (kind, literal, indexes, partitions) = _dest[i];
            if (kind == Kind.Literal && literal == ">")
            {
                // The tokens the source's '>' matched.
                if (i > 0) sb.Append('.');
                for (int t = _sourceTokens.Length - 1; t < tokens.Length; t++)
                {
                    if (t > _sourceTokens.Length - 1) sb.Append('.');
                    sb.Append(tokens[t]);
                }
                break;
            }
            if (i > 0) sb.Append('.');
            switch (kind)
            {
                case Kind.Literal:
                    sb.Append(literal);
                    break;
                case Kind.Wildcard:
                    sb.Append(tokens[indexes[0]]);
                    break;
                case Kind.Partition:
                    {
                        var key = indexes.Length == 0 ? subject : string.Concat(indexes.Select(x => tokens[x]));
                        sb.Append(partitions == 0 ? 0 : Fnv32a(Encoding.UTF8.GetBytes(key)) % (uint)partitions);
                        break;
                    }
            }
        }
        return sb.ToString();
    }

    private bool MatchesSource(string[] tokens)
    {
        var st = _sourceTokens;
        for (int i = 0; i < st.Length; i++)
        {
            if (st[i] == ">") return tokens.Length > i;
            if (i >= tokens.Length) return false;
            if (st[i] != "*" && st[i] != tokens[i]) return false;
        }
        return tokens.Length == st.Length;
    }

    private static uint Fnv32a(ReadOnlySpan<byte> data)
    {
        uint h = 2166136261;
        foreach (var b in data)
        {
            h ^= b;
            h *= 16777619;
        }
        return h;
    }

    public override string ToString() => $"{_source} -> {_destination}";
}
