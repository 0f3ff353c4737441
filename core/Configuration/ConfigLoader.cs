namespace NatsBroker.Configuration;

/// <summary>
/// Reads a config file into <see cref="ServerOptions"/> (nats-server's Options.ProcessConfigFile).
/// Problems throw a <see cref="ConfigException"/> listing all of them; warnings (e.g. an integer
/// <c>ping_interval</c>) do not fail a load but are reported, and fail <c>-t</c> as in nats-server.
/// </summary>
public static class ConfigLoader
{
    /// <summary>Loads <paramref name="path"/> onto fresh defaults.</summary>
    public static ServerOptions Load(string path) => Load(path, out _);

    /// <summary>Loads <paramref name="path"/> onto fresh defaults and returns the warnings.</summary>
    public static ServerOptions Load(string path, out IReadOnlyList<ConfigError> warnings)
    {
        var opts = new ServerOptions();
        warnings = LoadInto(path, opts);
        return opts;
    }

    /// <summary>Loads <paramref name="path"/> on top of <paramref name="opts"/>; returns the warnings.</summary>
    public static IReadOnlyList<ConfigError> LoadInto(string path, ServerOptions opts)
    {
        var tree = ConfigParser.ParseFile(path);
        opts.ConfigFile = path;
        opts.ConfigDigest = ConfigDigest.Of(tree);
        return Apply(tree, opts);
    }

    /// <summary>
    /// Applies a parsed tree to <paramref name="opts"/>. Throws <see cref="ConfigException"/> when there are
    /// errors (the exception also carries the warnings); otherwise returns the warnings.
    /// </summary>
    public static IReadOnlyList<ConfigError> Apply(ConfigTree tree, ServerOptions opts)
    {
        var mapper = new OptionMapper(opts);
        mapper.Apply(tree);
        if (mapper.Errors.Count > 0)
            throw new ConfigException(mapper.Errors, mapper.Warnings);
        return mapper.Warnings;
    }
}
