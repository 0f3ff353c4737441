namespace NatsBroker.Accounts;

/// <summary>Subject containment for imports against exports (server/sublist.go subjectIsSubsetMatch).</summary>
internal static class SubjectSubset
{
    /// <summary>True when every subject matched by <paramref name="subject"/> is matched by <paramref name="pattern"/>.</summary>
    public static bool IsSubsetOf(string subject, string pattern)
    {
        var s = subject.Split('.');
        var p = pattern.Split('.');
        for (int i = 0; i < s.Length; i++)
        {
            if (i >= p.Length) return false;
            if (p[i] == ">") return true;
            if (s[i] == ">") return false;
            if (p[i] == "*") continue;
            if (s[i] == "*" || s[i] != p[i]) return false;
        }
        return s.Length == p.Length;
    }
}
