using System.Buffers;
using System.Diagnostics;
using Microsoft.Extensions.Logging;
using NatsBroker.JetStream.Api;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>
/// One restore transfer (nats-server jetstream_api.go processStreamRestore): the client publishes the snapshot's
/// chunks to <c>$JS.SNAPSHOT.RESTORE.&lt;stream&gt;.&lt;id&gt;</c>, each with a reply subject, and ends with an empty
/// message. Each chunk is acknowledged with an empty reply once the restore takes it; the end marker's reply gets
/// the outcome as a stream_create_response (the stream's info, or the error). After a failure the next chunk (or the
/// end marker) is answered with the error and the subscription ends. No chunk for 5 s ends the restore ("stalled").
/// </summary>
internal sealed class RestoreSession
{
    private readonly JsAccount _js;
    private readonly StreamConfig _config;
    private readonly RestoreChunkStream _input;
    private readonly Lock _gate = new();
    private readonly Subscription _sub;
    private readonly TaskCompletionSource _answered = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private byte[]? _endReply;
    private byte[]? _failure;
    private bool _closed;
    private readonly object? _origin;
    private long _received;

    /// <param name="origin">The requesting client, for the restore advisories.</param>
    public RestoreSession(JsAccount js, StreamConfig config, object? origin)
    {
        _js = js;
        _config = config;
        _origin = origin;
        _input = new RestoreChunkStream(reply => _js.Publish(reply, default, default, default));
        DeliverSubject = $"$JS.SNAPSHOT.RESTORE.{config.Name}.{Nuid.Next()}";
        _sub = js.Router.SubscribeInternal(DeliverSubject, null, OnChunk);
    }

    public string DeliverSubject { get; }

    /// <summary>Runs on the publishing client's thread: queue the chunk, note the end, or answer with the failure.</summary>
    private void OnChunk(Subscription sub, in InternalMessage msg)
    {
        byte[]? answer = null;
        var body = msg.Body;
        var reply = msg.Reply;
        lock (_gate)
        {
            if (_closed) return;
            if (reply.IsEmpty)
            {
                // nats-server: "restore ... requires reply subject for each chunk"; nothing can be answered.
                _failure ??= Error(SnapshotErrors.StreamRestore($"restore for stream '{_js.Name} > {_config.Name}' requires reply subject for each chunk"));
                _closed = true;
                _input.Complete();
            }
            else if (_failure is not null)
            {
                answer = _failure;
                _closed = true;
            }
            else if (body.IsEmpty)
            {
                _endReply = reply.ToArray();
                _input.Complete();
            }
            else
            {
                int n = (int)body.Length;
                var buffer = ArrayPool<byte>.Shared.Rent(n);
                body.CopyTo(buffer);
                Interlocked.Add(ref _received, n);
                if (!_input.TryAdd(new RestoreChunkStream.Chunk(buffer, n, reply.ToArray())))
                {
                    ArrayPool<byte>.Shared.Return(buffer);
                    _failure = Error(SnapshotErrors.StreamRestore($"restore for stream '{_js.Name} > {_config.Name}' received chunks faster than it acknowledged them"));
                    answer = _failure;
                    _closed = true;
                    _input.Complete();
                }
            }
        }
        if (answer is not null)
        {
            if (!reply.IsEmpty) _js.Publish(reply, default, default, answer);
            _js.Router.Unsubscribe(_sub);
            _answered.TrySetResult();
        }
    }

    /// <summary>Reads the snapshot and adds the stream; answers the end marker. Never throws (a background task).</summary>
    public async Task RunAsync(CancellationToken ct)
    {
        var started = Stopwatch.GetTimestamp();
        var startedAt = DateTime.UtcNow;
        var restorer = new StreamRestorer(_js, _config);
        byte[] result;
        bool ok = false;
        try
        {
            var stream = await restorer.RestoreAsync(new S2FrameReader(_input), ct).ConfigureAwait(false);
            result = JetStreamService.StreamCreateResponseJson(stream.Info());
            ok = true;
            _js.Logger.LogInformation("Completed restore of {Bytes} bytes ({Messages} messages) for stream '{Account} > {Stream}' in {Elapsed}",
                _received, restorer.Messages, _js.Name, _config.Name, Stopwatch.GetElapsedTime(started));
        }
        catch (Exception ex) when (ex is SnapshotFormatException or RestoreRefusedException or RestoreStalledException or IOException or UnauthorizedAccessException or OperationCanceledException)
        {
            var error = ex switch
            {
                RestoreRefusedException r => r.Error,
                RestoreStalledException => SnapshotErrors.StreamRestore($"restore for stream '{_js.Name} > {_config.Name}' is stalled"),
                _ => SnapshotErrors.StreamRestore(ex.Message),
            };
            result = Error(error);
            _js.Logger.LogWarning("Restore failed for stream '{Account} > {Stream}' after {Bytes} bytes: {Error}", _js.Name, _config.Name, _received, error.Description);
        }
        catch (Exception ex)
        {
            result = Error(SnapshotErrors.StreamRestore(ex.Message));
            _js.Logger.LogError(ex, "Restore failed for stream '{Account} > {Stream}'", _js.Name, _config.Name);
        }
        _js.Advisories.RestoreCompleted(_config.Name, startedAt, DateTime.UtcNow, Interlocked.Read(ref _received), _origin);
        byte[]? endReply;
        lock (_gate)
        {
            endReply = _endReply;
            if (endReply is not null || ok) _closed = true;
            else _failure ??= result;
        }
        // Chunks queued behind the failure get it as their answer.
        foreach (var queued in _input.Drain()) _js.Publish(queued, default, default, result);
        if (endReply is not null || ok)
        {
            // ok without an end reply: the input ended by a chunk without a reply subject; nobody can be told.
            Close(endReply, result);
            return;
        }
        // Failed before the end marker: the client's next chunk is answered with the error; give it the stall time.
        await Task.WhenAny(_answered.Task, Task.Delay(RestoreChunkStream.StallTimeout, ct)).ConfigureAwait(false);
        lock (_gate) _closed = true;
        _js.Router.Unsubscribe(_sub);
    }

    private void Close(byte[]? reply, byte[] answer)
    {
        if (reply is { Length: > 0 }) _js.Publish(reply, default, default, answer);
        _js.Router.Unsubscribe(_sub);
        _answered.TrySetResult();
    }

    private static byte[] Error(ApiError error) => JsJson.Error(JsJson.Prefix + "stream_create_response", error);
}
