using System.Diagnostics;
using System.Globalization;
using System.Net;
using System.Net.Sockets;
using System.Text;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench;

/// <summary>One start of one server: start-up times, idle RSS and memory per idle connection.</summary>
internal sealed record FootprintSample(string Server, int Rep, string Status, string? Note,
    double? PortsFileMs, double? AcceptMs, double? IdleRssMb, double? PerConnectionKb);

/// <summary>Medians over the footprint samples of one server.</summary>
internal sealed record FootprintSide(string Server, int OkRuns, double? PortsFileMs, double? AcceptMs, double? IdleRssMb,
    double? PerConnectionKb, double? MinPortsFileMs, double? MaxPortsFileMs);

/// <summary>
/// Start-up and memory of a fresh server process: spawn to the ports file (what nats.node's and NATS.Net's test
/// harnesses wait for) and to the first accepted connection (one connect after the ports file appeared); VmRSS after 1 s idle; then <see cref="Connections"/>
/// connections that CONNECT and PING (each waits for its PONG) and stay idle: (VmRSS after 1 s − idle VmRSS) /
/// connections. Runs ours and Go alternately in the same bench run.
/// </summary>
internal static class Footprint
{
    public const int Connections = 2000;
    private static readonly TimeSpan StartTimeout = TimeSpan.FromSeconds(20);
    private static CultureInfo Inv => CultureInfo.InvariantCulture;

    public static FootprintSample Measure(ServerSpec spec, int rep, string tmpRoot)
    {
        string dir = Path.Combine(tmpRoot, $"fp-{spec.Label}-{Guid.NewGuid():N}"[..24]);
        Directory.CreateDirectory(dir);
        int port = ServerProcess.FreePort();
        var psi = new ProcessStartInfo(spec.FileName) { UseShellExecute = false, RedirectStandardError = true, RedirectStandardOutput = true };
        foreach (var a in spec.PrefixArgs.Concat(["-a", "127.0.0.1", "-p", port.ToString(Inv), "--ports_file_dir", dir]))
        {
            psi.ArgumentList.Add(a);
        }

        Process? p = null;
        var sockets = new List<Socket>(Connections);
        try
        {
            var sw = Stopwatch.StartNew();
            p = Process.Start(psi) ?? throw new InvalidOperationException("process did not start");
            p.OutputDataReceived += (_, _) => { };
            p.ErrorDataReceived += (_, _) => { };
            p.BeginOutputReadLine();
            p.BeginErrorReadLine();
            // Like client test harnesses: wait for the ports file without touching the port (a connection
            // probe would make the server serve a client while it is still starting), then connect once.
            double? portsMs = null, acceptMs = null;
            var endpoint = new IPEndPoint(IPAddress.Loopback, port);
            while (portsMs is null && sw.Elapsed < StartTimeout && !p.HasExited)
            {
                if (Directory.EnumerateFiles(dir, "*.ports").Any())
                {
                    portsMs = sw.Elapsed.TotalMilliseconds;
                }
                else
                {
                    Thread.Sleep(1);
                }
            }

            while (portsMs is not null && acceptMs is null && sw.Elapsed < StartTimeout && !p.HasExited)
            {
                if (TryConnect(endpoint))
                {
                    acceptMs = sw.Elapsed.TotalMilliseconds;
                }
                else
                {
                    Thread.Sleep(1);
                }
            }

            if (portsMs is null || acceptMs is null)
            {
                return new FootprintSample(spec.Label, rep, "error", p.HasExited ? $"exited with code {p.ExitCode} at start-up" : "not ready in time", portsMs, acceptMs, null, null);
            }

            Thread.Sleep(1000);
            long idle = ProcStats.RssBytes(p.Id);
            for (int i = 0; i < Connections; i++)
            {
                var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { ReceiveTimeout = 10_000 };
                sockets.Add(s);
                s.Connect(endpoint);
                s.Send("CONNECT {\"verbose\":false,\"pedantic\":false}\r\nPING\r\n"u8);
            }

            var buf = new byte[4096];
            foreach (var s in sockets)
            {
                var seen = new StringBuilder();
                while (!seen.ToString().Contains("PONG\r\n", StringComparison.Ordinal))
                {
                    int n = s.Receive(buf);
                    if (n == 0)
                    {
                        throw new IOException("server closed an idle connection: " + seen);
                    }

                    seen.Append(Encoding.ASCII.GetString(buf, 0, n));
                }
            }

            Thread.Sleep(1000);
            long loaded = ProcStats.RssBytes(p.Id);
            return new FootprintSample(spec.Label, rep, "ok", null, Math.Round(portsMs.Value, 1), Math.Round(acceptMs.Value, 1),
                Math.Round(idle / 1048576.0, 1), Math.Round((loaded - idle) / 1024.0 / Connections, 1));
        }
        catch (Exception ex) when (ex is SocketException or IOException or InvalidOperationException or System.ComponentModel.Win32Exception)
        {
            return new FootprintSample(spec.Label, rep, "error", ex.GetType().Name + ": " + ex.Message, null, null, null, null);
        }
        finally
        {
            foreach (var s in sockets)
            {
                s.Dispose();
            }

            if (p is not null)
            {
                try
                {
                    if (!p.HasExited)
                    {
                        p.Kill(entireProcessTree: true);
                    }

                    p.WaitForExit(5000);
                }
                catch (InvalidOperationException)
                {
                }

                p.Dispose();
            }

            try
            {
                Directory.Delete(dir, recursive: true);
            }
            catch (IOException)
            {
            }
        }
    }

    private static bool TryConnect(IPEndPoint endpoint)
    {
        using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            s.Connect(endpoint);
            return true;
        }
        catch (SocketException)
        {
            return false;
        }
    }

    public static FootprintSide Summarize(string server, IEnumerable<FootprintSample> samples)
    {
        var ok = samples.Where(s => s.Server == server && s.Status == "ok").ToList();
        static double? Median(IEnumerable<double?> xs)
        {
            var v = xs.Where(x => x.HasValue).Select(x => x!.Value).Order().ToArray();
            return v.Length == 0 ? null : v.Length % 2 == 1 ? v[v.Length / 2] : (v[(v.Length / 2) - 1] + v[v.Length / 2]) / 2;
        }

        return new FootprintSide(server, ok.Count, Median(ok.Select(s => s.PortsFileMs)), Median(ok.Select(s => s.AcceptMs)),
            Median(ok.Select(s => s.IdleRssMb)), Median(ok.Select(s => s.PerConnectionKb)),
            ok.Count == 0 ? null : ok.Min(s => s.PortsFileMs), ok.Count == 0 ? null : ok.Max(s => s.PortsFileMs));
    }
}
