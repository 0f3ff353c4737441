using System.Diagnostics;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Monitoring.Metrics;

/// <summary>One parsed sample: its name, labels and value.</summary>
public sealed record MetricSample(string Name, IReadOnlyDictionary<string, string> Labels, double Value);

/// <summary>
/// Parses a /metrics body with the Prometheus project's Python client (Debian's python3-prometheus-client, strict
/// parsers for the text format 0.0.4 and OpenMetrics 1.0) through parse_metrics.py beside this file. A body the parser
/// refuses fails the test with the parser's message.
/// </summary>
public static class PrometheusParser
{
    private const string Python = "/usr/bin/python3";

    public static void Require()
    {
        if (!File.Exists(Python)) Prerequisites.Missing($"{Python} is missing (apt install python3-prometheus-client)");
        var (code, _, error) = Run(["-c", "import prometheus_client.openmetrics.parser"], "");
        if (code != 0) Prerequisites.Missing("python3-prometheus-client is not installed (apt install python3-prometheus-client): " + error.Trim());
    }

    /// <summary>Family name -> (type, samples).</summary>
    public static Dictionary<string, (string Type, List<MetricSample> Samples)> Parse(string body, bool openMetrics)
    {
        var script = Path.Combine(AppContext.BaseDirectory, "Monitoring", "Metrics", "parse_metrics.py");
        var (code, output, error) = Run([script, openMetrics ? "openmetrics" : "text"], body);
        Assert.True(code == 0, $"the Prometheus parser refused the body: {error}");
        using var doc = JsonDocument.Parse(output);
        var result = new Dictionary<string, (string, List<MetricSample>)>(StringComparer.Ordinal);
        foreach (var family in doc.RootElement.EnumerateObject())
        {
            var samples = family.Value.GetProperty("samples").EnumerateArray().Select(s => new MetricSample(
                s.GetProperty("name").GetString()!,
                s.GetProperty("labels").EnumerateObject().ToDictionary(l => l.Name, l => l.Value.GetString()!, StringComparer.Ordinal),
                s.GetProperty("value").GetDouble())).ToList();
            result[family.Name] = (family.Value.GetProperty("type").GetString()!, samples);
        }
        return result;
    }

    private static (int Code, string Output, string Error) Run(IEnumerable<string> args, string input)
    {
        var psi = new ProcessStartInfo(Python)
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var a in args) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        p.StandardInput.Write(input);
        p.StandardInput.Close();
        Assert.True(p.WaitForExit(30_000), "the Prometheus parser did not finish in 30 s");
        return (p.ExitCode, stdout.Result, stderr.Result);
    }
}
