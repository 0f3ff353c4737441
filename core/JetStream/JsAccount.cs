using System.Text;
using System.Text.Json;
using Microsoft.Extensions.Logging;
using NatsBroker.Configuration;
using NatsBroker.JetStream.Api;
using NatsBroker.Routing;

namespace NatsBroker.JetStream;

/// <summary>
/// One account's JetStream (nats-server jsAccount): its streams by name and where they are kept on disk
/// (&lt;store_dir&gt;/jetstream/&lt;account&gt;/streams/&lt;stream&gt;/, as nats-server lays them out), the account's
/// subject space its streams, consumers, replies and advisories publish into, its API totals, and its storage
/// usage against its limits (JsAccount.Limits.cs).
/// </summary>
/// <remarks>
/// Streams and consumers reach everything account-wide through their <see cref="JsStream.Js"/> (this object): the
/// router of the account, <see cref="Publish(ReadOnlySpan{byte}, ReadOnlySpan{byte}, ReadOnlySpan{byte}, ReadOnlySpan{byte})"/>,
/// <see cref="HasInterest"/>, <see cref="Advisories"/>, and the server-wide settings of <see cref="Service"/>.
/// </remarks>
internal sealed partial class JsAccount : IAsyncDisposable
{
    private readonly Dictionary<string, JsStream> _streams = new(StringComparer.Ordinal);
    private readonly Lock _lock = new();
    /// <summary>The streams as an array for loops that must not allocate (usage sums); replaced under the lock.</summary>
    private volatile JsStream[] _snapshot = [];
    private long _apiTotal, _apiErrors;

    public JsAccount(JetStreamService service, Accounts.Account account, string dir)
    {
        Service = service;
        Account = account;
        Name = account.Name;
        Dir = dir;
        Advisories = new JsAdvisories(this);
    }

    /// <summary>The server's JetStream (storage engines, options, the API queue).</summary>
    public JetStreamService Service { get; }
    /// <summary>The account this JetStream belongs to; its router is the subject space of every stream here.</summary>
    public Accounts.Account Account { get; }
    public string Name { get; }
    public string Dir { get; }
    public string StreamsDir => Path.Combine(Dir, "streams");
    public Router Router => Account.Router;
    /// <summary>$JS.EVENT.ADVISORY.&gt; and $JS.EVENT.METRIC.&gt; of this account (sent only when someone listens).</summary>
    public JsAdvisories Advisories { get; }
    public ILogger Logger => Service.Logger;
    public ServerOptions Options => Service.Options;
    public string ServerName => Service.ServerName;
    public string? Domain => Service.Domain;
    public StorageEngines Engines => Service.Engines;
    /// <summary>Atomic and fast-ingest batches in flight on this server (ADR-50 limits are server-wide).</summary>
    public Batching.BatchCounters BatchCounters => Service.BatchCounters;
    public long ApiTotal => Interlocked.Read(ref _apiTotal);
    public long ApiErrors => Interlocked.Read(ref _apiErrors);

    /// <summary>Counts one answered API request of this account (nats-server jsa.apiTotal / apiErrors).</summary>
    public void CountApi(bool ok)
    {
        Interlocked.Increment(ref _apiTotal);
        if (!ok) Interlocked.Increment(ref _apiErrors);
    }

    public void Publish(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload) =>
        Router.PublishInternal(subject, reply, headers, payload);

    public void Publish(string subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload) =>
        Router.PublishInternal(Encoding.UTF8.GetBytes(subject), default, headers, payload);

    /// <summary>True when any subscription of the account matches <paramref name="subject"/> (push delivery and pull reply checks).</summary>
    public bool HasInterest(byte[] subject) => !Router.SubList.Match(subject).IsEmpty;

    /// <summary>Removes a consumer (API delete or an expired ephemeral); see <see cref="JetStreamService.DeleteConsumerAsync"/>.</summary>
    public Task<bool> DeleteConsumerAsync(JsStream stream, JsConsumer consumer, bool advise = true) =>
        Service.DeleteConsumerAsync(stream, consumer, advise);

    public bool TryGet(string name, out JsStream stream)
    {
        lock (_lock) return _streams.TryGetValue(name, out stream!);
    }

    /// <summary>
    /// The stream named by UTF-8 <paramref name="name"/> (a token of a request subject), without allocating: the
    /// name is decoded onto the stack (as <see cref="Encoding.UTF8"/> decodes a request subject into a string) and
    /// looked up as characters. A name over 1024 bytes (nats-server allows 255 characters) is reported as not found.
    /// </summary>
    public bool TryGet(ReadOnlySpan<byte> name, out JsStream stream)
    {
        stream = null!;
        if (name.Length > MaxStreamNameBytes) return false;
        Span<char> chars = stackalloc char[MaxStreamNameBytes];
        if (!Encoding.UTF8.TryGetChars(name, chars, out int n)) return false;
        lock (_lock) return _streams.GetAlternateLookup<ReadOnlySpan<char>>().TryGetValue(chars[..n], out stream!);
    }

    private const int MaxStreamNameBytes = 1024;

    public JsStream[] Streams()
    {
        lock (_lock) return [.. _streams.Values.OrderBy(s => s.Name, StringComparer.Ordinal)];
    }

    public int Count
    {
        get { lock (_lock) return _streams.Count; }
    }

    /// <summary>
    /// Adds a stream after checking name, subject overlap and (unless recovering) the account's limits under the
    /// account lock, so two concurrent creates cannot both take the last stream or the last bytes.
    /// </summary>
    public ApiError? Add(StreamConfig config, DateTime created, out JsStream? stream, bool recovering = false)
    {
        stream = null;
        lock (_lock)
        {
            // A name reserved by a restore in progress is taken (JsAccount.Restore.cs).
            if (_streams.ContainsKey(config.Name) || _restoring.Contains(config.Name)) return JsErrors.StreamNameExist;
            if (OverlapsLocked(config.Name, config.Subjects)) return JsErrors.StreamSubjectOverlap;
            if (!recovering && CheckStreamLimitsLocked(config) is { } limitError) return limitError;
            var err = JsStream.Open(this, config, created, recovering, out stream);
            if (err is not null) return err;
            if (recovering) stream!.RebuildDedupe();
            _streams[config.Name] = stream!;
            _snapshot = [.. _streams.Values];
        }
        stream!.Start();
        SyncUsage(stream);
        return null;
    }

    /// <summary>Checks that new subjects for <paramref name="name"/> do not overlap other streams.</summary>
    public bool OverlapsOthers(string name, string[]? subjects)
    {
        lock (_lock) return OverlapsLocked(name, subjects);
    }

    /// <summary>Whether a stream other than <paramref name="name"/> listens on any of <paramref name="subjects"/> (caller holds _lock).</summary>
    private bool OverlapsLocked(string name, string[]? subjects)
    {
        foreach (var other in _streams.Values)
        {
            if (other.Name != name && JsSubjects.Overlap(subjects, other.Config.Subjects)) return true;
        }
        return false;
    }

    public async Task<bool> DeleteAsync(string name)
    {
        JsStream? s;
        lock (_lock)
        {
            if (!_streams.Remove(name, out s)) return false;
            _snapshot = [.. _streams.Values];
        }
        await s.DeleteAsync().ConfigureAwait(false);
        ForgetUsage(s);
        return true;
    }

    /// <summary>Re-opens every stream whose meta.json is on disk (file storage), with its durable consumers.</summary>
    public void Recover()
    {
        DiscardUnfinishedRestores();
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
                Logger.LogError("JetStream: cannot read stream metadata {Path}: {Error}", metaPath, ex.Message);
                continue;
            }
            if (meta is null) continue;
            var err = Add(meta.Config, meta.Created, out var stream, recovering: true);
            if (err is not null)
            {
                Logger.LogError("JetStream: cannot recover stream {Stream}: {Error}", meta.Config.Name, err.Description);
                continue;
            }
            stream!.RecoverConsumers();
            Logger.LogInformation("  Restored {Messages} messages for stream '{Account} > {Stream}'", stream.Store.GetState().Messages, Name, stream.Name);
        }
    }

    public async ValueTask DisposeAsync()
    {
        JsStream[] all;
        lock (_lock) all = [.. _streams.Values];
        foreach (var s in all) await s.DisposeAsync().ConfigureAwait(false);
    }
}
