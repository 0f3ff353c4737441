using System.Diagnostics;
using System.Globalization;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Scenarios;

namespace NatsBroker.Bench;

/// <summary>Starts both servers per run, alternates them, and collects the results.</summary>
internal sealed class Harness
{
    public const string GeneratorNote =
        "Client-library generators: NATS.Net (NATS.Client.Core 3.3.2, in this process) and the official nats.js " +
        "client (npm 'nats' 2.29.x on Node).";

    private readonly Options _o;
    private readonly string _root;
    private readonly List<RunRecord> _runs = [];

    public Harness(Options o)
    {
        _o = o;
        _root = FindRepoRoot();
    }

    private static CultureInfo Inv => CultureInfo.InvariantCulture;

    public int Run()
    {
        var started = DateTimeOffset.UtcNow;
        var total = Stopwatch.StartNew();
        var scenarios = Select(ScenarioCatalog.All());
        if (_o.List)
        {
            foreach (var s in ScenarioCatalog.All())
            {
                Console.WriteLine($"{s.Name,-24} {s.Generator,-8} {s.PayloadBytes,7} B  {s.Title}{(s.NeedsJetStream ? " (JetStream)" : "")}");
            }

            return 0;
        }

        bool footprint = _o.FootprintRepsOrDefault > 0 &&
            (_o.Filters.Count == 0 || _o.Filters.Any(f => "footprint".Contains(f, StringComparison.OrdinalIgnoreCase)));
        if (scenarios.Count == 0 && !footprint)
        {
            Console.Error.WriteLine("no scenario matches the filter; use --list");
            return 2;
        }

        string tmp = BenchTemp.Dir("run");

        // --- servers ---------------------------------------------------------------------------------
        string? goUnavailable = null;
        ServerSpec? go = null;
        if (_o.NoGo)
        {
            goUnavailable = "disabled by --no-go";
        }
        else
        {
            string? goPath = _o.GoCmd is null ? FindOnPath("nats-server") : File.Exists(_o.GoCmd) ? _o.GoCmd : FindOnPath(_o.GoCmd);
            if (goPath is null)
            {
                goUnavailable = (_o.GoCmd is null ? "nats-server not found on PATH." : $"nats-server not found at '{_o.GoCmd}'.") + " Install it (Debian: sudo apt-get install nats-server) or pass --go-cmd PATH.";
                Console.WriteLine("WARNING: " + goUnavailable + " Running ours alone.");
            }
            else
            {
                go = ServerSpec.Parse("go", goPath);
            }
        }

        string? oursUnavailable = null;
        ServerSpec? ours = null;
        if (_o.NoOurs)
        {
            oursUnavailable = "disabled by --no-ours";
        }
        else
        {
            (ours, oursUnavailable) = PrepareOurs(tmp);
            if (ours is null)
            {
                Console.WriteLine($"WARNING: our broker is not available: {oursUnavailable}. Running nats-server alone.");
            }
        }

        if (scenarios.Any(s => s.Generator == "nats.js"))
        {
            string? why = NatsJsSetup.Ensure(_root);
            if (why is not null)
            {
                Console.WriteLine("WARNING: nats.js generator unavailable: " + why);
                NatsJsSetup.Unavailable = why;
            }
        }

        var machine = MachineInfo.Collect(go?.FileName, _root);
        Console.WriteLine($"machine: {machine.CpuModel}, {machine.Cores} cores, {machine.Os}; {machine.DotNet}; nats-server {machine.NatsServerVersion}; node {machine.NodeVersion}; nats.js {machine.NatsJsVersion}; load {machine.LoadAverageAtStart}");
        Console.WriteLine($"mode: {_o.ModeName}, {_o.RepsOrDefault} reps, {scenarios.Count} scenarios; ours: {ours?.Display ?? "n/a"}; go: {go?.Display ?? "n/a"}");
        Console.WriteLine(GeneratorNote);

        // --- runs: ours, Go, ours, Go ... ----------------------------------------------------------------
        var sides = new List<ServerSpec>();
        if (ours is not null)
        {
            sides.Add(ours);
        }

        if (go is not null)
        {
            sides.Add(go);
        }

        // --- start-up and memory footprint: ours, Go, ours, Go ... ------------------------------------------
        var footprintRuns = new List<FootprintSample>();
        for (int rep = 1; footprint && rep <= _o.FootprintRepsOrDefault; rep++)
        {
            foreach (var side in sides)
            {
                var f = Footprint.Measure(side, rep, tmp);
                footprintRuns.Add(f);
                Console.WriteLine(f.Status == "ok"
                    ? $"[footprint] rep {rep}/{_o.FootprintRepsOrDefault} {side.Label,-4}: ports file {f.PortsFileMs:0.0} ms, accepting {f.AcceptMs:0.0} ms, idle RSS {f.IdleRssMb:0.0} MB, {f.PerConnectionKb:0.0} KB per idle connection"
                    : $"[footprint] rep {rep}/{_o.FootprintRepsOrDefault} {side.Label,-4}: ERROR: {f.Note}");
            }
        }

        var footprintSummary = footprint ? sides.Select(s => Footprint.Summarize(s.Label, footprintRuns)).ToList() : null;

        int reps = _o.RepsOrDefault;
        int runSeq = 0;
        foreach (var sc in scenarios)
        {
            long count = _o.Msgs ?? Math.Max(sc.ReportsLatency ? 20 : 200, (long)(sc.DefaultCount * _o.ModeScale));
            for (int rep = 1; rep <= reps; rep++)
            {
                foreach (var side in sides)
                {
                    runSeq++;
                    // A server that said "not supported" once for this scenario is not asked again (each such
                    // answer may cost a request timeout); the row keeps its reason.
                    var earlier = _runs.FirstOrDefault(r => r.Scenario == sc.Name && r.Server == side.Label && r.Status == "not supported");
                    var rec = earlier is not null
                        ? earlier with { Rep = rep }
                        : RunOne(sc, side, rep, count, tmp, runSeq);
                    _runs.Add(rec);
                    Console.WriteLine(FormatProgress(rec, reps));
                }
            }
        }

        BenchTemp.Delete();

        // --- report ---------------------------------------------------------------------------------------
        var summaries = scenarios.Select(s => Summarize(s, ours is null ? null : "ours", go is null ? null : "go")).ToList();
        var report = new BenchReport(_o.ModeName, started, total.Elapsed.TotalSeconds, reps, machine, go?.Display, ours?.Display, oursUnavailable, goUnavailable, GeneratorNote, summaries, _runs,
            footprintSummary, footprint ? footprintRuns : null);
        // Smoke runs (CI, tests) write to the git-ignored bench/results/tmp so they never dirty the tree.
        string outDir = _o.OutDir ?? (_o.Mode == BenchMode.Smoke ? Path.Combine(_root, "bench", "results", "tmp") : Path.Combine(_root, "bench", "results"));
        var files = Report.Write(report, outDir);
        Console.WriteLine();
        Console.WriteLine(Report.Markdown(report));
        Console.WriteLine("written: " + string.Join(", ", files));
        Console.WriteLine($"total time {total.Elapsed.TotalSeconds:0} s");
        return _runs.Any(r => r.Status == "error") || footprintRuns.Any(f => f.Status == "error") ? 3 : 0;
    }

    private List<IScenario> Select(IReadOnlyList<IScenario> all)
    {
        return all.Where(s =>
                (_o.Filters.Count == 0 || _o.Filters.Any(f => NameMatches(s.Name, f))) &&
                (_o.Generators == "all" || _o.Generators.Split(',').Any(g =>
                    (g == "raw" && s.Generator == "raw") || (g == "mqtt" && s.Generator == "mqtt") || (g == "natsjs" && s.Generator == "nats.js") || (g == "natsnet" && s.Generator == "nats.net"))))
            .ToList();
    }

    /// <summary>A filter matches names that contain it; one starting with '=' only the name it spells (=pub-16 is not js-syncpub-16-mem).</summary>
    private static bool NameMatches(string name, string filter) =>
        filter.StartsWith('=')
            ? name.Equals(filter[1..], StringComparison.OrdinalIgnoreCase)
            : name.Contains(filter, StringComparison.OrdinalIgnoreCase);

    private (ServerSpec? Spec, string? Why) PrepareOurs(string tmp)
    {
        ServerSpec spec;
        if (_o.OursCmd is not null)
        {
            spec = ServerSpec.Parse("ours", _o.OursCmd);
        }
        else
        {
            string proj = Path.Combine(_root, "core", "NatsBroker.csproj");
            string dll = Path.Combine(_root, "core", "bin", "Release", "net10.0", "NatsBroker.dll");
            if (!_o.NoBuild)
            {
                Console.WriteLine("building our broker: dotnet build core -c Release ...");
                var (code, output) = RunProcess("dotnet", ["build", proj, "-c", "Release", "--nologo", "-v", "q", "-clp:ErrorsOnly"], TimeSpan.FromMinutes(10));
                if (code != 0)
                {
                    return (null, $"'dotnet build core -c Release' failed (exit {code}): {Tail(output, 6)}");
                }
            }

            if (!File.Exists(dll))
            {
                return (null, $"{dll} not found (build core with 'dotnet build core -c Release')");
            }

            // The executable `dotnet run --project core` starts: the Native AOT image the Release build puts next to
            // the dll (Directory.Build.targets), else the apphost when it could not be compiled.
            string exe = Path.Combine(_root, "core", "bin", "Release", "net10.0", "NatsBroker");
            spec = File.Exists(exe) ? new ServerSpec("ours", exe, []) : new ServerSpec("ours", "dotnet", [dll]);
        }

        try
        {
            using var s = ServerProcess.Start(spec, jetStream: false, tmp, TimeSpan.FromSeconds(20));
        }
        catch (Exception ex) when (ex is InvalidOperationException or TimeoutException)
        {
            return (null, $"'{spec.Display}' did not start: {ex.Message}");
        }

        return (spec, null);
    }

    private RunRecord RunOne(IScenario sc, ServerSpec side, int rep, long count, string tmp, int seq)
    {
        ScenarioResult res;
        ServerProcess? server = null;
        var wall = Stopwatch.StartNew();
        // Constant length: subjects built from it have the same size in every run (each run has its own server).
        string runId = seq.ToString("D6", Inv);
        try
        {
            if (sc.Generator == "nats.js" && NatsJsSetup.Unavailable is not null)
            {
                res = ScenarioResult.NotSupported("nats.js generator unavailable: " + NatsJsSetup.Unavailable);
            }
            else
            {
                try
                {
                    server = ServerProcess.Start(side, sc.NeedsJetStream, tmp, TimeSpan.FromSeconds(20), sc.ServerArgsFor(side.Label));
                }
                catch (Exception ex) when (sc.NeedsJetStream && ex is InvalidOperationException or TimeoutException)
                {
                    throw new NotSupportedByServerException("server did not start with -js: " + ex.Message, ex);
                }

                using var ctx = new ScenarioContext(server.Endpoint, server.Pid, count, TimeSpan.FromSeconds(_o.TimeoutSeconds), runId, _root, TimeSpan.FromSeconds(3), side.Label) { Spec = side, TmpRoot = tmp };
                try
                {
                    res = sc.Run(ctx);
                    ctx.ThrowIfFailed();
                }
                catch (Exception) when (ctx.Failure is not null)
                {
                    if (ctx.Failure is NotSupportedByServerException ns)
                    {
                        throw new NotSupportedByServerException(ns.Message, ns);
                    }

                    throw new ScenarioFailedException(ctx.Failure.Message, ctx.Failure);
                }

                // The measured processes: the server, or the broker a scenario measures instead (ctx.MeasureProcess),
                // plus the other nodes of a cluster row (ctx.AlsoMeasure).
                res.ServerPeakRssBytes = ctx.ServerPeakRssBytes();
                if (server.HasExited)
                {
                    throw new InvalidOperationException("server exited during the run: " + server.LogTail());
                }
            }
        }
        catch (NotSupportedByServerException ex)
        {
            res = ScenarioResult.NotSupported(ex.Message);
        }
        catch (Exception ex) when (ex is not OutOfMemoryException)
        {
            string log = server is not null && server.HasExited ? " (server exited: " + server.LogTail(3) + ")" : "";
            res = ScenarioResult.Failed(Flatten(ex) + log);
        }
        finally
        {
            server?.Dispose();
        }

        return ToRecord(sc, side.Label, rep, count, res) with { WallSeconds = Math.Round(wall.Elapsed.TotalSeconds, 3) };
    }

    private static string Flatten(Exception ex)
    {
        var e = ex;
        while (e is ScenarioFailedException && e.InnerException is not null)
        {
            e = e.InnerException;
        }

        return e.GetType().Name + ": " + e.Message;
    }

    private static RunRecord ToRecord(IScenario sc, string server, int rep, long count, ScenarioResult r)
    {
        static double? N(double v) => double.IsNaN(v) || double.IsInfinity(v) ? null : v;
        bool ok = r.Status == RunStatus.Ok;
        double? el = ok ? r.ElapsedSeconds : null;
        double? rate = ok ? r.MsgPerSec : null;
        double? mb = ok ? r.MsgPerSec * sc.PayloadBytes / 1e6 : null;
        double? dps = ok && r.ElapsedSeconds > 0 && r.Deliveries > 0 ? r.Deliveries / r.ElapsedSeconds : null;
        double? srvPct = ok ? N(r.ServerCpuSeconds / r.CpuWindowSeconds * 100) : null;
        double? genPct = ok ? N(r.GeneratorCpuSeconds / r.CpuWindowSeconds * 100) : null;
        string status = r.Status switch { RunStatus.Ok => "ok", RunStatus.NotSupported => "not supported", _ => "error" };
        return new RunRecord(sc.Name, sc.Generator, server, rep, status, r.Note, count, r.Messages, r.Deliveries, el, rate, mb, dps,
            ok ? r.P50Us : null, ok ? r.P95Us : null, ok ? r.P99Us : null,
            ok ? N(r.ServerCpuSeconds) : null, srvPct, ok ? N(r.GeneratorCpuSeconds) : null, genPct, ok ? N(r.CpuWindowSeconds) : null,
            ok && r.Messages > 0 ? N(r.ServerCpuSeconds * 1e9 / r.Messages) : null,
            ok && r.Messages > 0 ? N(r.GeneratorCpuSeconds * 1e9 / r.Messages) : null,
            r.ServerPeakRssBytes >= 0 ? r.ServerPeakRssBytes : null);
    }

    private static string FormatProgress(RunRecord r, int reps)
    {
        string head = $"[{r.Scenario,-22}] {r.Generator,-7} rep {r.Rep}/{reps} {r.Server,-4}: ";
        if (r.Status != "ok")
        {
            return head + r.Status.ToUpperInvariant() + ": " + r.Note;
        }

        string lat = r.P50Us is null ? "" : $" p50 {r.P50Us:0} us p99 {r.P99Us:0} us";
        return head + $"{Report.Rate(r.MsgPerSec)} msg/s{lat} ({r.ElapsedSeconds:0.000} s; server cpu {r.ServerCpuPercent:0}%, generator cpu {r.GeneratorCpuPercent:0}%, rss {Report.Mb(r.ServerPeakRssBytes)}){(r.Note is null ? "" : " " + r.Note)}";
    }

    private ScenarioSummary Summarize(IScenario sc, string? oursLabel, string? goLabel)
    {
        SideSummary? Side(string? label)
        {
            if (label is null)
            {
                return null;
            }

            var rs = _runs.Where(r => r.Scenario == sc.Name && r.Server == label).ToList();
            var ok = rs.Where(r => r.Status == "ok").ToList();
            if (ok.Count == 0)
            {
                var first = rs.FirstOrDefault(r => r.Status == "error") ?? rs.FirstOrDefault();
                return new SideSummary(first?.Status ?? "n/a", first?.Note, 0, null, null, null, null, null, null, null, null, null, null, null, null, null);
            }

            string status = ok.Count == rs.Count ? "ok" : $"ok ({rs.Count - ok.Count} of {rs.Count} runs failed)";
            string? note = ok.Count == rs.Count ? null : rs.First(r => r.Status != "ok").Note;
            return new SideSummary(status, note, ok.Count,
                Median(ok.Select(r => r.MsgPerSec)), ok.Min(r => r.MsgPerSec), ok.Max(r => r.MsgPerSec),
                Median(ok.Select(r => r.MBPerSec)), Median(ok.Select(r => r.DeliveriesPerSec)),
                Median(ok.Select(r => r.P50Us)), Median(ok.Select(r => r.P95Us)), Median(ok.Select(r => r.P99Us)),
                Median(ok.Select(r => r.ServerCpuPercent)), Median(ok.Select(r => r.GeneratorCpuPercent)),
                Median(ok.Select(r => r.ServerCpuNsPerMsg)), Median(ok.Select(r => r.GeneratorCpuNsPerMsg)),
                ok.Max(r => r.ServerPeakRssBytes));
        }

        var g = Side(goLabel);
        var o = Side(oursLabel);
        double? ratio = g?.MedianMsgPerSec is > 0 && o?.MedianMsgPerSec is not null ? o.MedianMsgPerSec / g.MedianMsgPerSec : null;
        return new ScenarioSummary(sc.Name, sc.Title, sc.Generator, sc.PayloadBytes, sc.ReportsLatency, g, o, ratio);
    }

    private static double? Median(IEnumerable<double?> xs)
    {
        var v = xs.Where(x => x.HasValue).Select(x => x!.Value).Order().ToArray();
        if (v.Length == 0)
        {
            return null;
        }

        return v.Length % 2 == 1 ? v[v.Length / 2] : (v[(v.Length / 2) - 1] + v[v.Length / 2]) / 2;
    }

    public static (int Code, string Output) RunProcess(string file, IEnumerable<string> args, TimeSpan timeout, string? cwd = null)
    {
        var psi = new ProcessStartInfo(file) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        if (cwd is not null)
        {
            psi.WorkingDirectory = cwd;
        }

        foreach (var a in args)
        {
            psi.ArgumentList.Add(a);
        }

        try
        {
            using var p = Process.Start(psi)!;
            var so = p.StandardOutput.ReadToEndAsync();
            var se = p.StandardError.ReadToEndAsync();
            if (!p.WaitForExit(timeout))
            {
                p.Kill(true);
                return (-1, $"timed out after {timeout.TotalSeconds:0} s");
            }

            p.WaitForExit();
            return (p.ExitCode, so.Result + se.Result);
        }
        catch (System.ComponentModel.Win32Exception ex)
        {
            return (-1, ex.Message);
        }
    }

    private static string Tail(string s, int lines) =>
        string.Join(" | ", s.Split('\n', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries).TakeLast(lines));

    public static string? FindOnPath(string exe)
    {
        var dirs = (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':', StringSplitOptions.RemoveEmptyEntries)
            .Concat(["/usr/sbin", "/usr/local/bin", "/usr/bin", "/sbin"]);
        foreach (var d in dirs)
        {
            string p = Path.Combine(d, exe);
            if (File.Exists(p))
            {
                return p;
            }
        }

        return null;
    }

    private static string FindRepoRoot()
    {
        foreach (var start in new[] { Directory.GetCurrentDirectory(), AppContext.BaseDirectory })
        {
            var d = new DirectoryInfo(start);
            while (d is not null)
            {
                if (File.Exists(Path.Combine(d.FullName, "NatsBroker.slnx")))
                {
                    return d.FullName;
                }

                d = d.Parent;
            }
        }

        return Directory.GetCurrentDirectory();
    }
}
