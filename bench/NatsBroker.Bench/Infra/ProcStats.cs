using System.Globalization;
using System.Runtime.InteropServices;

namespace NatsBroker.Bench.Infra;

/// <summary>CPU time and peak RSS of a process, read from /proc (Linux).</summary>
internal static partial class ProcStats
{
    private static readonly double TicksPerSecond = ReadClockTicks();

    [LibraryImport("libc", EntryPoint = "sysconf")]
    private static partial long Sysconf(int name);

    private static double ReadClockTicks()
    {
        try
        {
            long t = Sysconf(2); // _SC_CLK_TCK
            return t > 0 ? t : 100;
        }
        catch (DllNotFoundException)
        {
            return 100;
        }
        catch (EntryPointNotFoundException)
        {
            return 100;
        }
    }

    /// <summary>utime+stime of the process in seconds (10 ms resolution), or NaN if unreadable.</summary>
    public static double CpuSeconds(int pid)
    {
        try
        {
            string stat = File.ReadAllText($"/proc/{pid}/stat");
            int close = stat.LastIndexOf(')');
            string[] f = stat[(close + 2)..].Split(' ');
            // f[0] is field 3 (state); utime is field 14, stime field 15.
            long utime = long.Parse(f[11], CultureInfo.InvariantCulture);
            long stime = long.Parse(f[12], CultureInfo.InvariantCulture);
            return (utime + stime) / TicksPerSecond;
        }
        catch (IOException)
        {
            return double.NaN;
        }
        catch (UnauthorizedAccessException)
        {
            return double.NaN;
        }
    }

    /// <summary>
    /// utime+stime of the process and every live descendant (a supervised gateway is part of "the server": its CPU
    /// is what the hop costs), in seconds, or NaN if the root is unreadable.
    /// </summary>
    public static double TreeCpuSeconds(int pid)
    {
        double total = CpuSeconds(pid);
        if (double.IsNaN(total)) return total;
        foreach (int child in Descendants(pid))
        {
            double c = CpuSeconds(child);
            if (!double.IsNaN(c)) total += c;
        }

        return total;
    }

    /// <summary>Sum of the peak resident set sizes (VmHWM) of the process and its live descendants, or -1.</summary>
    public static long TreePeakRssBytes(int pid)
    {
        long total = PeakRssBytes(pid);
        if (total < 0) return total;
        foreach (int child in Descendants(pid))
        {
            long c = PeakRssBytes(child);
            if (c > 0) total += c;
        }

        return total;
    }

    /// <summary>Sum of the current resident set sizes (VmRSS) of the process and its live descendants, or -1.</summary>
    public static long TreeRssBytes(int pid)
    {
        long total = RssBytes(pid);
        if (total < 0) return total;
        foreach (int child in Descendants(pid))
        {
            long c = RssBytes(child);
            if (c > 0) total += c;
        }

        return total;
    }

    /// <summary>Live descendants of <paramref name="root"/>, found from the parent pid in each /proc/N/stat.</summary>
    public static List<int> Descendants(int root)
    {
        var parentOf = new Dictionary<int, int>();
        foreach (string dir in Directory.EnumerateDirectories("/proc"))
        {
            if (!int.TryParse(Path.GetFileName(dir), NumberStyles.None, CultureInfo.InvariantCulture, out int pid)) continue;
            try
            {
                string stat = File.ReadAllText(Path.Combine(dir, "stat"));
                int close = stat.LastIndexOf(')');
                // After ") " come state (field 3) and ppid (field 4).
                string[] f = stat[(close + 2)..].Split(' ', 3);
                parentOf[pid] = int.Parse(f[1], CultureInfo.InvariantCulture);
            }
            catch (IOException)
            {
                // The process exited while /proc was listed.
            }
            catch (UnauthorizedAccessException)
            {
            }
        }

        var found = new List<int>();
        var frontier = new Queue<int>();
        frontier.Enqueue(root);
        while (frontier.Count > 0)
        {
            int parent = frontier.Dequeue();
            foreach (var (pid, ppid) in parentOf)
            {
                if (ppid != parent) continue;
                found.Add(pid);
                frontier.Enqueue(pid);
            }
        }

        return found;
    }

    /// <summary>CPU time of this process (all threads) in seconds, with microsecond resolution.</summary>
    public static double SelfCpuSeconds()
    {
        using var p = System.Diagnostics.Process.GetCurrentProcess();
        return p.TotalProcessorTime.TotalSeconds;
    }

    /// <summary>Peak resident set size (VmHWM) in bytes, or -1.</summary>
    public static long PeakRssBytes(int pid) => ReadStatusKb(pid, "VmHWM:") * 1024;

    /// <summary>Current resident set size (VmRSS) in bytes, or -1.</summary>
    public static long RssBytes(int pid) => ReadStatusKb(pid, "VmRSS:") * 1024;

    private static long ReadStatusKb(int pid, string key)
    {
        try
        {
            foreach (string line in File.ReadLines($"/proc/{pid}/status"))
            {
                if (line.StartsWith(key, StringComparison.Ordinal))
                {
                    string v = line[key.Length..].Trim();
                    int sp = v.IndexOf(' ', StringComparison.Ordinal);
                    return long.Parse(sp > 0 ? v[..sp] : v, CultureInfo.InvariantCulture);
                }
            }
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }

        return -1;
    }
}
