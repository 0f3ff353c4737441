using System.Diagnostics;
using System.Runtime.InteropServices;

namespace NatsBroker.Bench.Infra;

internal sealed record MachineInfo(string CpuModel, int Cores, string Os, string DotNet, string NatsServerVersion, string NodeVersion, string NatsJsVersion, string LoadAverageAtStart)
{
    public static MachineInfo Collect(string? goPath, string repoRoot)
    {
        string model = "unknown";
        try
        {
            model = File.ReadLines("/proc/cpuinfo").FirstOrDefault(l => l.StartsWith("model name", StringComparison.Ordinal))?.Split(':', 2)[1].Trim() ?? model;
        }
        catch (IOException)
        {
        }

        string os = RuntimeInformation.OSDescription;
        string nats = goPath is null ? "not installed" : (RunForLine(goPath, "--version") ?? "unknown").Replace("nats-server: ", "", StringComparison.Ordinal);
        string node = RunForLine("node", "--version") ?? "not installed";
        string natsJs = "not installed";
        try
        {
            string pj = Path.Combine(repoRoot, "bench", "js", "node_modules", "nats", "package.json");
            if (File.Exists(pj))
            {
                using var doc = System.Text.Json.JsonDocument.Parse(File.ReadAllText(pj));
                natsJs = doc.RootElement.GetProperty("version").GetString() ?? natsJs;
            }
        }
        catch (System.Text.Json.JsonException)
        {
        }

        string load = "unknown";
        try
        {
            load = string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3));
        }
        catch (IOException)
        {
        }

        return new MachineInfo(model, Environment.ProcessorCount, os, RuntimeInformation.FrameworkDescription, nats, node, natsJs, load);
    }

    public static string? RunForLine(string file, string arg)
    {
        try
        {
            var psi = new ProcessStartInfo(file, arg) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
            using var p = Process.Start(psi);
            if (p is null)
            {
                return null;
            }

            string o = p.StandardOutput.ReadToEnd() + p.StandardError.ReadToEnd();
            if (!p.WaitForExit(10_000))
            {
                p.Kill(true);
                return null;
            }

            return o.Trim().Split('\n')[0].Trim();
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return null;
        }
    }
}
