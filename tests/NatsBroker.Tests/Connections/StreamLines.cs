using System.Text;

namespace NatsBroker.Tests.Connections;

/// <summary>Reads an in-memory client stream as text, with a timeout, for protocol exchanges without sockets.</summary>
internal sealed class StreamLines(Stream stream)
{
    private readonly StringBuilder _received = new();
    private readonly byte[] _buffer = new byte[64 * 1024];

    public Stream Stream => stream;

    public Task SendAsync(string text) => stream.WriteAsync(Encoding.ASCII.GetBytes(text)).AsTask();

    /// <summary>Reads until the text received so far contains <paramref name="expected"/>; returns it all and forgets it.</summary>
    public async Task<string> ReadUntilAsync(string expected, int timeoutMs = 5000)
    {
        using var cts = new CancellationTokenSource(timeoutMs);
        while (!_received.ToString().Contains(expected, StringComparison.Ordinal))
        {
            int n;
            try
            {
                n = await stream.ReadAsync(_buffer, cts.Token);
            }
            catch (OperationCanceledException)
            {
                throw new Xunit.Sdk.XunitException($"timed out waiting for {Escape(expected)}; got {Escape(_received.ToString())}");
            }
            if (n == 0) throw new Xunit.Sdk.XunitException($"EOF before {Escape(expected)}; got {Escape(_received.ToString())}");
            _received.Append(Encoding.ASCII.GetString(_buffer, 0, n));
        }
        var all = _received.ToString();
        _received.Clear();
        return all;
    }

    /// <summary>Reads until end of stream; returns what came before it.</summary>
    public async Task<string> ReadToEndAsync(int timeoutMs = 5000)
    {
        using var cts = new CancellationTokenSource(timeoutMs);
        while (true)
        {
            int n;
            try
            {
                n = await stream.ReadAsync(_buffer, cts.Token);
            }
            catch (OperationCanceledException)
            {
                throw new Xunit.Sdk.XunitException($"timed out waiting for EOF; got {Escape(_received.ToString())}");
            }
            if (n == 0) break;
            _received.Append(Encoding.ASCII.GetString(_buffer, 0, n));
        }
        var all = _received.ToString();
        _received.Clear();
        return all;
    }

    private static string Escape(string s) => s.Replace("\r", "\\r", StringComparison.Ordinal).Replace("\n", "\\n", StringComparison.Ordinal);
}
