using System.Globalization;

namespace NatsBroker.Bench;

/// <summary>
/// The one temporary directory of a bench process: server stores, configs, certificates and Unix sockets all go
/// under it, and the harness deletes it when the run ends, so repeated runs leave nothing behind in the temp
/// directory. Short on purpose: a Unix socket path must fit in 108 bytes.
/// </summary>
internal static class BenchTemp
{
    public static string Root { get; } = Path.Combine(Path.GetTempPath(), "natsbroker-bench-" + Environment.ProcessId.ToString(CultureInfo.InvariantCulture));

    /// <summary>A path directly under <see cref="Root"/> (created if needed) for a file or socket named <paramref name="name"/>.</summary>
    public static string File(string name)
    {
        Directory.CreateDirectory(Root);
        return Path.Combine(Root, name);
    }

    /// <summary>A subdirectory of <see cref="Root"/>, created.</summary>
    public static string Dir(string name) => Directory.CreateDirectory(Path.Combine(Root, name)).FullName;

    /// <summary>Deletes the whole tree; a failure is reported, not fatal (the results are already written).</summary>
    public static void Delete()
    {
        try
        {
            if (Directory.Exists(Root)) Directory.Delete(Root, recursive: true);
        }
        catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
        {
            Console.Error.WriteLine($"could not delete {Root}: {ex.Message}");
        }
    }
}
