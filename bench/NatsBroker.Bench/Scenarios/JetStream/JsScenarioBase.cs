namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>Common properties of the raw JetStream scenarios.</summary>
internal abstract class JsScenarioBase : IScenario
{
    protected JsScenarioBase(string name, string title, int payload, long defaultCount, bool latency)
    {
        Name = name;
        Title = title;
        PayloadBytes = payload;
        DefaultCount = defaultCount;
        ReportsLatency = latency;
    }

    public string Name { get; }

    public string Title { get; }

    public string Generator => "raw";

    public int PayloadBytes { get; }

    public bool NeedsJetStream => true;

    public bool ReportsLatency { get; }

    public long DefaultCount { get; }

    public abstract ScenarioResult Run(ScenarioContext ctx);

    protected static string StreamName(ScenarioContext ctx, string kind) => $"B{kind}{ctx.RunId}";

    protected static long Warm(long n, long min, long max) => Math.Clamp(n / 5, min, max);

    protected static void VerifyStreamCount(JsApi api, string stream, long expected)
    {
        long have = api.StreamMessages(stream);
        if (have != expected)
        {
            throw new InvalidDataException($"stream {stream} holds {have} messages, expected {expected}");
        }
    }
}
