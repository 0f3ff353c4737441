namespace NatsBroker.Tests.Gateways;

/// <summary>Gateway tests start a core and a terminator process each: run them one at a time.</summary>
[CollectionDefinition("Gateways", DisableParallelization = true)]
public sealed class GatewaysCollection;
