namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// Theory data for tests that run against both servers. A test that may meet a missing nats-server is a
/// <c>[SkippableTheory]</c> and calls <see cref="Prerequisites.RequireServer"/> first:
/// <code>
/// [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
/// public async Task X(ServerKind kind) { Prerequisites.RequireServer(kind, output); ... }
/// </code>
/// </summary>
public static class Servers
{
    public static TheoryData<ServerKind> Both => new() { ServerKind.Ours, ServerKind.Go };
}
