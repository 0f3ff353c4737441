using System.Globalization;
using System.Text;
using System.Text.Json;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench;

/// <summary>Markdown table, JSON with every repetition, and an SVG chart of the ratios.</summary>
internal static class Report
{
    private static readonly JsonSerializerOptions JsonOpts = new() { WriteIndented = true, PropertyNamingPolicy = JsonNamingPolicy.CamelCase };

    private static CultureInfo Inv => CultureInfo.InvariantCulture;

    public static List<string> Write(BenchReport r, string dir)
    {
        Directory.CreateDirectory(dir);
        string md = Path.Combine(dir, r.Mode + ".md");
        string json = Path.Combine(dir, r.Mode + ".json");
        string svg = Path.Combine(dir, r.Mode + "-ratios.svg");
        File.WriteAllText(md, Markdown(r));
        File.WriteAllText(json, JsonSerializer.Serialize(r, JsonOpts));
        File.WriteAllText(svg, Svg(r));
        return [md, json, svg];
    }

    public static string Rate(double? v)
    {
        if (v is not double x)
        {
            return "-";
        }

        return x >= 1e6 ? (x / 1e6).ToString("0.00", Inv) + " M" : x >= 1e3 ? (x / 1e3).ToString("0.0", Inv) + " K" : x.ToString("0", Inv);
    }

    public static string Mb(long? bytes) => bytes is long b ? (b / 1048576.0).ToString("0.0", Inv) + " MB" : "-";

    private static string Payload(int b) => b >= 1024 && b % 1024 == 0 ? $"{b / 1024} KB" : $"{b} B";

    private static string F0(double? v) => v is double x ? x.ToString("0", Inv) : "-";

    private static string Cell(SideSummary? s, Func<SideSummary, string> ok)
    {
        if (s is null)
        {
            return "n/a";
        }

        if (s.OkRuns == 0)
        {
            return s.Status == "not supported" ? "not supported" : s.Status;
        }

        return ok(s);
    }

    private static string RateRange(SideSummary s) => $"{Rate(s.MedianMsgPerSec)} ({Rate(s.MinMsgPerSec)}–{Rate(s.MaxMsgPerSec)})";

    private static string MbS(SideSummary s) => s.MedianMBPerSec is double m ? m.ToString(m >= 100 ? "0" : "0.0", Inv) : "-";

    private static string Lat(SideSummary s) => s.P50Us is null ? "-" : $"{F0(s.P50Us)} / {F0(s.P95Us)} / {F0(s.P99Us)}";

    public static string Markdown(BenchReport r)
    {
        var sb = new StringBuilder();
        var m = r.Machine;
        sb.AppendLine(CultureInfo.InvariantCulture, $"# NatsBroker vs nats-server ({r.Mode} mode)");
        sb.AppendLine();
        sb.AppendLine(CultureInfo.InvariantCulture, $"- Started {r.StartedUtc:yyyy-MM-dd HH:mm} UTC, {r.DurationSeconds:0} s, {r.Reps} repetitions per server, alternating ours, Go, ours, Go ...; each run on a fresh server process, free loopback port, fresh store directory.");
        sb.AppendLine(CultureInfo.InvariantCulture, $"- Machine: {m.CpuModel}, {m.Cores} cores; {m.Os}; {m.DotNet}; nats-server {m.NatsServerVersion}; node {m.NodeVersion}; nats.js {m.NatsJsVersion}; load average at start {m.LoadAverageAtStart} (the machine is shared: compare ratios from the same run, not absolute figures across runs).");
        sb.AppendLine(CultureInfo.InvariantCulture, $"- Go: `{r.GoCommand ?? "n/a"}`{(r.GoUnavailable is null ? "" : " — " + r.GoUnavailable)}");
        sb.AppendLine(CultureInfo.InvariantCulture, $"- Ours: `{r.OursCommand ?? "n/a"}`{(r.OursUnavailable is null ? "" : " — not run: " + r.OursUnavailable)}");
        sb.AppendLine(CultureInfo.InvariantCulture, $"- {r.GeneratorNote}");
        sb.AppendLine("- Cells: median (min–max) over the repetitions; msg/s counts messages published (requests for request/reply); MB/s = msg/s x payload; Ratio = ours / Go median msg/s (> 1: ours faster). Latency P50 / P95 / P99 in µs, per request.");
        sb.AppendLine();
        foreach (var gen in r.Summaries.Select(s => s.Generator).Distinct())
        {
            sb.AppendLine(CultureInfo.InvariantCulture, $"## {gen switch { "raw" => "Raw-protocol generator (C#)", "mqtt" => "Raw MQTT 3.1.1 generator (C#)", _ => "Client library generator (" + gen + ")" }}");
            sb.AppendLine();
            sb.AppendLine("| Scenario | Payload | Go msg/s | Go MB/s | ours msg/s | ours MB/s | Ratio | Go P50/P95/P99 µs | ours P50/P95/P99 µs |");
            sb.AppendLine("|---|---|---|---|---|---|---|---|---|");
            foreach (var s in r.Summaries.Where(s => s.Generator == gen))
            {
                string ratio = s.Ratio is double x ? x.ToString("0.00", Inv) + "x" : "-";
                sb.AppendLine(CultureInfo.InvariantCulture,
                    $"| {s.Title} (`{s.Scenario}`) | {Payload(s.PayloadBytes)} | {Cell(s.Go, RateRange)} | {Cell(s.Go, MbS)} | {Cell(s.Ours, RateRange)} | {Cell(s.Ours, MbS)} | {ratio} | {(s.Latency ? Cell(s.Go, Lat) : "")} | {(s.Latency ? Cell(s.Ours, Lat) : "")} |");
            }

            sb.AppendLine();
        }

        AppendColdSteady(sb, r);
        AppendFootprint(sb, r);

        sb.AppendLine("## CPU and memory (medians over the timed windows)");
        sb.AppendLine();
        sb.AppendLine("CPU % = CPU seconds / wall seconds of the timed window (100% = one core; the machine has " + m.Cores.ToString(Inv) + "). ns/msg = CPU nanoseconds per message (request) of the timed part: less sensitive to other load on the machine than %. The raw and NATS.Net generators' CPU is this whole bench process (all threads); nats.js's is the node process. Server CPU and peak RSS (VmHWM) include the server's child processes: for ours, the gateways it supervises on the TLS, WebSocket and MQTT rows. The generator is not the bottleneck when its ns/msg is well below the server's.");
        sb.AppendLine();
        sb.AppendLine("| Scenario | Gen | Go server CPU % | Go server ns/msg | gen CPU % (Go runs) | gen ns/msg (Go runs) | Go peak RSS | ours server CPU % | ours server ns/msg | gen CPU % (ours runs) | ours peak RSS | Go deliveries/s | ours deliveries/s |");
        sb.AppendLine("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
        foreach (var s in r.Summaries)
        {
            sb.AppendLine(CultureInfo.InvariantCulture,
                $"| `{s.Scenario}` | {s.Generator} | {Cell(s.Go, x => F0(x.ServerCpuPercent))} | {Cell(s.Go, x => F0(x.ServerCpuNsPerMsg))} | {Cell(s.Go, x => F0(x.GeneratorCpuPercent))} | {Cell(s.Go, x => F0(x.GeneratorCpuNsPerMsg))} | {Cell(s.Go, x => Mb(x.PeakRssBytes))} | {Cell(s.Ours, x => F0(x.ServerCpuPercent))} | {Cell(s.Ours, x => F0(x.ServerCpuNsPerMsg))} | {Cell(s.Ours, x => F0(x.GeneratorCpuPercent))} | {Cell(s.Ours, x => Mb(x.PeakRssBytes))} | {Cell(s.Go, x => Rate(x.MedianDeliveriesPerSec))} | {Cell(s.Ours, x => Rate(x.MedianDeliveriesPerSec))} |");
        }

        var notes = r.Summaries
            .SelectMany(s => new[] { ("Go", s.Scenario, s.Go), ("ours", s.Scenario, s.Ours) })
            .Where(t => t.Item3?.Note is not null)
            .Select(t => $"- `{t.Scenario}` {t.Item1}: {t.Item3!.Status}: {t.Item3.Note}")
            .ToList();
        if (notes.Count > 0)
        {
            sb.AppendLine();
            sb.AppendLine("## Notes");
            sb.AppendLine();
            foreach (var n in notes)
            {
                sb.AppendLine(n.Replace("|", "/", StringComparison.Ordinal));
            }
        }

        return sb.ToString();
    }

    /// <summary>Each core row next to its cold twin ("-cold": no warm-up traffic on the fresh server process).</summary>
    private static void AppendColdSteady(StringBuilder sb, BenchReport r)
    {
        var byName = r.Summaries.ToDictionary(s => s.Scenario, StringComparer.Ordinal);
        var pairs = r.Summaries
            .Where(s => !s.Scenario.EndsWith("-cold", StringComparison.Ordinal) && byName.ContainsKey(s.Scenario + "-cold"))
            .Select(s => (Steady: s, Cold: byName[s.Scenario + "-cold"]))
            .ToList();
        if (pairs.Count == 0)
        {
            return;
        }

        sb.AppendLine("## Cold and steady state (ratio ours / Go, same run)");
        sb.AppendLine();
        sb.AppendLine("Cold: the timed part is the first traffic a freshly started server process sees (no warm-up). Steady state: the same workload after about a second of warm-up traffic on the same process. Every run starts a fresh process.");
        sb.AppendLine();
        sb.AppendLine("| Scenario | cold Go msg/s | cold ours msg/s | cold ratio | steady Go msg/s | steady ours msg/s | steady ratio |");
        sb.AppendLine("|---|---|---|---|---|---|---|");
        foreach (var (steady, cold) in pairs)
        {
            static string Ratio(double? x) => x is double v ? v.ToString("0.00", Inv) + "x" : "-";
            sb.AppendLine(CultureInfo.InvariantCulture,
                $"| {steady.Title} (`{steady.Scenario}`) | {Cell(cold.Go, x => Rate(x.MedianMsgPerSec))} | {Cell(cold.Ours, x => Rate(x.MedianMsgPerSec))} | {Ratio(cold.Ratio)} | {Cell(steady.Go, x => Rate(x.MedianMsgPerSec))} | {Cell(steady.Ours, x => Rate(x.MedianMsgPerSec))} | {Ratio(steady.Ratio)} |");
        }

        sb.AppendLine();
    }

    private static void AppendFootprint(StringBuilder sb, BenchReport r)
    {
        if (r.Footprint is not { Count: > 0 } sides)
        {
            return;
        }

        sb.AppendLine("## Start-up and memory footprint");
        sb.AppendLine();
        sb.AppendLine(CultureInfo.InvariantCulture, $"Median over {sides.Max(s => s.OkRuns)} fresh starts per server, alternating. Start-up: process spawn to the ports file (`--ports_file_dir`, what client test suites wait for; polled every ms without touching the port) and to the first accepted TCP connection (connecting once the ports file exists). Idle RSS: VmRSS 1 s after start. Per idle connection: {Footprint.Connections:N0} connections that CONNECT and PING (each gets its PONG) then idle; (VmRSS 1 s later − idle RSS) / {Footprint.Connections:N0}.");
        sb.AppendLine();
        sb.AppendLine("| Server | start-up to ports file ms (min–max) | start-up to accepting ms | idle RSS MB | KB per idle connection |");
        sb.AppendLine("|---|---|---|---|---|");
        foreach (var s in sides)
        {
            static string F1(double? v) => v is double x ? x.ToString("0.0", Inv) : "-";
            sb.AppendLine(CultureInfo.InvariantCulture,
                $"| {s.Server} | {F1(s.PortsFileMs)} ({F1(s.MinPortsFileMs)}–{F1(s.MaxPortsFileMs)}) | {F1(s.AcceptMs)} | {F1(s.IdleRssMb)} | {F1(s.PerConnectionKb)} |");
        }

        var errors = r.FootprintRuns?.Where(f => f.Status != "ok").ToList() ?? [];
        foreach (var e in errors)
        {
            sb.AppendLine();
            sb.AppendLine(CultureInfo.InvariantCulture, $"- {e.Server} rep {e.Rep}: {e.Status}: {e.Note}");
        }

        sb.AppendLine();
    }

    private static string Esc(string s) => s.Replace("&", "&amp;", StringComparison.Ordinal).Replace("<", "&lt;", StringComparison.Ordinal).Replace(">", "&gt;", StringComparison.Ordinal);

    /// <summary>Horizontal bars of ours/Go per scenario with a line at 1.0.</summary>
    public static string Svg(BenchReport r)
    {
        var rows = r.Summaries.ToList();
        const int rowH = 22;
        const int left = 260;
        const int width = 900;
        const int plotW = width - left - 90;
        int top = 50;
        int height = top + (rows.Count * rowH) + 40;
        double max = Math.Max(2.0, Math.Ceiling(rows.Select(s => s.Ratio ?? 0).DefaultIfEmpty(0).Max() * 2) / 2);
        double X(double v) => left + (v / max * plotW);
        var sb = new StringBuilder();
        sb.AppendLine(CultureInfo.InvariantCulture, $"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">");
        sb.AppendLine(CultureInfo.InvariantCulture, $"<rect width=\"{width}\" height=\"{height}\" fill=\"white\"/>");
        sb.AppendLine(CultureInfo.InvariantCulture, $"<text x=\"10\" y=\"20\" font-size=\"15\" font-weight=\"bold\">NatsBroker / nats-server throughput ratio ({Esc(r.Mode)} mode, median of {r.Reps}; &gt; 1 = ours faster)</text>");
        sb.AppendLine(CultureInfo.InvariantCulture, $"<text x=\"10\" y=\"38\" fill=\"#555\">{Esc(r.Machine.CpuModel)}, {r.Machine.Cores} cores; nats-server {Esc(r.Machine.NatsServerVersion)}</text>");
        for (double t = 0; t <= max + 1e-9; t += 0.5)
        {
            double x = X(t);
            string col = Math.Abs(t - 1) < 1e-9 ? "#000" : "#ddd";
            sb.AppendLine(CultureInfo.InvariantCulture, $"<line x1=\"{x:0.0}\" y1=\"{top - 5}\" x2=\"{x:0.0}\" y2=\"{top + (rows.Count * rowH)}\" stroke=\"{col}\"/>");
            sb.AppendLine(CultureInfo.InvariantCulture, $"<text x=\"{x:0.0}\" y=\"{top + (rows.Count * rowH) + 15}\" text-anchor=\"middle\" fill=\"#555\">{t:0.0}x</text>");
        }

        for (int i = 0; i < rows.Count; i++)
        {
            var s = rows[i];
            int y = top + (i * rowH);
            sb.AppendLine(CultureInfo.InvariantCulture, $"<text x=\"{left - 8}\" y=\"{y + 15}\" text-anchor=\"end\">{Esc(s.Scenario)} ({Esc(s.Generator)})</text>");
            if (s.Ratio is double v)
            {
                string fill = v >= 1 ? "#2e7d32" : "#c62828";
                sb.AppendLine(CultureInfo.InvariantCulture, $"<rect x=\"{left}\" y=\"{y + 3}\" width=\"{Math.Max(1, X(v) - left):0.0}\" height=\"{rowH - 6}\" fill=\"{fill}\"/>");
                sb.AppendLine(CultureInfo.InvariantCulture, $"<text x=\"{X(v) + 5:0.0}\" y=\"{y + 15}\">{v:0.00}x</text>");
            }
            else
            {
                string why = s.Ours is null ? "ours not run" : s.Ours.OkRuns == 0 ? s.Ours.Status : s.Go is null ? "Go not run" : s.Go.Status;
                sb.AppendLine(CultureInfo.InvariantCulture, $"<text x=\"{left + 5}\" y=\"{y + 15}\" fill=\"#777\">{Esc(why)}</text>");
            }
        }

        sb.AppendLine("</svg>");
        return sb.ToString();
    }
}
