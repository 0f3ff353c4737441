using System.Globalization;

namespace NatsBroker.Configuration;

/// <summary>
/// What a SIGHUP may change in the cluster options (reload.go diffOptions): the route listener cannot move
/// (validateClusterOpts), and the routes to solicit are diffed by URL (diffRoutes) so the server closes the removed
/// ones and solicits the added ones. Applying the result is the route code's; this only decides.
/// </summary>
public static class ClusterReload
{
    /// <summary>
    /// reload.go validateClusterOpts: null when <paramref name="new"/> may replace <paramref name="old"/>, else
    /// nats-server's reload error. Null options are clustering off, which nats-server sees as host "" and port 0, so
    /// turning clustering on or off fails on the host. A new port of -1 (random) stands for the port the running
    /// listener was given (reload.go ReloadOptions puts the old one back before comparing).
    /// </summary>
    public static string? Validate(ClusterOptions? old, ClusterOptions? @new)
    {
        string oldHost = old?.Host ?? "", newHost = @new?.Host ?? "";
        int oldPort = old?.Port ?? 0, newPort = @new?.Port ?? 0;
        if (newPort == -1) newPort = oldPort;
        if (oldHost != newHost)
            return $"config reload not supported for cluster host: old={oldHost}, new={newHost}";
        if (oldPort != newPort)
            return string.Create(CultureInfo.InvariantCulture, $"config reload not supported for cluster port: old={oldPort}, new={newPort}");
        if (@new?.Advertise is { Length: > 0 } adv && GoUrl.ParseHostPort(adv, 0, out _, out _) is { } err)
            return $"invalid Cluster.Advertise value of {adv}, err={err}";
        return null;
    }

    /// <summary>
    /// reload.go diffRoutes: the routes of <paramref name="old"/> not in <paramref name="new"/> (to close, without
    /// reconnecting) and those of <paramref name="new"/> not in <paramref name="old"/> (to solicit), each in its list's
    /// order. Equality is util.go urlsAreEqual, <c>reflect.DeepEqual</c> of the parsed URLs: every part counts, user info
    /// included (which <see cref="Uri.Equals(object)"/> ignores), and only the scheme's case does not.
    /// </summary>
    public static (List<Uri> Removed, List<Uri> Added) DiffRoutes(IReadOnlyList<Uri> old, IReadOnlyList<Uri> @new)
    {
        ArgumentNullException.ThrowIfNull(old);
        ArgumentNullException.ThrowIfNull(@new);
        var oldKeys = old.Select(Key).ToList();
        var newKeys = @new.Select(Key).ToList();
        var removed = new List<Uri>();
        for (int i = 0; i < old.Count; i++)
        {
            if (!newKeys.Contains(oldKeys[i])) removed.Add(old[i]);
        }
        var added = new List<Uri>();
        for (int i = 0; i < @new.Count; i++)
        {
            if (!oldKeys.Contains(newKeys[i])) added.Add(@new[i]);
        }
        return (removed, added);
    }

    /// <summary>The URL as Go parses it from the configured text; the text itself if it does not parse.</summary>
    private static object Key(Uri u) => (object?)GoUrl.Parse(u.OriginalString.Trim(), out _) ?? u.OriginalString;
}
