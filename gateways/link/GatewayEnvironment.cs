using NatsBroker.Configuration;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// Where a gateway finds the core and its proxy key. A gateway started by the core (supervised) gets both in its
/// environment (the core's <c>GatewaySupervisor</c>: a key made for that run); one run by systemd reads them from
/// the shared config file: <c>unix_socket</c> and <c>protocol_gateways { seed_file }</c> (or its old name
/// <c>gateways</c>, which the core warns about at start-up: core/Configuration/OptionMapper.Gateways.cs).
/// </summary>
public sealed record GatewayEnvironment(string CoreSocket, string Seed)
{
    public const string SeedVariable = "NATSBROKER_GATEWAY_SEED", SocketVariable = "NATSBROKER_CORE_SOCKET";

    /// <summary>Resolves both from the environment, then the config tree; throws <see cref="ConfigException"/> when missing.</summary>
    public static GatewayEnvironment Resolve(ConfigTree tree)
    {
        ArgumentNullException.ThrowIfNull(tree);
        string? socket = Environment.GetEnvironmentVariable(SocketVariable);
        string? seed = Environment.GetEnvironmentVariable(SeedVariable);
        SourcePosition? seedPos = null;
        foreach (var e in tree.Root)
        {
            if (socket is null && e.Key.Equals("unix_socket", StringComparison.OrdinalIgnoreCase) && e.Value.Kind == ConfigValueKind.String)
                socket = e.Value.AsString();
            if (seed is null && IsBlockKey(e.Key) && e.Value.Kind == ConfigValueKind.Map
                && e.Value.AsMap().FirstOrDefault(f => f.Key.Equals("seed_file", StringComparison.OrdinalIgnoreCase)) is { } f
                && f.Value.Kind == ConfigValueKind.String)
            {
                seedPos = f.KeyPosition;
                try
                {
                    seed = File.ReadAllText(f.Value.AsString()).Trim();
                }
                catch (Exception ex) when (ex is IOException or UnauthorizedAccessException)
                {
                    throw new ConfigException(seedPos, $"{e.Key} seed_file: {ex.Message}");
                }
            }
        }
        if (string.IsNullOrEmpty(socket))
            throw new ConfigException(null, "a gateway needs \"unix_socket\": the core's Unix socket to connect to");
        if (string.IsNullOrEmpty(seed))
            throw new ConfigException(null, "a gateway needs its proxy nkey seed: \"protocol_gateways { seed_file: ... }\" (its public key in \"proxies { trusted }\")");
        return new GatewayEnvironment(socket, seed);
    }

    /// <summary>The block of our own keys for protocol gateways, under its name or the old one (docs/architecture.md "Glossary").</summary>
    public static bool IsBlockKey(string key) =>
        key.Equals("protocol_gateways", StringComparison.OrdinalIgnoreCase) || key.Equals("gateways", StringComparison.OrdinalIgnoreCase);
}
