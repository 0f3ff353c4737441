using System.Text;
using NatsBroker.Contracts;

namespace NatsBroker.JetStream;

/// <summary>Subject checks JetStream needs: validity, overlap of two subject sets, subset of a filter.</summary>
internal static class JsSubjects
{
    /// <summary>A valid subject or filter: non-empty tokens, '>' only last, no whitespace.</summary>
    public static bool IsValid(string subject)
    {
        if (string.IsNullOrEmpty(subject)) return false;
        var tokens = subject.Split('.');
        for (int i = 0; i < tokens.Length; i++)
        {
            var t = tokens[i];
            if (t.Length == 0) return false;
            foreach (char c in t) if (char.IsWhiteSpace(c)) return false;
            if (t == ">" && i != tokens.Length - 1) return false;
        }
        return true;
    }

    public static bool IsLiteral(string subject) => SubjectMatch.IsLiteral(Encoding.UTF8.GetBytes(subject));

    /// <summary>True when some subject could match both <paramref name="a"/> and <paramref name="b"/> (nats-server SubjectsCollide).</summary>
    public static bool Collide(string a, string b)
    {
        var ta = a.Split('.');
        var tb = b.Split('.');
        int n = Math.Min(ta.Length, tb.Length);
        for (int i = 0; i < n; i++)
        {
            if (ta[i] == ">" || tb[i] == ">") return true;
            if (ta[i] == "*" || tb[i] == "*") continue;
            if (ta[i] != tb[i]) return false;
        }
        return ta.Length == tb.Length;
    }

    public static bool Overlap(string[]? a, string[]? b)
    {
        if (a is null || b is null) return false;
        foreach (var x in a) foreach (var y in b) if (Collide(x, y)) return true;
        return false;
    }

    /// <summary>True when every subject matching <paramref name="sub"/> also matches <paramref name="super"/>.</summary>
    public static bool IsSubsetOf(string sub, string super)
    {
        var ts = sub.Split('.');
        var tp = super.Split('.');
        for (int i = 0; i < tp.Length; i++)
        {
            if (tp[i] == ">") return ts.Length > i;
            if (i >= ts.Length) return false;
            if (tp[i] == "*") { if (ts[i] == ">") return false; continue; }
            if (ts[i] != tp[i]) return false;
        }
        return ts.Length == tp.Length;
    }
}
