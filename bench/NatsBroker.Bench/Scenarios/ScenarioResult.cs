namespace NatsBroker.Bench.Scenarios;

internal enum RunStatus
{
    Ok,
    NotSupported,
    Error,
}

/// <summary>Outcome of one run of one scenario against one server.</summary>
internal sealed class ScenarioResult
{
    public RunStatus Status { get; set; } = RunStatus.Ok;

    public string? Note { get; set; }

    /// <summary>Messages (or requests) in the timed part; msg/s = Messages / ElapsedSeconds.</summary>
    public long Messages { get; set; }

    /// <summary>Messages delivered to subscribers in the timed part (fan-out counts each copy).</summary>
    public long Deliveries { get; set; }

    public double ElapsedSeconds { get; set; }

    public double? P50Us { get; set; }

    public double? P95Us { get; set; }

    public double? P99Us { get; set; }

    /// <summary>Load generator CPU seconds in the timed window (bench process, or the node process).</summary>
    public double GeneratorCpuSeconds { get; set; } = double.NaN;

    /// <summary>Server CPU seconds in the timed window.</summary>
    public double ServerCpuSeconds { get; set; } = double.NaN;

    /// <summary>Wall seconds of the CPU sampling window (slightly longer than ElapsedSeconds).</summary>
    public double CpuWindowSeconds { get; set; } = double.NaN;

    public long ServerPeakRssBytes { get; set; } = -1;

    public double MsgPerSec => ElapsedSeconds > 0 ? Messages / ElapsedSeconds : 0;

    public static ScenarioResult NotSupported(string why) => new() { Status = RunStatus.NotSupported, Note = why };

    public static ScenarioResult Failed(string why) => new() { Status = RunStatus.Error, Note = why };
}

/// <summary>Thrown by a scenario when the server answers that a feature is unsupported (no responders, timeout, error).</summary>
internal sealed class NotSupportedByServerException : Exception
{
    public NotSupportedByServerException(string message)
        : base(message)
    {
    }

    public NotSupportedByServerException()
    {
    }

    public NotSupportedByServerException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
