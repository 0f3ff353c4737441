namespace NatsBroker.Bench.Infra;

/// <summary>One repetition of one scenario against one server (serialized to JSON as is).</summary>
internal sealed record RunRecord(
    string Scenario,
    string Generator,
    string Server,
    int Rep,
    string Status,
    string? Note,
    long Count,
    long Messages,
    long Deliveries,
    double? ElapsedSeconds,
    double? MsgPerSec,
    double? MBPerSec,
    double? DeliveriesPerSec,
    double? P50Us,
    double? P95Us,
    double? P99Us,
    double? ServerCpuSeconds,
    double? ServerCpuPercent,
    double? GeneratorCpuSeconds,
    double? GeneratorCpuPercent,
    double? CpuWindowSeconds,
    double? ServerCpuNsPerMsg,
    double? GeneratorCpuNsPerMsg,
    long? ServerPeakRssBytes)
{
    /// <summary>Wall time of the whole run: server start, connections, warm-up, timed part, checks, stop.</summary>
    public double WallSeconds { get; init; }
}

/// <summary>Medians over the repetitions of one scenario on one server.</summary>
internal sealed record SideSummary(
    string Status,
    string? Note,
    int OkRuns,
    double? MedianMsgPerSec,
    double? MinMsgPerSec,
    double? MaxMsgPerSec,
    double? MedianMBPerSec,
    double? MedianDeliveriesPerSec,
    double? P50Us,
    double? P95Us,
    double? P99Us,
    double? ServerCpuPercent,
    double? GeneratorCpuPercent,
    double? ServerCpuNsPerMsg,
    double? GeneratorCpuNsPerMsg,
    long? PeakRssBytes);

internal sealed record ScenarioSummary(
    string Scenario,
    string Title,
    string Generator,
    int PayloadBytes,
    bool Latency,
    SideSummary? Go,
    SideSummary? Ours,
    double? Ratio);

internal sealed record BenchReport(
    string Mode,
    DateTimeOffset StartedUtc,
    double DurationSeconds,
    int Reps,
    MachineInfo Machine,
    string? GoCommand,
    string? OursCommand,
    string? OursUnavailable,
    string? GoUnavailable,
    string GeneratorNote,
    IReadOnlyList<ScenarioSummary> Summaries,
    IReadOnlyList<RunRecord> Runs,
    IReadOnlyList<FootprintSide>? Footprint = null,
    IReadOnlyList<FootprintSample>? FootprintRuns = null);
