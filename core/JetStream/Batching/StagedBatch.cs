using System.Buffers;
using NatsBroker.Contracts;

namespace NatsBroker.JetStream.Batching;

/// <summary>
/// The messages of one atomic batch staged until its commit (ADR-50): copied into one pooled arena that grows by
/// doubling, so staging costs no allocation per message once the arena is big enough. Owned by the stream's
/// ingest worker; returned to the pool by <see cref="Dispose"/>.
/// </summary>
internal sealed class StagedBatch : IAppendBatch, IDisposable
{
    private readonly record struct Entry(int Subject, int SubjectLength, int Headers, int HeadersLength, int Payload, int PayloadLength);

    private byte[] _arena;
    private int _used;
    private Entry[] _entries = new Entry[16];

    public StagedBatch(string id)
    {
        Id = id;
        _arena = ArrayPool<byte>.Shared.Rent(16 * 1024);
    }

    public string Id { get; }
    public byte[] IdBytes => _idBytes ??= System.Text.Encoding.UTF8.GetBytes(Id);
    private byte[]? _idBytes;
    public int Count { get; private set; }
    /// <summary>Environment.TickCount64 of the last message (abandonment after the batch timeout).</summary>
    public long LastActivity { get; set; }

    public ReadOnlySpan<byte> Subject(int index) { var e = _entries[index]; return _arena.AsSpan(e.Subject, e.SubjectLength); }
    public ReadOnlySpan<byte> Headers(int index) { var e = _entries[index]; return _arena.AsSpan(e.Headers, e.HeadersLength); }
    public ReadOnlySpan<byte> Payload(int index) { var e = _entries[index]; return _arena.AsSpan(e.Payload, e.PayloadLength); }

    public void Add(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload)
    {
        if (Count == _entries.Length) Array.Resize(ref _entries, Count * 2);
        int s = Copy(subject), h = Copy(headers), p = Copy(payload);
        _entries[Count++] = new Entry(s, subject.Length, h, headers.Length, p, payload.Length);
    }

    /// <summary>Replaces the headers of the last message (the EOB commit marks the last stored message with Nats-Batch-Commit: 1).</summary>
    public void ReplaceLastHeaders(ReadOnlySpan<byte> headers) => ReplaceHeaders(Count - 1, headers);

    /// <summary>
    /// Replaces the headers of one message (a schedule gets Nats-Rollup: sub). <paramref name="headers"/> must not
    /// point into this batch; spans read from it before are invalid afterwards (the arena may move).
    /// </summary>
    public void ReplaceHeaders(int index, ReadOnlySpan<byte> headers)
    {
        var e = _entries[index];
        int h = Copy(headers);
        _entries[index] = e with { Headers = h, HeadersLength = headers.Length };
    }

    /// <summary>Drops the last message (the EOB commit message is not stored).</summary>
    public void RemoveLast() => Count--;

    private int Copy(ReadOnlySpan<byte> bytes)
    {
        if (_used + bytes.Length > _arena.Length)
        {
            var bigger = ArrayPool<byte>.Shared.Rent(Math.Max(_arena.Length * 2, _used + bytes.Length));
            _arena.AsSpan(0, _used).CopyTo(bigger);
            ArrayPool<byte>.Shared.Return(_arena);
            _arena = bigger;
        }
        int at = _used;
        bytes.CopyTo(_arena.AsSpan(at));
        _used += bytes.Length;
        return at;
    }

    public void Dispose()
    {
        var a = Interlocked.Exchange(ref _arena, []);
        if (a.Length > 0) ArrayPool<byte>.Shared.Return(a);
    }
}
