using System.Diagnostics;
using System.Globalization;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>A MSG or HMSG received by <see cref="RawClient"/>.</summary>
public sealed record NatsMessage(string Op, string Subject, string Sid, string? ReplyTo, byte[]? Headers, byte[] Payload)
{
    public string PayloadText => Encoding.UTF8.GetString(Payload);

    public string? HeaderText => Headers is null ? null : Encoding.UTF8.GetString(Headers);
}

/// <summary>
/// Raw NATS protocol client over TCP or a Unix domain socket. A background loop receives into a buffer;
/// reads wait on that buffer with timeouts, so a read never blocks a test forever and the connection's
/// closing is observed (<see cref="IsClosed"/>, <see cref="ExpectClosedAsync"/>).
/// </summary>
public sealed class RawClient : IAsyncDisposable
{
    public static readonly TimeSpan DefaultTimeout = TimeSpan.FromSeconds(5);
    private static readonly byte[] Crlf = "\r\n"u8.ToArray();

    private readonly Socket _socket;
    private readonly object _gate = new();
    private readonly CancellationTokenSource _cts = new();
    private byte[] _buf = new byte[64 * 1024];
    private int _start;
    private int _end;
    private bool _closed;
    private string? _closeReason;
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private Task? _receiveLoop;

    private RawClient(Socket socket) => _socket = socket;

    /// <summary>The INFO the server sent first (after <see cref="ReadInfoAsync"/> or a handshake).</summary>
    public JsonElement? Info { get; private set; }

    /// <summary>True once the peer closed (EOF or reset) the connection.</summary>
    public bool IsClosed
    {
        get
        {
            lock (_gate)
            {
                return _closed;
            }
        }
    }

    public string? CloseReason
    {
        get
        {
            lock (_gate)
            {
                return _closeReason;
            }
        }
    }

    public static Task<RawClient> ConnectAsync(ServerProcess server, int? receiveBufferSize = null) =>
        ConnectAsync(server.Host, server.Port, receiveBufferSize);

    public static async Task<RawClient> ConnectAsync(string host, int port, int? receiveBufferSize = null)
    {
        var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        if (receiveBufferSize is { } size)
        {
            socket.ReceiveBufferSize = size;
        }

        using var cts = new CancellationTokenSource(DefaultTimeout);
        try
        {
            await socket.ConnectAsync(host, port, cts.Token).ConfigureAwait(false);
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        return Started(socket);
    }

    /// <summary>Connects to a Unix domain socket (our broker's <c>--unix_socket</c> listener).</summary>
    public static async Task<RawClient> ConnectUnixAsync(string path)
    {
        var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        using var cts = new CancellationTokenSource(DefaultTimeout);
        try
        {
            await socket.ConnectAsync(new UnixDomainSocketEndPoint(path), cts.Token).ConfigureAwait(false);
        }
        catch
        {
            socket.Dispose();
            throw;
        }

        return Started(socket);
    }

    /// <summary>Connects and completes a handshake: INFO, CONNECT <paramref name="connectJson"/>, PING, PONG.</summary>
    public static async Task<RawClient> ConnectAndHandshakeAsync(ServerProcess server, string connectJson = """{"verbose":false,"pedantic":false}""")
    {
        var c = await ConnectAsync(server).ConfigureAwait(false);
        await c.HandshakeAsync(connectJson).ConfigureAwait(false);
        return c;
    }

    private static RawClient Started(Socket socket)
    {
        var c = new RawClient(socket);
        c._receiveLoop = Task.Run(c.ReceiveLoopAsync);
        return c;
    }

    private async Task ReceiveLoopAsync()
    {
        var chunk = new byte[64 * 1024];
        string reason;
        try
        {
            while (true)
            {
                var n = await _socket.ReceiveAsync(chunk, SocketFlags.None, _cts.Token).ConfigureAwait(false);
                if (n == 0)
                {
                    reason = "EOF";
                    break;
                }

                lock (_gate)
                {
                    EnsureCapacity(n);
                    chunk.AsSpan(0, n).CopyTo(_buf.AsSpan(_end));
                    _end += n;
                    Signal();
                }
            }
        }
        catch (OperationCanceledException)
        {
            reason = "disposed";
        }
        catch (SocketException e)
        {
            reason = e.SocketErrorCode.ToString();
        }
        catch (ObjectDisposedException)
        {
            reason = "disposed";
        }

        lock (_gate)
        {
            _closed = true;
            _closeReason = reason;
            Signal();
        }
    }

    private void EnsureCapacity(int more)
    {
        if (_end + more <= _buf.Length)
        {
            return;
        }

        var live = _end - _start;
        if (live + more <= _buf.Length && _start > 0)
        {
            Buffer.BlockCopy(_buf, _start, _buf, 0, live);
        }
        else
        {
            var nb = new byte[Math.Max(_buf.Length * 2, live + more)];
            Buffer.BlockCopy(_buf, _start, nb, 0, live);
            _buf = nb;
        }

        _start = 0;
        _end = live;
    }

    private void Signal()
    {
        var old = _changed;
        _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        old.TrySetResult();
    }

    private delegate bool ReadOnlySpanFunc<T>(ReadOnlySpan<byte> data, out int consumed, out T result);

    /// <summary>
    /// Waits until <paramref name="tryTake"/> (called under the lock with the unread bytes) takes a value (true),
    /// the connection closes (false), or the timeout expires (TimeoutException).
    /// </summary>
    private async Task<(bool Ok, T Result)> WaitAsync<T>(ReadOnlySpanFunc<T> tryTake, TimeSpan? timeout, string what)
    {
        var limit = timeout ?? DefaultTimeout;
        var sw = Stopwatch.StartNew();
        while (true)
        {
            Task changed;
            lock (_gate)
            {
                if (tryTake(_buf.AsSpan(_start, _end - _start), out var consumed, out var result))
                {
                    _start += consumed;
                    return (true, result);
                }

                if (_closed)
                {
                    return (false, default!);
                }

                changed = _changed.Task;
            }

            var remaining = limit - sw.Elapsed;
            if (remaining <= TimeSpan.Zero)
            {
                throw new TimeoutException($"timed out after {limit.TotalMilliseconds:0} ms waiting for {what}; unread: {Escape(PeekUnread())}");
            }

            await Task.WhenAny(changed, Task.Delay(remaining)).ConfigureAwait(false);
        }
    }

    /// <summary>The bytes received and not yet read (does not consume them).</summary>
    public byte[] PeekUnread()
    {
        lock (_gate)
        {
            return _buf.AsSpan(_start, _end - _start).ToArray();
        }
    }

    // ---------------------------------------------------------------- sending

    /// <summary>Sends <paramref name="text"/> exactly (no CRLF appended).</summary>
    public Task SendAsync(string text) => SendBytesAsync(Encoding.UTF8.GetBytes(text));

    /// <summary>Sends <paramref name="line"/> + CRLF.</summary>
    public Task SendLineAsync(string line) => SendAsync(line + "\r\n");

    public async Task SendBytesAsync(ReadOnlyMemory<byte> data)
    {
        using var cts = new CancellationTokenSource(DefaultTimeout * 2);
        var sent = 0;
        while (sent < data.Length)
        {
            sent += await _socket.SendAsync(data[sent..], SocketFlags.None, cts.Token).ConfigureAwait(false);
        }
    }

    /// <summary>Tries to send; returns false instead of throwing when the peer already closed.</summary>
    public async Task<bool> TrySendAsync(ReadOnlyMemory<byte> data)
    {
        try
        {
            await SendBytesAsync(data).ConfigureAwait(false);
            return true;
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException or OperationCanceledException)
        {
            return false;
        }
    }

    /// <summary>Sends <paramref name="data"/> in pieces cut at <paramref name="cutPoints"/> (byte offsets), pausing between pieces.</summary>
    public async Task SendSplitAsync(ReadOnlyMemory<byte> data, IEnumerable<int> cutPoints, TimeSpan delay)
    {
        var prev = 0;
        foreach (var cut in cutPoints.Where(c => c > 0 && c < data.Length).Distinct().Order())
        {
            await SendBytesAsync(data[prev..cut]).ConfigureAwait(false);
            prev = cut;
            if (delay > TimeSpan.Zero)
            {
                await Task.Delay(delay).ConfigureAwait(false);
            }
        }

        await SendBytesAsync(data[prev..]).ConfigureAwait(false);
    }

    /// <summary>Sends <paramref name="data"/> in chunks of <paramref name="chunkSize"/> bytes (1 = byte by byte), pausing between chunks.</summary>
    public Task SendChunkedAsync(ReadOnlyMemory<byte> data, int chunkSize, TimeSpan delay) =>
        SendSplitAsync(data, Enumerable.Range(1, Math.Max(0, (data.Length - 1) / chunkSize)).Select(i => i * chunkSize), delay);

    // ---------------------------------------------------------------- reading

    /// <summary>Reads one CRLF-terminated line (without the CRLF). Returns null when the connection closed first.</summary>
    public async Task<string?> ReadLineAsync(TimeSpan? timeout = null)
    {
        var (ok, line) = await WaitAsync<string>(TryTakeLine, timeout, "a line").ConfigureAwait(false);
        return ok ? line : null;
    }

    private static bool TryTakeLine(ReadOnlySpan<byte> data, out int consumed, out string line)
    {
        var i = data.IndexOf(Crlf);
        if (i < 0)
        {
            consumed = 0;
            line = "";
            return false;
        }

        line = Encoding.UTF8.GetString(data[..i]);
        consumed = i + 2;
        return true;
    }

    /// <summary>Reads the next line and asserts it equals <paramref name="expected"/>.</summary>
    public async Task ExpectLineAsync(string expected, TimeSpan? timeout = null)
    {
        var line = await ReadLineAsync(timeout).ConfigureAwait(false);
        if (line is null)
        {
            throw new Xunit.Sdk.XunitException($"expected \"{expected}\" but the connection closed ({CloseReason})");
        }

        Assert.Equal(expected, line);
    }

    /// <summary>Reads the INFO line and parses its JSON.</summary>
    public async Task<JsonElement> ReadInfoAsync(TimeSpan? timeout = null)
    {
        var line = await ReadLineAsync(timeout).ConfigureAwait(false)
            ?? throw new Xunit.Sdk.XunitException($"connection closed before INFO ({CloseReason})");
        Assert.StartsWith("INFO ", line, StringComparison.Ordinal);
        using var doc = JsonDocument.Parse(line[5..]);
        Info = doc.RootElement.Clone();
        return Info.Value;
    }

    /// <summary>INFO, CONNECT, PING; expects (optionally +OK then) PONG.</summary>
    public async Task HandshakeAsync(string connectJson = """{"verbose":false,"pedantic":false}""")
    {
        await ReadInfoAsync().ConfigureAwait(false);
        await SendAsync($"CONNECT {connectJson}\r\nPING\r\n").ConfigureAwait(false);
        var before = await ReadUntilPongAsync().ConfigureAwait(false);
        Assert.All(before, l => Assert.Equal("+OK", l));
    }

    /// <summary>Sends PING and returns the lines received before the PONG (protocol lines; payloads of MSGs are returned as lines too).</summary>
    public async Task<List<string>> PingAsync(TimeSpan? timeout = null)
    {
        await SendAsync("PING\r\n").ConfigureAwait(false);
        return await ReadUntilPongAsync(timeout).ConfigureAwait(false);
    }

    /// <summary>Reads lines until PONG; returns the lines before it. Fails when the connection closes first.</summary>
    public async Task<List<string>> ReadUntilPongAsync(TimeSpan? timeout = null)
    {
        var lines = new List<string>();
        var sw = Stopwatch.StartNew();
        var limit = timeout ?? DefaultTimeout;
        while (true)
        {
            var line = await ReadLineAsync(limit - sw.Elapsed > TimeSpan.Zero ? limit - sw.Elapsed : TimeSpan.FromMilliseconds(1)).ConfigureAwait(false)
                ?? throw new Xunit.Sdk.XunitException($"connection closed ({CloseReason}) before PONG; got: {string.Join(" | ", lines)}");
            if (line == "PONG")
            {
                return lines;
            }

            lines.Add(line);
        }
    }

    /// <summary>
    /// Reads a MSG or HMSG (with payload). Server PINGs are answered and skipped; PONGs are skipped (and counted in
    /// <see cref="PongsSkipped"/>) when <paramref name="skipPongs"/>. Anything else fails the test. Returns null when closed.
    /// </summary>
    public async Task<NatsMessage?> ReadMessageAsync(TimeSpan? timeout = null, bool skipPongs = false)
    {
        var sw = Stopwatch.StartNew();
        var limit = timeout ?? DefaultTimeout;
        while (true)
        {
            var remaining = limit - sw.Elapsed;
            var (ok, msg) = await WaitAsync<NatsMessage?>(skipPongs ? TryTakeMessageSkippingPongs : TryTakeMessage, remaining > TimeSpan.Zero ? remaining : TimeSpan.FromMilliseconds(1), "MSG/HMSG").ConfigureAwait(false);
            if (!ok)
            {
                return null;
            }

            if (msg is null)
            {
                // A server PING was consumed.
                await TrySendAsync("PONG\r\n"u8.ToArray()).ConfigureAwait(false);
                continue;
            }

            return msg;
        }
    }

    /// <summary>Reads a message and asserts it is one; fails on anything else (e.g. -ERR) or on close.</summary>
    public async Task<NatsMessage> ExpectMessageAsync(TimeSpan? timeout = null, bool skipPongs = false) =>
        await ReadMessageAsync(timeout, skipPongs).ConfigureAwait(false)
        ?? throw new Xunit.Sdk.XunitException($"connection closed ({CloseReason}) while expecting a message");

    /// <summary>PONG lines skipped by <see cref="ReadMessageAsync"/> with skipPongs.</summary>
    public int PongsSkipped { get; private set; }

    private bool TryTakeMessageSkippingPongs(ReadOnlySpan<byte> data, out int consumed, out NatsMessage? msg)
    {
        while (data.StartsWith("PONG\r\n"u8))
        {
            data = data[6..];
            _start += 6;
            PongsSkipped++;
        }

        return TryTakeMessage(data, out consumed, out msg);
    }

    private static bool TryTakeMessage(ReadOnlySpan<byte> data, out int consumed, out NatsMessage? msg)
    {
        consumed = 0;
        msg = null;
        var i = data.IndexOf(Crlf);
        if (i < 0)
        {
            return false;
        }

        var line = Encoding.UTF8.GetString(data[..i]);
        if (line == "PING")
        {
            consumed = i + 2;
            return true;
        }

        var parts = line.Split(' ', StringSplitOptions.RemoveEmptyEntries);
        var op = parts.Length > 0 ? parts[0] : "";
        if (op is not ("MSG" or "HMSG"))
        {
            throw new Xunit.Sdk.XunitException($"expected MSG/HMSG, got: {line}");
        }

        var isH = op == "HMSG";
        var n = parts.Length;
        // MSG subj sid [reply] size ; HMSG subj sid [reply] hdrsize totalsize
        var fixedCount = isH ? 5 : 4;
        var reply = n == fixedCount + 1 ? parts[3] : null;
        var total = int.Parse(parts[^1], CultureInfo.InvariantCulture);
        var hdr = isH ? int.Parse(parts[^2], CultureInfo.InvariantCulture) : 0;
        var need = i + 2 + total + 2;
        if (data.Length < need)
        {
            return false;
        }

        var body = data.Slice(i + 2, total);
        msg = new NatsMessage(op, parts[1], parts[2], reply, isH ? body[..hdr].ToArray() : null, body[hdr..].ToArray());
        consumed = need;
        return true;
    }

    /// <summary>Reads a line and asserts it is <c>-ERR '<paramref name="text"/>'</c>.</summary>
    public Task ExpectErrAsync(string text, TimeSpan? timeout = null) => ExpectLineAsync($"-ERR '{text}'", timeout);

    /// <summary>Waits until the server closes the connection; returns the lines received meanwhile.</summary>
    public async Task<List<string>> ExpectClosedAsync(TimeSpan? timeout = null)
    {
        var lines = new List<string>();
        var sw = Stopwatch.StartNew();
        var limit = timeout ?? DefaultTimeout;
        while (true)
        {
            var remaining = limit - sw.Elapsed;
            string? line;
            try
            {
                line = await ReadLineAsync(remaining > TimeSpan.Zero ? remaining : TimeSpan.FromMilliseconds(1)).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
                throw new Xunit.Sdk.XunitException($"connection still open after {limit.TotalMilliseconds:0} ms; received: {string.Join(" | ", lines)}");
            }

            if (line is null)
            {
                return lines;
            }

            lines.Add(line);
        }
    }

    /// <summary>Asserts that the connection stays open for <paramref name="period"/> and returns everything received meanwhile.</summary>
    public async Task<byte[]> ExpectOpenAsync(TimeSpan period)
    {
        await Task.Delay(period).ConfigureAwait(false);
        Assert.False(IsClosed, $"connection closed ({CloseReason}); unread: {Escape(PeekUnread())}");
        return TakeAll();
    }

    /// <summary>Waits until nothing new arrives for <paramref name="quiet"/> (or the connection closes, or <paramref name="max"/>), then takes all unread bytes.</summary>
    public async Task<byte[]> ReadUntilQuietAsync(TimeSpan quiet, TimeSpan? max = null)
    {
        var limit = max ?? TimeSpan.FromSeconds(3);
        var sw = Stopwatch.StartNew();
        while (sw.Elapsed < limit)
        {
            Task changed;
            lock (_gate)
            {
                if (_closed)
                {
                    break;
                }

                changed = _changed.Task;
            }

            var winner = await Task.WhenAny(changed, Task.Delay(quiet)).ConfigureAwait(false);
            if (winner != changed)
            {
                break;
            }
        }

        return TakeAll();
    }

    /// <summary>Takes every unread byte.</summary>
    public byte[] TakeAll()
    {
        lock (_gate)
        {
            var r = _buf.AsSpan(_start, _end - _start).ToArray();
            _start = _end = 0;
            return r;
        }
    }

    /// <summary>Closes the socket abruptly (RST).</summary>
    public void Abort()
    {
        try
        {
            _socket.Close(0);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
        }
    }

    /// <summary>Printable form of protocol bytes: CR/LF and control bytes escaped.</summary>
    public static string Escape(ReadOnlySpan<byte> data)
    {
        var sb = new StringBuilder();
        foreach (var b in data)
        {
            sb.Append(b switch
            {
                (byte)'\r' => "\\r",
                (byte)'\n' => "\\n",
                (byte)'\t' => "\\t",
                (byte)'\\' => "\\\\",
                < 0x20 or >= 0x7f => $"\\x{b:x2}",
                _ => ((char)b).ToString(),
            });
        }

        return sb.ToString();
    }

    public async ValueTask DisposeAsync()
    {
        await _cts.CancelAsync().ConfigureAwait(false);
        try
        {
            _socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
            // Already closed (Abort) or reset by the peer.
        }

        _socket.Dispose();
        if (_receiveLoop is not null)
        {
            await _receiveLoop.ConfigureAwait(false);
        }

        _cts.Dispose();
    }
}
