namespace NatsBroker.Configuration;

/// <summary>One problem found in a config file, at a position.</summary>
public sealed record ConfigError(SourcePosition? Position, string Message)
{
    public override string ToString() => Position is { } p ? $"{p}: {Message}" : Message;
}

/// <summary>
/// All errors (and warnings) found while reading a config file. The message lists warnings first, then errors,
/// one per line, like nats-server's processConfigErr (server/errors.go), e.g.
/// <c>/etc/nats.conf:3:1: unknown field "foo"</c>.
/// </summary>
public sealed class ConfigException : Exception
{
    public ConfigException(IReadOnlyList<ConfigError> errors, IReadOnlyList<ConfigError>? warnings = null)
        : base(Format(errors, warnings ?? []))
    {
        Errors = errors;
        Warnings = warnings ?? [];
    }

    public ConfigException(ConfigError error) : this([error]) { }

    public ConfigException(SourcePosition? position, string message) : this(new ConfigError(position, message)) { }

    public IReadOnlyList<ConfigError> Errors { get; }
    public IReadOnlyList<ConfigError> Warnings { get; }

    private static string Format(IReadOnlyList<ConfigError> errors, IReadOnlyList<ConfigError> warnings) =>
        string.Join('\n', warnings.Concat(errors).Select(e => e.ToString()));
}
