using NatsBroker.Contracts;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// A stream restored from a snapshot (Snapshots/StreamRestorer.cs).
internal sealed partial class JsStream
{
    /// <summary>A memory stream around the store a restore filled (file streams reopen theirs with <see cref="Open"/>).</summary>
    internal static JsStream FromRestoredStore(JsAccount account, StreamConfig config, DateTime created, IStreamStore store) =>
        new(account, config, created, store, dir: null);
}
