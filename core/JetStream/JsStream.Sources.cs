using System.Buffers;
using System.Text;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// The stream side of mirrors and sources: the readers' lifecycle (JsSourcing), origin notifications (watchers),
// queueing copied messages into the ingest channel, storing mirrored messages at their origin sequence, and
// the mirror / sources entries of STREAM.INFO.
internal sealed partial class JsStream
{
    private JsSourcing? _sourcing;
    private readonly Lock _watchersLock = new();
    private volatile Action[] _watchers = [];

    /// <summary>
    /// The source's index name as nats-server composes it (stream.go composeIName): "&lt;name&gt; &lt;filter&gt;
    /// &lt;destination&gt;", the transforms' sources and destinations joined with form feeds. It keys duplicate
    /// detection and the Nats-Stream-Source header.
    /// </summary>
    internal static string SourceIndexName(StreamSourceConfig s)
    {
        string source, destination;
        if (s.SubjectTransforms is not { Length: > 0 } trs)
        {
            source = string.IsNullOrEmpty(s.FilterSubject) ? ">" : s.FilterSubject;
            destination = ">";
        }
        else
        {
            source = string.Join('\f', trs.Select(t => string.IsNullOrEmpty(t.Src) ? ">" : t.Src));
            destination = string.Join('\f', trs.Select(t => string.IsNullOrEmpty(t.Dest) ? ">" : t.Dest));
        }
        // An external origin's name is qualified by a hash of its API prefix (stream.go composeIName): the same
        // stream name can exist in several accounts or domains.
        string name = s.External is { Api.Length: > 0 } ext ? s.Name + ":" + ApiPrefixHash(ext.Api) : s.Name;
        if (s.Consumer is { } c) name += ":C=" + ApiPrefixHash(c.Name ?? "");
        return $"{name} {source} {destination}";
    }

    /// <summary>nats-server's getHash: the first 8 bytes of SHA-256, each as a base-62 digit (b % 62).</summary>
    internal static string ApiPrefixHash(string api)
    {
        const string Digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
        Span<byte> sha = stackalloc byte[32];
        System.Security.Cryptography.SHA256.HashData(System.Text.Encoding.UTF8.GetBytes(api), sha);
        Span<char> chars = stackalloc char[8];
        for (int i = 0; i < chars.Length; i++) chars[i] = Digits[sha[i] % Digits.Length];
        return new string(chars);
    }

    /// <summary>A reader of this stream (a mirror or source of another) asks to be woken after messages are stored.</summary>
    internal void AddWatcher(Action wake)
    {
        lock (_watchersLock) _watchers = [.. _watchers, wake];
    }

    internal void RemoveWatcher(Action wake)
    {
        lock (_watchersLock) _watchers = [.. _watchers.Where(w => w != wake)];
    }

    private void NotifyWatchers()
    {
        foreach (var w in _watchers) w();
    }

    private void StartSourcing()
    {
        var cfg = _config;
        if (cfg.Mirror is null && cfg.Sources is not { Length: > 0 }) return;
        _sourcing = new JsSourcing(this, cfg);
        _sourcing.Start();
    }

    private async Task StopSourcingAsync()
    {
        Task pending;
        lock (_watchersLock) pending = _sourcingChange;
        await pending.ConfigureAwait(false);
        var s = _sourcing;
        _sourcing = null;
        if (s is not null) await s.DisposeAsync().ConfigureAwait(false);
    }

    /// <summary>After an update: sources may have changed (a mirror may not). Restarts run one after another.</summary>
    private void RestartSourcingIfChanged(StreamConfig old, StreamConfig next)
    {
        var a = (old.Sources ?? []).Select(SourceIndexName).ToArray();
        var b = (next.Sources ?? []).Select(SourceIndexName).ToArray();
        // A removed mirror stops its reader too (the stream keeps what it copied and takes publishes from there).
        if (a.SequenceEqual(b) && (old.Mirror is null) == (next.Mirror is null)) return;
        lock (_watchersLock)
        {
            _sourcingChange = _sourcingChange.ContinueWith(async _ =>
            {
                try
                {
                    var previous = _sourcing;
                    _sourcing = null;
                    if (previous is not null) await previous.DisposeAsync().ConfigureAwait(false);
                    if (!IsDeleted) StartSourcing();
                }
                catch (Exception ex)
                {
                    Microsoft.Extensions.Logging.LoggerExtensions.LogError(Js.Logger, ex, "JetStream stream {Stream}: restarting its sources failed", Name);
                }
            }, CancellationToken.None, TaskContinuationOptions.None, TaskScheduler.Default).Unwrap();
        }
    }

    private Task _sourcingChange = Task.CompletedTask;

    /// <summary>
    /// Queues a copied message into the ingest channel, waiting while it is full (sourcing is flow-controlled by
    /// the target's ingest, as nats-server's source consumers are by flow control). <paramref name="originSeq"/>
    /// &gt; 0 marks a mirrored message, stored at that sequence with its origin timestamp.
    /// </summary>
    internal ValueTask QueueCopyAsync(byte[] subject, ReadOnlySpan<byte> headers, ReadOnlySpan<byte> payload, ulong originSeq, long timestamp, CancellationToken token)
    {
        int total = subject.Length + headers.Length + payload.Length;
        var buf = InboundBuffers.Rent(Math.Max(1, total));
        subject.CopyTo(buf, 0);
        headers.CopyTo(buf.AsSpan(subject.Length));
        payload.CopyTo(buf.AsSpan(subject.Length + headers.Length));
        var inbound = new Inbound(buf, subject.Length, 0, headers.Length, payload.Length, originSeq, timestamp, originSeq == 0 ? Inbound.KindSourced : (byte)0);
        return WriteCopyAsync(inbound, token);
    }

    private async ValueTask WriteCopyAsync(Inbound inbound, CancellationToken token)
    {
        try
        {
            while (!TryQueue(inbound))
            {
                if (!await _inbound.WaitToWriteAsync(token).ConfigureAwait(false)) throw new OperationCanceledException();
            }
        }
        catch
        {
            inbound.Return();
            throw;
        }
    }

    /// <summary>
    /// Stores a mirrored message at its origin sequence (gaps become deleted, as the origin's), on the ingest
    /// worker. Already-held sequences are skipped (a restarted reader may send them again).
    /// </summary>
    private bool StoreMirrored(in Inbound m)
    {
        var st = Store.GetState();
        if (m.OriginSeq <= st.LastSequence) return false;
        // A new mirror of an origin whose first messages are gone starts at the origin's first sequence.
        if (st.LastSequence == 0 && st.Messages == 0 && m.OriginSeq > 1) Store.SkipTo(m.OriginSeq - 1);
        var status = Store.AppendAt(m.OriginSeq, m.Timestamp, m.Subject, m.Headers, m.Payload);
        if (status != StoreStatus.Ok)
        {
            _sourcing?.ReportStoreError(status, Store.LastError);
            return false;
        }
        // Mirrored copies are not refused by the account's limits (README "Not done yet"), but they count at once.
        if (_account.IsLimited(_config.Storage == StorageType.Memory)) _account.SyncUsage(this);
        foreach (var c in _consumerSnapshot) c.OnStored(m.Subject);
        if (_config.Retention == RetentionPolicy.Interest && _consumerSnapshot.Length == 0) Store.Remove(m.OriginSeq);
        return true;
    }

    private void AddSourcingInfo(StreamInfo info)
    {
        var s = _sourcing;
        if (s is null) return;
        s.Describe(info);
    }

    /// <summary>The last origin sequence this stream holds from a source (its newest Nats-Stream-Source header), or 0.</summary>
    internal ulong LastSourcedSequence(string indexName)
    {
        var st = Store.GetState();
        var probe = new StoredMessage(256);
        var prefix = indexName.Split(' ');
        for (ulong s = st.LastSequence; s >= st.FirstSequence && s > 0; s--)
        {
            if (Store.Load(s, probe) != StoreStatus.Ok || probe.HeadersLength == 0) continue;
            var h = NatsHeaders.GetString(probe.Headers, JsSourcing.SourceHeader);
            if (h.Length == 0) continue;
            // "<name> <seq> <filter> <destination> <subject>"
            var parts = h.Split(' ');
            if (parts.Length >= 4 && parts[0] == prefix[0] && parts[2] == prefix[1] && parts[3] == prefix[2]
                && ulong.TryParse(parts[1], System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out ulong seq))
                return seq;
        }
        return 0;
    }
}
