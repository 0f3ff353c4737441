using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream.Snapshots;

/// <summary>
/// What one snapshot holds, fixed when it is requested: the stream's config, its durable consumers' configs and
/// states (taken first, so no consumer is ahead of the messages), then the sequence range; the messages are read
/// from the store while they are sent (a message removed meanwhile is left out, one added later is not in it).
/// </summary>
internal sealed class StreamSnapshotSource
{
    private readonly JsStream _stream;
    private readonly List<(ConsumerMeta Meta, ConsumerState State)> _consumers = [];

    private StreamSnapshotSource(JsStream stream, bool includeConsumers)
    {
        _stream = stream;
        IncludeConsumers = includeConsumers;
        if (includeConsumers)
        {
            foreach (var c in stream.Consumers)
            {
                // Ephemeral consumers are not kept (they are not persisted here either).
                if (!c.IsDurable) continue;
                var state = new ConsumerState();
                c.CaptureState(state);
                _consumers.Add((c.SnapshotMeta(), state));
            }
        }
        Meta = new StreamMeta { Config = stream.Config, Created = stream.Created };
        State = stream.Store.GetState();
    }

    public bool IncludeConsumers { get; }
    public StreamMeta Meta { get; }
    public StreamState State { get; }
    public int ConsumerCount => _consumers.Count;

    public static StreamSnapshotSource Capture(JsStream stream, bool includeConsumers) => new(stream, includeConsumers);

    /// <summary>"jsck": reads every message of the range; the first failure's description, or null.</summary>
    public string? CheckMessages()
    {
        var msg = new StoredMessage(1024);
        for (ulong seq = State.FirstSequence; seq <= State.LastSequence && seq != 0;)
        {
            var st = _stream.Store.LoadNext(default, seq, msg);
            if (st == StoreStatus.NotFound) break;
            if (st != StoreStatus.Ok) return $"message at or after sequence {seq}: {_stream.Store.LastError ?? st.ToString()}";
            seq = msg.Sequence + 1;
        }
        return null;
    }

    /// <summary>Writes the whole snapshot (<see cref="SnapshotFormat"/>); a store read failure ends it with a 500 status.</summary>
    public async Task WriteAsync(SnapshotWriter w, CancellationToken ct)
    {
        await w.WriteHeaderAsync(IncludeConsumers, ct).ConfigureAwait(false);
        await w.WriteStreamAsync(Meta, ct).ConfigureAwait(false);
        foreach (var (meta, state) in _consumers) await w.WriteConsumerAsync(meta, state, ct).ConfigureAwait(false);
        await w.WriteRangeAsync(State.FirstSequence, State.LastSequence, ct).ConfigureAwait(false);
        var msg = new StoredMessage(1024);
        ulong count = 0, bytes = 0;
        for (ulong seq = Math.Max(1, State.FirstSequence); seq <= State.LastSequence;)
        {
            var st = _stream.Store.LoadNext(default, seq, msg);
            if (st == StoreStatus.NotFound || (st == StoreStatus.Ok && msg.Sequence > State.LastSequence)) break;
            if (st != StoreStatus.Ok) throw new SnapshotAbortedException($"500 reading sequence {seq}: {_stream.Store.LastError ?? st.ToString()}");
            await w.WriteMessageAsync(msg, ct).ConfigureAwait(false);
            count++;
            bytes += (ulong)msg.ContentLength;
            seq = msg.Sequence + 1;
        }
        await w.WriteEndAsync(count, bytes, (uint)_consumers.Count, ct).ConfigureAwait(false);
    }
}
