using System.Diagnostics;
using System.Text.Json;
using System.Text.Json.Nodes;
using NatsBroker.Bench.Infra;

namespace NatsBroker.Bench.Scenarios.NatsJs;

/// <summary>
/// Runs one workload through the official nats.js client (bench/js/bench.mjs) in a node process: what a
/// client-library user sees. It stands in for NATS.Net, which this machine's NuGet mirror does not carry.
/// The harness samples the server's CPU on the script's "MARK start"/"MARK end" lines; the generator's CPU is the
/// node process's own process.cpuUsage() over the same window.
/// </summary>
internal sealed class NatsJsScenario : IScenario
{
    private readonly JsonObject _config;

    public NatsJsScenario(string name, string title, string kind, int payload, long defaultCount, bool latency = false, bool jetStream = false, JsonObject? extra = null)
    {
        Name = name;
        Title = title;
        PayloadBytes = payload;
        DefaultCount = defaultCount;
        ReportsLatency = latency;
        NeedsJetStream = jetStream;
        _config = extra ?? [];
        _config["kind"] = kind;
        _config["size"] = payload;
    }

    public string Name { get; }

    public string Title { get; }

    public string Generator => "nats.js";

    public int PayloadBytes { get; }

    public bool NeedsJetStream { get; }

    public bool ReportsLatency { get; }

    public long DefaultCount { get; }

    public ScenarioResult Run(ScenarioContext ctx)
    {
        var cfg = (JsonObject)_config.DeepClone();
        cfg["url"] = ctx.Url;
        cfg["msgs"] = ctx.Count;
        cfg["runId"] = ctx.RunId;
        cfg["timeoutMs"] = (long)ctx.Timeout.TotalMilliseconds - 2000;
        string script = Path.Combine(NatsJsSetup.ScriptDir(ctx.RepoRoot), "bench.mjs");
        var psi = new ProcessStartInfo("node")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
            WorkingDirectory = NatsJsSetup.ScriptDir(ctx.RepoRoot),
        };
        psi.ArgumentList.Add(script);
        psi.ArgumentList.Add(cfg.ToJsonString());
        using var p = Process.Start(psi) ?? throw new InvalidOperationException("cannot start node");
        using var killer = new ProcessKiller(p);
        ctx.Track(killer);
        var stderr = p.StandardError.ReadToEndAsync();
        string? result = null;
        while (p.StandardOutput.ReadLine() is { } line)
        {
            if (line == "MARK start")
            {
                ctx.MarkServerStart();
            }
            else if (line == "MARK end")
            {
                ctx.MarkServerEnd();
            }
            else if (line.StartsWith("RESULT ", StringComparison.Ordinal))
            {
                result = line[7..];
            }
        }

        if (!p.WaitForExit(5000))
        {
            throw new TimeoutException("node did not exit");
        }

        ctx.ThrowIfFailed();
        if (result is null)
        {
            string err = stderr.Wait(2000) ? stderr.Result : "";
            throw new InvalidOperationException($"nats.js run gave no result (exit {p.ExitCode}): {err.Trim().Split('\n').LastOrDefault()}");
        }

        using var doc = JsonDocument.Parse(result);
        var e = doc.RootElement;
        if (!e.GetProperty("ok").GetBoolean())
        {
            string msg = e.TryGetProperty("error", out var m) ? m.GetString() ?? "" : "";
            if (e.TryGetProperty("notSupported", out var ns) && ns.GetBoolean())
            {
                throw new NotSupportedByServerException(msg);
            }

            throw new InvalidOperationException("nats.js: " + msg);
        }

        var r = ctx.Result;
        r.Messages = e.GetProperty("msgs").GetInt64();
        r.Deliveries = e.TryGetProperty("deliveries", out var d) ? d.GetInt64() : 0;
        r.ElapsedSeconds = e.GetProperty("elapsedNs").GetDouble() / 1e9;
        r.GeneratorCpuSeconds = e.GetProperty("cpuUs").GetDouble() / 1e6;
        if (e.TryGetProperty("p50Us", out var p50) && p50.ValueKind == JsonValueKind.Number)
        {
            r.P50Us = p50.GetDouble();
            r.P95Us = e.GetProperty("p95Us").GetDouble();
            r.P99Us = e.GetProperty("p99Us").GetDouble();
        }

        return r;
    }

    private sealed class ProcessKiller(Process p) : IDisposable
    {
        public void Dispose()
        {
            try
            {
                if (!p.HasExited)
                {
                    p.Kill(entireProcessTree: true);
                }
            }
            catch (InvalidOperationException)
            {
            }
        }
    }
}
