using System.Globalization;
using System.Text;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// Per-message TTL and subject delete markers (ADR-43, nats-server 2.11: stream.go getMessageTTL /
// parseMessageTTL, filestore.go expireMsgs / handleRemovalOrSdm). A message's Nats-TTL ("never", a Go duration of
// at least 1s, or whole seconds) reaches the store as its TTL. Streams that allow TTLs age out max_age here rather
// than in the store, so that "never" messages stay and, with subject_delete_marker_ttl, the last message of a
// subject leaves a marker (Nats-Marker-Reason: MaxAge, Nats-TTL, Nats-Rollup: sub) that itself expires.
internal sealed partial class JsStream
{
    public const string TtlHeader = "Nats-TTL";
    public const string MarkerReasonHeader = "Nats-Marker-Reason";

    private Timer? _ageTimer;
    private int _ageRunning;

    /// <summary>Whether this stream's max_age is enforced here (TTL streams) instead of by the store.</summary>
    internal static bool AgesInJetStream(StreamConfig c) => c.MaxAge > 0 && (c.AllowMsgTtl || c.SubjectDeleteMarkerTtl is > 0);

    /// <summary>
    /// The message's TTL in nanoseconds (0 none, -1 never), or false with the publisher's error: TTLs not allowed
    /// on the stream (10166), or an invalid value (10165). Copies from sources are not refused for being TTL'd.
    /// </summary>
    private static bool TryMessageTtl(ReadOnlySpan<byte> hdr, StreamConfig cfg, out long ttlNanos, out ApiError? error)
    {
        ttlNanos = 0;
        error = null;
        if (hdr.IsEmpty) return true;
        var raw = NatsHeaders.Get(hdr, TtlHeader);
        if (raw.IsEmpty) return true;
        bool sourced = NatsHeaders.Has(hdr, JsSourcing.SourceHeader);
        if (!ParseTtl(Encoding.ASCII.GetString(raw), out long seconds))
        {
            error = cfg.AllowMsgTtl || sourced ? JsErrors.MessageTtlInvalid : JsErrors.MessageTtlDisabled;
            return false;
        }
        if (seconds != 0 && !cfg.AllowMsgTtl && !sourced)
        {
            error = JsErrors.MessageTtlDisabled;
            return false;
        }
        if (seconds > 0 && cfg.SubjectDeleteMarkerTtl is > 0 and var sdm && cfg.MaxMsgsPerSubject != 1)
            seconds = Math.Max(seconds, sdm / 1_000_000_000); // markers must not be outlived by what they mark
        ttlNanos = seconds < 0 ? -1 : seconds * 1_000_000_000;
        return true;
    }

    /// <summary>nats-server parseMessageTTL: seconds; -1 for "never"; false when invalid (under 1s, unparsable).</summary>
    internal static bool ParseTtl(string text, out long seconds)
    {
        seconds = 0;
        if (string.Equals(text, "never", StringComparison.OrdinalIgnoreCase)) { seconds = -1; return true; }
        if (GoDuration.TryParse(text, out long nanos))
        {
            if (nanos < 1_000_000_000) return false;
            seconds = nanos / 1_000_000_000;
            return true;
        }
        return long.TryParse(text, NumberStyles.None, CultureInfo.InvariantCulture, out seconds);
    }

    /// <summary>Starts or stops the max-age sweep after create, recovery or update.</summary>
    private void ScheduleAgeSweep()
    {
        var cfg = _config;
        if (!AgesInJetStream(cfg))
        {
            _ageTimer?.Dispose();
            _ageTimer = null;
            return;
        }
        long periodMs = Math.Clamp(cfg.MaxAge / 1_000_000 / 4, 50, 1000);
        _ageTimer ??= new Timer(_ => SweepAge(), null, periodMs, periodMs);
        _ageTimer.Change(periodMs, periodMs);
    }

    private void StopAgeSweep()
    {
        _ageTimer?.Dispose();
        _ageTimer = null;
    }

    /// <summary>Removes messages past max_age (skipping "never" ones), leaving delete markers when configured.</summary>
    private void SweepAge()
    {
        if (IsDeleted || Interlocked.Exchange(ref _ageRunning, 1) != 0) return;
        try
        {
            var cfg = _config;
            if (!AgesInJetStream(cfg)) return;
            long cutoff = GoTime.NowNanos() - cfg.MaxAge;
            long markerTtl = cfg.SubjectDeleteMarkerTtl is > 0 and var t ? t / 1_000_000_000 : 0;
            var msg = new StoredMessage(256);
            var last = new StoredMessage(64);
            bool changed = false;
            ulong seq = Store.GetState().FirstSequence;
            while (!IsDeleted && Store.LoadNext(default, seq, msg) == StoreStatus.Ok && msg.Timestamp <= cutoff)
            {
                seq = msg.Sequence + 1;
                var hdr = msg.Headers;
                if (!hdr.IsEmpty && NatsHeaders.Get(hdr, TtlHeader) is { IsEmpty: false } v && ParseTtl(Encoding.ASCII.GetString(v), out long s) && s < 0)
                    continue; // "never"
                bool isLast = markerTtl > 0 && Store.LoadLast(msg.Subject, last) == StoreStatus.Ok && last.Sequence == msg.Sequence;
                bool isMarker = !hdr.IsEmpty && !NatsHeaders.Get(hdr, MarkerReasonHeader).IsEmpty;
                var subject = msg.Subject.ToArray();
                Store.Remove(msg.Sequence);
                changed = true;
                if (isLast && !isMarker) AppendMarker(subject, markerTtl);
            }
            if (changed)
            {
                foreach (var c in _consumerSnapshot) c.OnStreamChanged();
            }
        }
        catch (Exception ex)
        {
            Js.Logger.LogError(ex, "JetStream stream {Stream}: max-age sweep failed", Name);
        }
        finally
        {
            Volatile.Write(ref _ageRunning, 0);
        }
    }

    /// <summary>A subject delete marker: an empty message with the reason, its own TTL and a subject rollup.</summary>
    private void AppendMarker(byte[] subject, long ttlSeconds)
    {
        var hdr = Encoding.ASCII.GetBytes(
            $"NATS/1.0\r\n{MarkerReasonHeader}: MaxAge\r\n{TtlHeader}: {GoDuration.FormatSeconds(ttlSeconds)}\r\n{NatsHeaders.Rollup}: sub\r\n\r\n");
        var r = Store.Append(subject, hdr, default, 0, ttlSeconds * 1_000_000_000);
        if (!r.IsOk)
        {
            Js.Logger.LogWarning("JetStream stream {Stream}: could not store a subject delete marker: {Status}", Name, r.Status);
            return;
        }
        foreach (var c in _consumerSnapshot) c.OnStored(subject);
        KickConsumers();
    }
}
