using System.Buffers;
using System.Buffers.Text;
using System.Collections.Concurrent;
using System.Text;
using NatsBroker.Gateways.Link;

namespace NatsBroker.MqttGateway;

/// <summary>A message the core delivered on the link; the memory is valid only until the handler's task completes.</summary>
internal readonly record struct NatsMessage(int Sid, ReadOnlyMemory<byte> Subject, ReadOnlyMemory<byte> Reply,
    ReadOnlyMemory<byte> Headers, ReadOnlyMemory<byte> Payload);

/// <summary>Receives what the core delivers on one link, in order, on the link's read loop.</summary>
internal interface INatsDelivery
{
    ValueTask DeliverAsync(NatsMessage message);

    /// <summary>Everything read from the core so far was delivered: write what was batched for the client.</summary>
    ValueTask FlushDeliveriesAsync();
}

/// <summary>A reply to <see cref="NatsLink.RequestAsync"/> (copied out of the read buffer).</summary>
internal sealed record NatsReply(byte[] Headers, byte[] Payload)
{
    /// <summary>The core's "no responders" status (NATS/1.0 503).</summary>
    public bool NoResponders => Headers.AsSpan().StartsWith("NATS/1.0 503"u8);

    /// <summary>Ours, never on the wire: the core refused to let this user publish the request (a permissions -ERR).</summary>
    public static readonly NatsReply PublishDenied = new("NATS/1.0 403 Permissions Violation\r\n\r\n"u8.ToArray(), []);

    /// <summary>The request was not sent on: the user may not publish to its subject (<see cref="PublishDenied"/>).</summary>
    public bool Denied => ReferenceEquals(this, PublishDenied);
}

/// <summary>
/// The NATS client protocol side of one MQTT client's link to the core (gateways/README.md: one link per end user,
/// ADR-55 proxy identity in CONNECT). The MQTT session drives it: SUB/UNSUB/PUB/HPUB out, MSG/HMSG in (handed to an
/// <see cref="INatsDelivery"/> on the read loop, so a slow MQTT client stops this link's reads: backpressure stays on
/// this user's sockets), PING/PONG both ways, -ERR collected for the next flush. Request/reply (JetStream API) uses
/// one wildcard inbox subscription per link.
/// Writes are serialised by one lock; each write is one WriteAsync of a reused buffer (QoS 0 publishes of one client
/// read batched into one).
/// </summary>
internal sealed class NatsLink : IAsyncDisposable
{
    // The read buffer is rented from the shared pool and given back whenever everything read was handled: the link
    // then waits for the core with a zero-byte read (LinkSocketStream waits for the poller's edge without a system
    // call), so an idle session's link holds no read buffer (a heap dump of 8,000 idle sessions: 1 KiB each before).
    // _inSize is what the next rent asks for: 1 KiB, and ReadBufferMax from the read that filled all its free space
    // on (the core had more waiting), so a busy link reads as much per call as before. Growing in one step rather
    // than by doubling: in the fan-out row (1,000 links all busy at once) 4 -> 8 -> 16 -> 32 -> 64 KiB made 60 KiB of
    // garbage and four copies per link, and the gateway's garbage collections and page faults were a third of its
    // CPU in a quick run (perf). A message larger than the buffer grows it beyond that for that message only; a
    // partial message at the end of the buffer is moved to its start (it used to double the buffer, without bound).
    private const int InitialBuffer = 1024;
    private const int ReadBufferMax = 64 * 1024;
    private bool _readFilled;
    private int _inSize = InitialBuffer;
    private const int InboxSid = 1;

    private readonly CoreLink _core;
    private readonly Stream _stream;
    private readonly AsyncMutex _writeLock = new();
    // Grows with what a session publishes (and keeps that size): an idle session's link holds 256 bytes, not 4 KiB.
    private readonly ArrayBufferWriter<byte> _out = new(256);
    /// <summary>_out holds batched publishes not written yet (under _writeLock; read without it only as a hint).</summary>
    private bool _pendingOut;
    /// <summary>Batched bytes past which a publish is written at once.</summary>
    private const int MaxPendingBytes = 64 * 1024;
    // PINGs waiting for their PONG, in order (locked on itself). A Queue, not a ConcurrentQueue: the latter keeps a
    // 32-slot segment (768 bytes) for the life of every idle session after its one PING at connect.
    private readonly Queue<TaskCompletionSource<string?>> _pongs = new();
    // Each pending request with the subject it was published to: a publish the core refuses (permissions) is answered
    // by -ERR naming that subject, and the request fails at once instead of waiting for its timeout.
    private readonly ConcurrentDictionary<long, PendingRequest> _requests = IdleSized.Dictionary<long, PendingRequest>();

    private readonly record struct PendingRequest(TaskCompletionSource<NatsReply> Reply, string Subject);
    private readonly string _inboxPrefix = "_INBOX." + Guid.NewGuid().ToString("N") + ".";
    private byte[] _in;
    private int _start, _end;
    private int _nextSid = InboxSid;
    private long _nextRequest;
    private readonly Lock _inboxLock = new();
    private Task? _inboxSubscription;
    private string? _pendingError;
    /// <summary>The core refused this user the reply inbox subscription: every request is answered <see cref="NatsReply.PublishDenied"/>.</summary>
    private volatile bool _inboxDenied;
    private INatsDelivery? _delivery;

    public NatsLink(CoreLink core)
    {
        _core = core;
        _stream = core.Stream;
        _in = ArrayPool<byte>.Shared.Rent(Math.Max(InitialBuffer, core.Leftover.Length));
        core.Leftover.CopyTo(_in, 0);
        _end = core.Leftover.Length;
    }

    /// <summary>The last -ERR the core sent (without quotes), if any.</summary>
    public string? LastError { get; private set; }

    public int NextSid() => Interlocked.Increment(ref _nextSid);

    /// <summary>
    /// Sends CONNECT (already carrying the proxy fields) and a PING, and reads until the PONG: null when accepted,
    /// else the core's -ERR text (e.g. "Authorization Violation").
    /// </summary>
    public async Task<string?> ConnectAsync(byte[] connectLine, CancellationToken ct)
    {
        var pong = new TaskCompletionSource<string?>(TaskCreationOptions.RunContinuationsAsynchronously);
        lock (_pongs) _pongs.Enqueue(pong);
        // One write: the core reads CONNECT and PING together, as a NATS client library sends them.
        await WriteRawAsync([.. connectLine, .. "PING\r\n"u8], ct).ConfigureAwait(false);
        try
        {
            while (!pong.Task.IsCompleted)
            {
                if (!await ReadOnceAsync(ct).ConfigureAwait(false)) return LastError ?? "the core closed the link";
            }
        }
        catch (IOException) when (LastError is { } refused)
        {
            // The core answers a refused CONNECT with -ERR and closes. Our PING, written after the CONNECT, may still be
            // unread in its socket then: closing a Unix socket with unread input makes the next read here fail with
            // ECONNRESET after the -ERR was read. The -ERR is the answer.
            return refused;
        }
        return await pong.Task.ConfigureAwait(false);
    }

    /// <summary>Reads and dispatches until the core closes the link or <paramref name="ct"/> fires.</summary>
    public async Task RunAsync(INatsDelivery delivery, CancellationToken ct)
    {
        _delivery = delivery;
        try
        {
            while (await ReadOnceAsync(ct).ConfigureAwait(false)) { }
        }
        finally
        {
            lock (_pongs)
            {
                foreach (var p in _pongs) p.TrySetResult(LastError ?? "link closed");
            }
            foreach (var r in _requests.Values) r.Reply.TrySetException(new IOException("link closed"));
        }
    }

    public Task SubscribeAsync(string subject, string? queue, int sid, CancellationToken ct)
    {
        string line = queue is null ? $"SUB {subject} {sid}\r\n" : $"SUB {subject} {queue} {sid}\r\n";
        return WriteRawAsync(Encoding.UTF8.GetBytes(line), ct);
    }

    public Task UnsubscribeAsync(int sid, CancellationToken ct) => WriteRawAsync(Encoding.ASCII.GetBytes($"UNSUB {sid}\r\n"), ct);

    /// <summary>PING, then waits for its PONG: null, or the first -ERR the core sent in between (e.g. a permissions violation).</summary>
    public async Task<string?> FlushAsync(CancellationToken ct)
    {
        var pong = new TaskCompletionSource<string?>(TaskCreationOptions.RunContinuationsAsynchronously);
        await _writeLock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            lock (_pongs) _pongs.Enqueue(pong);
            await WritePendingLockedAsync(ct).ConfigureAwait(false);
            await _stream.WriteAsync("PING\r\n"u8.ToArray(), ct).ConfigureAwait(false);
        }
        finally
        {
            _writeLock.Exit();
        }
        return await pong.Task.WaitAsync(ct).ConfigureAwait(false);
    }

    /// <summary>
    /// PUB or HPUB (when <paramref name="headers"/> is not empty: a full NATS/1.0 header block). With
    /// <paramref name="batch"/> it may stay in the buffer until <see cref="FlushPublishesAsync"/> or the next write:
    /// the MQTT read loop batches the QoS 0 publishes of one client read into one write to the core.
    /// </summary>
    public async Task PublishAsync(string subject, string? reply, ReadOnlyMemory<byte> headers, ReadOnlySequence<byte> payload, CancellationToken ct, bool batch = false)
    {
        await _writeLock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            if (!_pendingOut) _out.ResetWrittenCount();
            long total = headers.Length + payload.Length;
            WriteAscii(headers.IsEmpty ? "PUB " : "HPUB ");
            WriteSubject(subject);
            _out.Write(" "u8);
            if (reply is not null)
            {
                WriteAscii(reply);
                _out.Write(" "u8);
            }
            if (!headers.IsEmpty)
            {
                WriteNumber(headers.Length);
                _out.Write(" "u8);
            }
            WriteNumber(total);
            _out.Write("\r\n"u8);
            _out.Write(headers.Span);
            foreach (var seg in payload) _out.Write(seg.Span);
            _out.Write("\r\n"u8);
            _pendingOut = true;
            if (!batch || _out.WrittenCount >= MaxPendingBytes) await WritePendingLockedAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _writeLock.Exit();
        }
    }

    /// <summary>A request on a unique reply subject of this link's inbox; the reply is copied out.</summary>
    public async Task<NatsReply> RequestAsync(string subject, ReadOnlyMemory<byte> headers, ReadOnlySequence<byte> payload, TimeSpan timeout, CancellationToken ct)
    {
        var reply = await SendRequestAsync(subject, headers, payload, timeout, ct).ConfigureAwait(false);
        return await reply.ConfigureAwait(false);
    }

    /// <summary>
    /// Sends a request and returns once it is in the link's buffer (<paramref name="headers"/> and
    /// <paramref name="payload"/> are copied, the caller may reuse them), with the task of its reply. With
    /// <paramref name="batch"/> the request may wait for <see cref="FlushPublishesAsync"/> as a batched publish does:
    /// the MQTT read loop sends the QoS 1 stores of one client read together.
    /// </summary>
    public async ValueTask<Task<NatsReply>> SendRequestAsync(string subject, ReadOnlyMemory<byte> headers, ReadOnlySequence<byte> payload, TimeSpan timeout,
        CancellationToken ct, bool batch = false)
    {
        // The inbox is subscribed by the first request; a concurrent first request waits for that SUB to be written, so
        // its PUB cannot reach the core before it (its reply would be dropped and the request time out).
        Task subscribed;
        lock (_inboxLock) subscribed = _inboxSubscription ??= SubscribeAsync(_inboxPrefix + "*", null, InboxSid, CancellationToken.None);
        await subscribed.WaitAsync(ct).ConfigureAwait(false);
        if (_inboxDenied) return Task.FromResult(NatsReply.PublishDenied);
        long id = Interlocked.Increment(ref _nextRequest);
        var tcs = new TaskCompletionSource<NatsReply>(TaskCreationOptions.RunContinuationsAsynchronously);
        _requests[id] = new PendingRequest(tcs, subject);
        try
        {
            await PublishAsync(subject, _inboxPrefix + id.ToString(System.Globalization.CultureInfo.InvariantCulture), headers, payload, ct, batch).ConfigureAwait(false);
        }
        catch
        {
            _requests.TryRemove(id, out _);
            throw;
        }
        return ReplyAsync(id, tcs.Task, timeout, ct);
    }

    private async Task<NatsReply> ReplyAsync(long id, Task<NatsReply> reply, TimeSpan timeout, CancellationToken ct)
    {
        try
        {
            return await reply.WaitAsync(timeout, ct).ConfigureAwait(false);
        }
        finally
        {
            _requests.TryRemove(id, out _);
        }
    }

    /// <summary>Writes the batched publishes, if any (the MQTT read loop has no further packet buffered).</summary>
    public async Task FlushPublishesAsync(CancellationToken ct)
    {
        if (!Volatile.Read(ref _pendingOut)) return;
        await _writeLock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            await WritePendingLockedAsync(ct).ConfigureAwait(false);
        }
        finally
        {
            _writeLock.Exit();
        }
    }

    /// <summary>Caller holds _writeLock. Every other write calls it first, so the order of what is sent is kept.</summary>
    private async ValueTask WritePendingLockedAsync(CancellationToken ct)
    {
        if (!_pendingOut) return;
        _pendingOut = false;
        await _stream.WriteAsync(_out.WrittenMemory, ct).ConfigureAwait(false);
        _out.ResetWrittenCount();
    }

    private async Task WriteRawAsync(byte[] bytes, CancellationToken ct)
    {
        await _writeLock.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            await WritePendingLockedAsync(ct).ConfigureAwait(false);
            await _stream.WriteAsync(bytes, ct).ConfigureAwait(false);
        }
        finally
        {
            _writeLock.Exit();
        }
    }

    private string? _encodedSubject, _previousSubject;
    private byte[] _encodedSubjectBytes = [];

    /// <summary>
    /// The subject as UTF-8. A publisher's repeated topic comes as the same subject string each time
    /// (MqttSession.SubjectFor): once a string is seen twice in a row its bytes are kept and copied from then on
    /// instead of encoded per publish; a subject made per message (a JetStream store's) is encoded in place, never
    /// kept. Under _writeLock.
    /// </summary>
    private void WriteSubject(string subject)
    {
        if (ReferenceEquals(subject, _encodedSubject))
        {
            _out.Write(_encodedSubjectBytes);
            return;
        }
        int before = _out.WrittenCount;
        WriteUtf8(subject);
        if (ReferenceEquals(subject, _previousSubject))
        {
            _encodedSubjectBytes = _out.WrittenSpan[before..].ToArray();
            _encodedSubject = subject;
        }
        _previousSubject = subject;
    }

    private void WriteAscii(string s)
    {
        var span = _out.GetSpan(s.Length);
        int n = Encoding.ASCII.GetBytes(s, span);
        _out.Advance(n);
    }

    private void WriteUtf8(string s)
    {
        var span = _out.GetSpan(Encoding.UTF8.GetMaxByteCount(s.Length));
        _out.Advance(Encoding.UTF8.GetBytes(s, span));
    }

    private void WriteNumber(long n)
    {
        var span = _out.GetSpan(20);
        Utf8Formatter.TryFormat(n, span, out int written);
        _out.Advance(written);
    }

    /// <summary>One read from the core, then every complete op in the buffer is handled. False at end of input.</summary>
    [System.Runtime.CompilerServices.AsyncMethodBuilder(typeof(System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<bool> ReadOnceAsync(CancellationToken ct)
    {
        if (!await ParseAsync().ConfigureAwait(false)) { }
        if (_delivery is { } pending) await pending.FlushDeliveriesAsync().ConfigureAwait(false);
        if (_readFilled) _inSize = ReadBufferMax;
        if (_start == _end)
        {
            // Everything read was handled (deliveries hold the memory only until their task completes).
            _start = _end = 0;
            ReturnInput();
            await _stream.ReadAsync(Memory<byte>.Empty, ct).ConfigureAwait(false);
            _in = ArrayPool<byte>.Shared.Rent(_inSize);
        }
        else if (_in.Length < _inSize)
        {
            Resize(_inSize);
        }
        else if (_end == _in.Length)
        {
            if (_start > 0) Compact();
            else Resize(_in.Length * 2);
        }
        int free = _in.Length - _end;
        int n = await _stream.ReadAsync(_in.AsMemory(_end), ct).ConfigureAwait(false);
        if (n == 0) return false;
        _readFilled = n == free;
        _end += n;
        await ParseAsync().ConfigureAwait(false);
        // Once per read, as nats-server flushes the clients a read touched (server/client.go flushClients).
        if (_delivery is { } d) await d.FlushDeliveriesAsync().ConfigureAwait(false);
        return true;
    }

    /// <summary>Handles every complete op between _start and _end.</summary>
    private async ValueTask<bool> ParseAsync()
    {
        while (true)
        {
            var avail = _in.AsSpan(_start, _end - _start);
            int eol = avail.IndexOf("\r\n"u8);
            if (eol < 0) return true;
            var line = avail[..eol];
            if (line.StartsWith("MSG "u8) || line.StartsWith("HMSG "u8))
            {
                bool hasHeaders = line[0] == (byte)'H';
                if (!ParseMsgLine(line[(hasHeaders ? 5 : 4)..], hasHeaders, out var args)) throw new IOException("the core sent a malformed MSG line");
                int bodyStart = _start + eol + 2;
                int needed = bodyStart + args.Total + 2;
                if (needed > _end)
                {
                    // Make room for the whole message: at the start of the buffer, or in a larger one when it does not fit.
                    int size = args.Total + eol + 4;
                    if (size > _in.Length - _start)
                    {
                        if (size <= _in.Length) Compact();
                        else Resize(Math.Max(ReadBufferMax, size + 4096));
                    }
                    return true;
                }
                var mem = _in.AsMemory();
                var subject = mem.Slice(_start + args.SubjectAt, args.SubjectLength);
                var reply = mem.Slice(_start + args.ReplyAt, args.ReplyLength);
                var headers = mem.Slice(bodyStart, args.HeaderLength);
                var payload = mem.Slice(bodyStart + args.HeaderLength, args.Total - args.HeaderLength);
                _start = needed;
                if (args.Sid == InboxSid)
                {
                    CompleteRequest(subject.Span, headers, payload);
                }
                else if (_delivery is { } d)
                {
                    await d.DeliverAsync(new NatsMessage(args.Sid, subject, reply, headers, payload)).ConfigureAwait(false);
                }
                continue;
            }
            _start += eol + 2;
            if (line.SequenceEqual("PING"u8))
            {
                await WriteRawAsync("PONG\r\n"u8.ToArray(), CancellationToken.None).ConfigureAwait(false);
            }
            else if (line.SequenceEqual("PONG"u8))
            {
                TaskCompletionSource<string?>? p;
                lock (_pongs) _pongs.TryDequeue(out p);
                if (p is not null)
                {
                    p.TrySetResult(_pendingError);
                    _pendingError = null;
                }
            }
            else if (line.StartsWith("-ERR"u8))
            {
                var text = Encoding.UTF8.GetString(line[4..]).Trim().Trim('\'');
                LastError = text;
                // A refused publish is not the answer to the next flush (that is a SUBSCRIBE's check: a JetStream
                // request or a PUBLISH denied before it made an allowed subscription fail); a request it was fails now.
                if (!FailDeniedRequests(text)) _pendingError ??= text;
            }
            // +OK and INFO (lame duck, cluster updates) need nothing here.
        }
    }

    /// <summary>Moves the unparsed bytes to the start of the buffer.</summary>
    private void Compact()
    {
        _in.AsSpan(_start, _end - _start).CopyTo(_in);
        _end -= _start;
        _start = 0;
    }

    /// <summary>A new buffer of <paramref name="size"/> bytes holding the unparsed bytes at its start (not zeroed: only
    /// what was read is ever looked at).</summary>
    private void Resize(int size)
    {
        var bigger = ArrayPool<byte>.Shared.Rent(size);
        _in.AsSpan(_start, _end - _start).CopyTo(bigger);
        _end -= _start;
        _start = 0;
        ReturnInput();
        _in = bigger;
        _inSize = Math.Min(size, ReadBufferMax); // one large message does not make every later read buffer large
    }

    /// <summary>Gives the read buffer back to the pool (nothing unparsed may be in it, no delivery may still read it).</summary>
    private void ReturnInput()
    {
        if (_in.Length > 0) ArrayPool<byte>.Shared.Return(_in);
        _in = [];
    }

    private void CompleteRequest(ReadOnlySpan<byte> subject, ReadOnlyMemory<byte> headers, ReadOnlyMemory<byte> payload)
    {
        int dot = subject.LastIndexOf((byte)'.');
        if (dot < 0 || !Utf8Parser.TryParse(subject[(dot + 1)..], out long id, out _)) return;
        if (_requests.TryRemove(id, out var pending)) pending.Reply.TrySetResult(new NatsReply(headers.ToArray(), payload.ToArray()));
    }

    /// <summary>
    /// <c>-ERR 'Permissions Violation for Publish to "subject"'</c> (nats-server client.go pubPermissionViolation; the
    /// core's wording is the same): the pending requests to that subject get a <see cref="NatsReply.Denied"/> reply.
    /// The same for a refused subscription to the link's reply inbox (every request then). True when the error was
    /// one of these (whether or not a request was waiting): it is not a later flush's answer.
    /// </summary>
    private bool FailDeniedRequests(string error)
    {
        const string Prefix = "Permissions Violation for Publish to \"";
        const string InboxDenied = "Permissions Violation for Subscription to \"";
        if (error.StartsWith(InboxDenied, StringComparison.Ordinal) && error.AsSpan(InboxDenied.Length).StartsWith(_inboxPrefix))
        {
            // The user may not subscribe to the link's reply inbox: no request can get a reply.
            foreach (var (id, pending) in _requests)
            {
                if (_requests.TryRemove(id, out _)) pending.Reply.TrySetResult(NatsReply.PublishDenied);
            }
            _inboxDenied = true;
            return true;
        }
        if (!error.StartsWith(Prefix, StringComparison.Ordinal)) return false;
        var subject = error.AsSpan(Prefix.Length);
        int quote = subject.LastIndexOf('"');
        if (quote >= 0) subject = subject[..quote];
        foreach (var (id, pending) in _requests)
        {
            if (subject.SequenceEqual(pending.Subject) && _requests.TryRemove(id, out _)) pending.Reply.TrySetResult(NatsReply.PublishDenied);
        }
        return true;
    }

    private struct MsgArgs
    {
        public int SubjectAt, SubjectLength, ReplyAt, ReplyLength, Sid, HeaderLength, Total;
    }

    /// <summary>Where the arguments of a MSG/HMSG line are (the first 5, as before).</summary>
    [System.Runtime.CompilerServices.InlineArray(5)]
    private struct ArgPositions
    {
        private int _element;
    }

    /// <summary>"subject sid [reply] [hdrlen] total" (offsets relative to _start). Each argument's end is found with a
    /// vectorized search for a space or tab (this ran byte by byte and was the gateway's top symbol in the fan-out row).</summary>
    private static bool ParseMsgLine(ReadOnlySpan<byte> args, bool hasHeaders, out MsgArgs a)
    {
        a = default;
        int offset = hasHeaders ? 5 : 4;
        var at = new ArgPositions();
        var len = new ArgPositions();
        int count = 0, i = 0;
        while (count < 5)
        {
            int skip = args[i..].IndexOfAnyExcept((byte)' ', (byte)'\t');
            if (skip < 0) break;
            i += skip;
            int n = args[i..].IndexOfAny((byte)' ', (byte)'\t');
            if (n < 0) n = args.Length - i;
            at[count] = i;
            len[count] = n;
            count++;
            i += n;
        }
        int expected = hasHeaders ? 4 : 3;
        if (count != expected && count != expected + 1) return false;
        bool hasReply = count == expected + 1;
        a.SubjectAt = offset + at[0];
        a.SubjectLength = len[0];
        if (!Utf8Parser.TryParse(args.Slice(at[1], len[1]), out a.Sid, out _)) return false;
        int next = 2;
        if (hasReply)
        {
            a.ReplyAt = offset + at[2];
            a.ReplyLength = len[2];
            next = 3;
        }
        if (hasHeaders)
        {
            if (!Utf8Parser.TryParse(args.Slice(at[next], len[next]), out a.HeaderLength, out _)) return false;
            next++;
        }
        if (!Utf8Parser.TryParse(args.Slice(at[next], len[next]), out a.Total, out _)) return false;
        return a.Total >= a.HeaderLength;
    }

    public void ShutdownSend() => _core.ShutdownSend();

    public async ValueTask DisposeAsync()
    {
        await _core.DisposeAsync().ConfigureAwait(false);
        _writeLock.Dispose();
    }
}
