using System.Text;

namespace NatsBroker.Accounts;

/// <summary>
/// Maps a subject matched by a source pattern onto a destination pattern: the source's wildcard tokens, in order,
/// fill the destination's (import <c>to</c> with wildcards, as nats-server's subject transforms do for imports).
/// A literal destination replaces the subject; an identical one leaves it as is.
/// </summary>
internal sealed class SubjectTransform
{
    private readonly string[] _source;
    private readonly string[] _destination;
    private readonly byte[]? _literal;
    private readonly bool _identity;

    public SubjectTransform(string source, string destination)
    {
        _source = source.Split('.');
        _destination = destination.Split('.');
        _identity = source == destination;
        if (!_identity && !_destination.Any(t => t is "*" or ">")) _literal = Encoding.UTF8.GetBytes(destination);
    }

    /// <summary>Whether <paramref name="source"/> may be mapped to <paramref name="destination"/> (same wildcards, in order).</summary>
    public static bool IsValid(string source, string destination)
    {
        var s = source.Split('.').Where(t => t is "*" or ">").ToArray();
        var d = destination.Split('.').Where(t => t is "*" or ">").ToArray();
        return d.Length == 0 ? s.Length == 0 : s.SequenceEqual(d);
    }

    public bool IsIdentity => _identity;

    /// <summary>The mapped subject (allocates unless literal or identity: imports with wildcard mappings only).</summary>
    public ReadOnlySpan<byte> Map(ReadOnlySpan<byte> subject)
    {
        if (_identity) return subject;
        if (_literal is not null) return _literal;
        var tokens = Encoding.UTF8.GetString(subject).Split('.');
        var captured = new List<string>();
        for (int i = 0; i < _source.Length && i < tokens.Length; i++)
        {
            if (_source[i] == "*") captured.Add(tokens[i]);
            else if (_source[i] == ">") { captured.Add(string.Join('.', tokens[i..])); break; }
        }
        var result = new string[_destination.Length];
        int next = 0;
        for (int i = 0; i < _destination.Length; i++)
            result[i] = _destination[i] is "*" or ">" && next < captured.Count ? captured[next++] : _destination[i];
        return Encoding.UTF8.GetBytes(string.Join('.', result));
    }
}
