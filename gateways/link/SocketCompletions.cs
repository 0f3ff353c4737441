namespace NatsBroker.Gateways.Link;

/// <summary>
/// Runs socket continuations on the runtime's socket-engine (epoll) thread instead of handing each one to the
/// thread pool. A gateway's work after a read is short (decrypt a record, re-frame, one non-blocking send to the
/// other side), so the hand-off, one more thread wake-up per read in each direction, costs more than the work:
/// on a loaded 2-core machine every extra wake-up is a scheduling wait (gateways/README.md, "Relay cost").
/// The CPU-heavy per-connection work (TLS handshakes, certificate checks, the CONNECT rewrite and its signature)
/// is moved back to the thread pool by <see cref="ThreadPoolResumingStream"/>.
/// </summary>
public static class SocketCompletions
{
    /// <summary>The runtime reads this variable once, when the first socket operation starts (SocketAsyncEngine.Unix.cs).</summary>
    public const string InlineVariable = "DOTNET_SYSTEM_NET_SOCKETS_INLINE_COMPLETIONS";

    /// <summary>Turns inline completions on unless the variable is already set (an operator may set it to 0).</summary>
    public static void PreferInline()
    {
        if (Environment.GetEnvironmentVariable(InlineVariable) is null) Environment.SetEnvironmentVariable(InlineVariable, "1");
    }
}
