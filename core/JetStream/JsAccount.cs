using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

/// <summary>
/// One account's JetStream: its streams by name and where they are kept on disk
/// (&lt;store_dir&gt;/jetstream/&lt;account&gt;/streams/&lt;stream&gt;/, as nats-server lays them out).
/// </summary>
internal sealed class JsAccount : IAsyncDisposable
{
    private readonly Dictionary<string, JsStream> _streams = new(StringComparer.Ordinal);
    private readonly Lock _lock = new();

    public JsAccount(JetStreamService js, string name, string dir)
    {
        Js = js;
        Name = name;
        Dir = dir;
    }

    public JetStreamService Js { get; }
    public string Name { get; }
    public string Dir { get; }
    public string StreamsDir => Path.Combine(Dir, "streams");

    public bool TryGet(string name, out JsStream stream)
    {
        lock (_lock) return _streams.TryGetValue(name, out stream!);
    }

    public JsStream[] Streams()
    {
        lock (_lock) return [.. _streams.Values.OrderBy(s => s.Name, StringComparer.Ordinal)];
    }

    public int Count
    {
        get { lock (_lock) return _streams.Count; }
    }

    /// <summary>Adds a stream after checking name and subject overlap under the account lock.</summary>
    public ApiError? Add(StreamConfig config, DateTime created, out JsStream? stream, bool recovering = false)
    {
        stream = null;
        lock (_lock)
        {
            if (_streams.ContainsKey(config.Name)) return JsErrors.StreamNameExist;
            foreach (var other in _streams.Values)
            {
                if (JsSubjects.Overlap(config.Subjects, other.Config.Subjects)) return JsErrors.StreamSubjectOverlap;
            }
            var err = JsStream.Open(this, config, created, recovering, out stream);
            if (err is not null) return err;
            if (recovering) stream!.RebuildDedupe();
            _streams[config.Name] = stream!;
        }
        stream!.Start();
        return null;
    }

    /// <summary>Checks that new subjects for <paramref name="name"/> do not overlap other streams.</summary>
    public bool OverlapsOthers(string name, string[]? subjects)
    {
        lock (_lock)
        {
            foreach (var other in _streams.Values)
            {
                if (other.Name != name && JsSubjects.Overlap(subjects, other.Config.Subjects)) return true;
            }
        }
        return false;
    }

    public async Task<bool> DeleteAsync(string name)
    {
        JsStream? s;
        lock (_lock)
        {
            if (!_streams.Remove(name, out s)) return false;
        }
        await s.DeleteAsync().ConfigureAwait(false);
        return true;
    }

    /// <summary>Re-opens every stream whose meta.json is on disk (file storage), with its durable consumers.</summary>
    public void Recover()
    {
        if (!Directory.Exists(StreamsDir)) return;
        foreach (var dir in Directory.GetDirectories(StreamsDir))
        {
            var metaPath = Path.Combine(dir, JsStream.MetaFile);
            if (!File.Exists(metaPath)) continue;
            StreamMeta? meta;
            try
            {
                meta = JsonSerializer.Deserialize(File.ReadAllBytes(metaPath), JsJsonContext.Default.StreamMeta);
            }
            catch (Exception ex) when (ex is JsonException or IOException)
            {
                Js.Logger.LogError("JetStream: cannot read stream metadata {Path}: {Error}", metaPath, ex.Message);
                continue;
            }
            if (meta is null) continue;
            var err = Add(meta.Config, meta.Created, out var stream, recovering: true);
            if (err is not null)
            {
                Js.Logger.LogError("JetStream: cannot recover stream {Stream}: {Error}", meta.Config.Name, err.Description);
                continue;
            }
            stream!.RecoverConsumers();
            Js.Logger.LogInformation("  Restored {Messages} messages for stream '{Account} > {Stream}'", stream.Store.GetState().Messages, Name, stream.Name);
        }
    }

    public async ValueTask DisposeAsync()
    {
        JsStream[] all;
        lock (_lock) all = [.. _streams.Values];
        foreach (var s in all) await s.DisposeAsync().ConfigureAwait(false);
    }
}
