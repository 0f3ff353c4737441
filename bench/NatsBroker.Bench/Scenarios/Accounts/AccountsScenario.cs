namespace NatsBroker.Bench.Scenarios.Accounts;

/// <summary>
/// A raw-generator workload run across accounts (issue 14's bench: "cross-account service import request/reply and
/// stream import fan-out"): both servers start on the same <c>accounts {}</c> file, and each connection of the inner
/// scenario logs in as the user its name maps to, so its traffic crosses an export/import.
/// </summary>
internal sealed class AccountsScenario(IScenario inner, string name, string config, Func<string, string> userFor) : IScenario
{
    private readonly Lazy<string> _configFile = new(() => BenchAccounts.WriteConfig(name, config));

    public string Name => name;
    public string Title => inner.Title + ", across accounts";
    public string Generator => inner.Generator;
    public int PayloadBytes => inner.PayloadBytes;
    public bool NeedsJetStream => false;
    public bool ReportsLatency => inner.ReportsLatency;
    public long DefaultCount => inner.DefaultCount;

    public IReadOnlyList<string> ServerArgs => ["-c", _configFile.Value];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        // Users are named after their accounts, with the same password (BenchAccounts.User).
        ctx.UseCredentials(connection => BenchAccounts.Password(userFor(connection)));
        return inner.Run(ctx);
    }
}
