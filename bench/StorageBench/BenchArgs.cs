using System.Globalization;

namespace NatsBroker.Bench.Storage;

/// <summary>The bench's "key=value" arguments (msgs=N, gb=N, payload=B, tail=MB) and "eo:key=value" engine options.</summary>
internal static class BenchArgs
{
    /// <summary>The value of "<paramref name="key"/>=value", or <paramref name="fallback"/> when absent.</summary>
    public static double Number(string[] args, string key, double fallback)
    {
        string prefix = key + "=";
        return args.FirstOrDefault(a => a.StartsWith(prefix, StringComparison.Ordinal)) is { } a
            ? double.Parse(a[prefix.Length..], CultureInfo.InvariantCulture) : fallback;
    }

    /// <summary>"eo:key=value" arguments: options handed to the file engine of every store the bench opens.</summary>
    public static Dictionary<string, string> EngineOptions(string[] args)
    {
        var options = new Dictionary<string, string>();
        foreach (var a in args)
        {
            if (a.StartsWith("eo:", StringComparison.Ordinal) && a.IndexOf('=') is int q and > 3) options[a[3..q]] = a[(q + 1)..];
        }
        return options;
    }
}
