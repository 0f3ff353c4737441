using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>A logger (and factory) that keeps every formatted line, for tests that assert what the broker logs.</summary>
public sealed class CapturingLogger : ILoggerFactory, ILoggerProvider, ILogger
{
    public ConcurrentQueue<string> Lines { get; } = new();
    public ILogger CreateLogger(string categoryName) => this;
    public void AddProvider(ILoggerProvider provider) { }
    public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
    public bool IsEnabled(LogLevel logLevel) => true;
    public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter) =>
        Lines.Enqueue(formatter(state, exception));
    public void Dispose() { }
}
