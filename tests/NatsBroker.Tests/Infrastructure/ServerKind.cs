namespace NatsBroker.Tests.Infrastructure;

/// <summary>Which server a test targets: our broker (NatsBroker.dll) or the Go reference nats-server.</summary>
public enum ServerKind
{
    Ours,
    Go,
}
