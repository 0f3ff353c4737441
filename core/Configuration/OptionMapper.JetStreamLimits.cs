namespace NatsBroker.Configuration;

// jetstream { limits { ... } } (opts.go parseJetStreamLimits / parseJetStreamLimitsBatch).
internal sealed partial class OptionMapper
{
    /// <summary>
    /// Limit keys nats-server knows that this server does not apply yet; refused rather than ignored.
    /// max_ha_assets is accepted: it limits replicated (R&gt;1) assets, which a server without clustering never has.
    /// </summary>
    private static readonly HashSet<string> UnsupportedJetStreamLimits = new(StringComparer.Ordinal)
    {
        "max_ack_pending", "max_request_batch", "duplicate_window",
    };

    private void JetStreamLimits(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, $"Expected a map to define JetStreamLimits, got {e.Value.Describe()}");
            return;
        }
        // opts.go: a limits block starts from nothing (opts.JetStreamLimits = JSLimitOpts{}).
        o.JetStreamBatchMaxInflightPerStream = 0;
        o.JetStreamBatchMaxInflightTotal = 0;
        o.JetStreamBatchMaxMsgs = 0;
        o.JetStreamBatchTimeout = TimeSpan.FromSeconds(10);
        foreach (var f in e.Value.AsMap())
        {
            string key = f.Key.ToLowerInvariant();
            if (UnsupportedJetStreamLimits.Contains(key))
            {
                Unsupported(f, "jetstream limits");
                continue;
            }
            switch (key)
            {
                case "max_ha_assets":
                    Integer(f, out _, max: int.MaxValue);
                    break;
                case "batch":
                    JetStreamBatchLimits(f);
                    break;
                default:
                    Unknown(f);
                    break;
            }
        }
    }

    /// <summary>
    /// opts.go parseJetStreamLimitsBatch. Values of 0 or less mean nats-server's defaults (stream.go tests each
    /// with <c>&gt; 0</c>), so they are accepted as they are.
    /// </summary>
    private void JetStreamBatchLimits(ConfigEntry e)
    {
        if (e.Value.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, $"Expected a map to define batch limits, got {e.Value.Describe()}");
            return;
        }
        foreach (var f in e.Value.AsMap())
        {
            long n;
            switch (f.Key.ToLowerInvariant())
            {
                case "max_inflight_per_stream":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) o.JetStreamBatchMaxInflightPerStream = (int)n;
                    break;
                case "max_inflight_total":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) o.JetStreamBatchMaxInflightTotal = (int)n;
                    break;
                case "max_msgs":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) o.JetStreamBatchMaxMsgs = (int)n;
                    break;
                case "timeout":
                    // time.ParseDuration of a string; nats-server keeps its default for a value of 0 or less.
                    if (Duration(f, allowSeconds: false, out var d) && d > TimeSpan.Zero) o.JetStreamBatchTimeout = d;
                    break;
                default:
                    Unknown(f);
                    break;
            }
        }
    }
}
