using Microsoft.Extensions.Logging;

namespace NatsBroker.Hosting;

/// <summary>
/// Hands out <see cref="NatsLoggerProvider"/>'s loggers directly (the provider filters by level). The general
/// LoggerFactory wraps every logger in its own multi-provider logger, whose generic instantiations over our
/// [LoggerMessage] state structs cannot be precompiled (ReadyToRun) and were JIT-compiled at start-up (~35 methods
/// before listening, from DOTNET_JitDisasmSummary).
/// </summary>
public sealed class NatsLoggerFactory(NatsLoggerProvider provider) : ILoggerFactory
{
    public ILogger CreateLogger(string categoryName) => provider.CreateLogger(categoryName);

    public void AddProvider(ILoggerProvider provider) =>
        throw new NotSupportedException("the broker logs through its one NatsLoggerProvider");

    /// <summary>The provider is owned (and disposed) by whoever created it.</summary>
    public void Dispose()
    {
    }
}
