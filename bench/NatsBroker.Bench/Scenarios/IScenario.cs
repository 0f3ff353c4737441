namespace NatsBroker.Bench.Scenarios;

/// <summary>
/// One benchmark workload. To add a scenario: write a class implementing this interface and add one line to
/// <see cref="ScenarioCatalog"/>.
/// </summary>
internal interface IScenario
{
    /// <summary>Unique short key used by --filter, e.g. "pubsub-16".</summary>
    string Name { get; }

    /// <summary>Human readable description, e.g. "pub/sub 1:1".</summary>
    string Title { get; }

    /// <summary>"raw" (C# raw-protocol generator), "mqtt" (C# raw MQTT generator), "nats.net" (NATS.Client.Core) or "nats.js".</summary>
    string Generator { get; }

    int PayloadBytes { get; }

    bool NeedsJetStream { get; }

    /// <summary>Whether P50/P95/P99 latency columns are meaningful.</summary>
    bool ReportsLatency { get; }

    /// <summary>Default message (or request) count in quick mode; the harness scales it per mode.</summary>
    long DefaultCount { get; }

    /// <summary>Extra server flags for this scenario (same for both servers), e.g. <c>--user</c>/<c>--pass</c>.</summary>
    IReadOnlyList<string> ServerArgs => [];

    /// <summary>Server flags for one side ("ours" or "go"); the same <see cref="ServerArgs"/> for both unless a scenario differs.</summary>
    IReadOnlyList<string> ServerArgsFor(string side) => ServerArgs;

    /// <summary>Runs once against the server in <paramref name="ctx"/>. Must call ctx.MarkStart/MarkEnd around the timed part.</summary>
    ScenarioResult Run(ScenarioContext ctx);
}
