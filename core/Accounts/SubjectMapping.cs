using System.Globalization;
using System.Text;
using NatsBroker.Auth;

namespace NatsBroker.Accounts;

/// <summary>One weighted destination of a mapping; <see cref="Weight"/> in percent (1-100).</summary>
public sealed record MappingDestination(string Subject, int Weight);

/// <summary>A mapping source and its destinations, as configured (<c>mappings { "src": "dst" | [{destination, weight}] }</c>).</summary>
public sealed record SubjectMappingConfig(string Source, IReadOnlyList<MappingDestination> Destinations);

/// <summary>
/// An account's subject mappings (server/accounts.go AddMapping / selectMappedSubject, server/subject_transform.go):
/// a client's publish whose subject matches a source is routed to one destination instead, chosen by weight (the
/// weights' remainder to 100% keeps the original subject). Destinations may use nats-server 2.10's functions:
/// <c>{{wildcard(n)}}</c> (also <c>$n</c>, and bare <c>*</c> filled in order), <c>{{partition(n,w1,w2...)}}</c> (FNV-1a
/// hash of the named wildcards, or of the whole subject, modulo n), <c>{{split(w,delim)}}</c>,
/// <c>{{splitfromleft(w,pos)}}</c>, <c>{{splitfromright(w,pos)}}</c>, <c>{{slicefromleft(w,size)}}</c>,
/// <c>{{slicefromright(w,size)}}</c>. Only mapped subjects allocate (the new subject); others pay one pattern
/// match per mapping.
/// </summary>
public sealed class SubjectMappings
{
    private readonly Entry[] _entries;

    private sealed record Entry(byte[] Source, string[] SourceTokens, (DestinationTemplate Template, int Weight)[] Destinations, int TotalWeight);

    private SubjectMappings(Entry[] entries) => _entries = entries;

    /// <summary>Compiles mappings; null when there are none. Throws <see cref="FormatException"/> for an invalid destination.</summary>
    public static SubjectMappings? Create(IReadOnlyList<SubjectMappingConfig> configs)
    {
        if (configs.Count == 0) return null;
        var entries = new Entry[configs.Count];
        for (int i = 0; i < configs.Count; i++)
        {
            var c = configs[i];
            var tokens = c.Source.Split('.');
            var dests = c.Destinations.Select(d => (new DestinationTemplate(d.Subject, tokens), d.Weight)).ToArray();
            entries[i] = new Entry(Encoding.UTF8.GetBytes(c.Source), tokens, dests, dests.Sum(d => d.Weight));
        }
        return new SubjectMappings(entries);
    }

    /// <summary>Checks a destination against its source; the error text when it cannot be compiled.</summary>
    public static string? Validate(string source, string destination)
    {
        try
        {
            _ = new DestinationTemplate(destination, source.Split('.'));
            return null;
        }
        catch (FormatException ex)
        {
            return ex.Message;
        }
    }

    /// <summary>The subject a publish to <paramref name="subject"/> goes to; null when no mapping applies (or the dice keep it).</summary>
    public byte[]? Map(ReadOnlySpan<byte> subject)
    {
        foreach (var e in _entries)
        {
            if (!PermissionMatching.Matches(e.Source, subject)) continue;
            var dests = e.Destinations;
            if (dests.Length == 1 && e.TotalWeight >= 100) return dests[0].Template.Apply(subject);
            int roll = Random.Shared.Next(100);
            int acc = 0;
            foreach (var (template, weight) in dests)
            {
                acc += weight;
                if (roll < acc) return template.Apply(subject);
            }
            return null;
        }
        return null;
    }

    /// <summary>A compiled destination: literal tokens and functions over the source's wildcard tokens.</summary>
    private sealed class DestinationTemplate
    {
        private readonly Func<string[], string>[] _parts;
        private readonly int[] _wildcardPositions;
        private readonly string[] _sourceTokens;

        public DestinationTemplate(string destination, string[] sourceTokens)
        {
            _sourceTokens = sourceTokens;
            _wildcardPositions = [.. sourceTokens.Select((t, i) => (t, i)).Where(x => x.t is "*" or ">").Select(x => x.i)];
            int nextBare = 0;
            var parts = new List<Func<string[], string>>();
            foreach (var token in destination.Split('.'))
            {
                string t = token.Trim();
                if (t.StartsWith("{{", StringComparison.Ordinal) && t.EndsWith("}}", StringComparison.Ordinal))
                {
                    parts.Add(Function(t[2..^2].Trim()));
                }
                else if (t.Length > 1 && t[0] == '$' && int.TryParse(t.AsSpan(1), NumberStyles.None, CultureInfo.InvariantCulture, out int legacy))
                {
                    parts.Add(Wildcard(legacy));
                }
                else if (t is "*" or ">")
                {
                    parts.Add(Wildcard(++nextBare));
                }
                else
                {
                    if (t.Contains("{{", StringComparison.Ordinal)) throw new FormatException($"invalid mapping destination \"{destination}\"");
                    parts.Add(_ => t);
                }
            }
            _parts = [.. parts];
        }

        private Func<string[], string> Wildcard(int n)
        {
            if (n < 1 || n > _wildcardPositions.Length) throw new FormatException($"no wildcard {n} in the mapping source");
            int pos = _wildcardPositions[n - 1];
            // A trailing '>' captures every remaining token.
            bool rest = _sourceTokens[pos] == ">";
            return tokens => pos >= tokens.Length ? "" : rest ? string.Join('.', tokens[pos..]) : tokens[pos];
        }

        private Func<string[], string> Function(string call)
        {
            int open = call.IndexOf('(');
            if (open <= 0 || !call.EndsWith(')')) throw new FormatException($"invalid mapping function \"{call}\"");
            string name = call[..open].Trim().ToLowerInvariant();
            var args = call[(open + 1)..^1].Split(',').Select(a => a.Trim()).Where(a => a.Length > 0).ToArray();
            int Int(int i) => i < args.Length && int.TryParse(args[i], NumberStyles.Integer, CultureInfo.InvariantCulture, out int v) ? v : throw new FormatException($"invalid argument in \"{call}\"");
            switch (name)
            {
                case "wildcard":
                    return Wildcard(Int(0));
                case "partition":
                {
                    int buckets = Int(0);
                    if (buckets <= 0) throw new FormatException($"invalid partition count in \"{call}\"");
                    var keys = Enumerable.Range(1, args.Length - 1).Select(i => Wildcard(Int(i))).ToArray();
                    return tokens =>
                    {
                        string key = keys.Length == 0 ? string.Join('.', tokens) : string.Concat(keys.Select(k => k(tokens)));
                        return (Fnv1a(Encoding.UTF8.GetBytes(key)) % (uint)buckets).ToString(CultureInfo.InvariantCulture);
                    };
                }
                case "split":
                {
                    var w = Wildcard(Int(0));
                    string delim = args.Length > 1 ? args[1] : throw new FormatException($"missing delimiter in \"{call}\"");
                    return tokens => string.Join('.', w(tokens).Split(delim).Where(p => p.Length > 0));
                }
                case "splitfromleft":
                {
                    var w = Wildcard(Int(0));
                    int pos = Int(1);
                    return tokens => { var v = w(tokens); return pos > 0 && pos < v.Length ? v[..pos] + "." + v[pos..] : v; };
                }
                case "splitfromright":
                {
                    var w = Wildcard(Int(0));
                    int pos = Int(1);
                    return tokens => { var v = w(tokens); return pos > 0 && pos < v.Length ? v[..^pos] + "." + v[^pos..] : v; };
                }
                case "slicefromleft":
                {
                    var w = Wildcard(Int(0));
                    int size = Int(1);
                    if (size <= 0) throw new FormatException($"invalid slice size in \"{call}\"");
                    return tokens => string.Join('.', w(tokens).Chunk(size).Select(c => new string(c)));
                }
                case "slicefromright":
                {
                    var w = Wildcard(Int(0));
                    int size = Int(1);
                    if (size <= 0) throw new FormatException($"invalid slice size in \"{call}\"");
                    return tokens =>
                    {
                        var v = w(tokens);
                        int head = v.Length % size;
                        var pieces = new List<string>();
                        if (head > 0) pieces.Add(v[..head]);
                        for (int i = head; i < v.Length; i += size) pieces.Add(v.Substring(i, size));
                        return string.Join('.', pieces);
                    };
                }
                default:
                    throw new FormatException($"unknown mapping function \"{name}\"");
            }
        }

        public byte[] Apply(ReadOnlySpan<byte> subject)
        {
            var tokens = Encoding.UTF8.GetString(subject).Split('.');
            var sb = new StringBuilder(subject.Length + 16);
            for (int i = 0; i < _parts.Length; i++)
            {
                if (i > 0) sb.Append('.');
                sb.Append(_parts[i](tokens));
            }
            return Encoding.UTF8.GetBytes(sb.ToString());
        }

        /// <summary>FNV-1a 32-bit (Go's hash/fnv New32a), as nats-server's partition function uses.</summary>
        private static uint Fnv1a(ReadOnlySpan<byte> data)
        {
            uint h = 2166136261;
            foreach (byte b in data)
            {
                h ^= b;
                h *= 16777619;
            }
            return h;
        }
    }
}
