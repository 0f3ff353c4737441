using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace NatsBroker.Hosting;

/// <summary>
/// Logs in nats-server's layout: <c>[pid] 2006/01/02 15:04:05.000000 [INF] message</c> (with -T=false the time is
/// omitted, and under systemd (JOURNAL_STREAM set) the time and pid are left to the journal). Levels map
/// INF/DBG/TRC/WRN/ERR/FTL. Writes to stderr or to the log file, one line per call, serialised by a lock.
/// </summary>
public sealed class NatsLoggerProvider : ILoggerProvider
{
    private readonly TextWriter _writer;
    private readonly bool _logtime;
    private readonly bool _utc;
    private readonly bool _journal;
    private readonly LogLevel _minLevel;
    private readonly Lock _lock = new();
    private readonly ConcurrentDictionary<string, NatsLogger> _loggers = new();
    private readonly string _pidPrefix = $"[{Environment.ProcessId}] ";

    public NatsLoggerProvider(LogLevel minLevel, bool logtime, bool utc, string? logFile)
    {
        _minLevel = minLevel;
        _logtime = logtime;
        _utc = utc;
        _journal = logFile is null && Environment.GetEnvironmentVariable("JOURNAL_STREAM") is not null;
        _writer = logFile is null
            ? Console.Error
            : new StreamWriter(new FileStream(logFile, FileMode.Append, FileAccess.Write, FileShare.ReadWrite)) { AutoFlush = true };
    }

    public ILogger CreateLogger(string categoryName) => _loggers.GetOrAdd(categoryName, _ => new NatsLogger(this));

    public void Dispose()
    {
        if (!ReferenceEquals(_writer, Console.Error)) _writer.Dispose();
    }

    private void Write(LogLevel level, string message, Exception? ex)
    {
        string tag = level switch
        {
            LogLevel.Trace => "[TRC]",
            LogLevel.Debug => "[DBG]",
            LogLevel.Information => "[INF]",
            LogLevel.Warning => "[WRN]",
            LogLevel.Error => "[ERR]",
            _ => "[FTL]",
        };
        string prefix = _journal ? "" : _pidPrefix;
        if (_logtime && !_journal)
        {
            var now = _utc ? DateTime.UtcNow : DateTime.Now;
            prefix += now.ToString("yyyy/MM/dd HH:mm:ss.ffffff ", System.Globalization.CultureInfo.InvariantCulture);
        }
        lock (_lock)
        {
            foreach (var line in message.Split('\n'))
            {
                _writer.Write(prefix);
                _writer.Write(tag);
                _writer.Write(' ');
                _writer.WriteLine(line);
            }
            if (ex is not null) _writer.WriteLine(ex.ToString());
            _writer.Flush();
        }
    }

    private sealed class NatsLogger(NatsLoggerProvider provider) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state) where TState : notnull => null;
        public bool IsEnabled(LogLevel logLevel) => logLevel >= provider._minLevel && logLevel != LogLevel.None;
        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (!IsEnabled(logLevel)) return;
            provider.Write(logLevel, formatter(state, exception), exception);
        }
    }
}
