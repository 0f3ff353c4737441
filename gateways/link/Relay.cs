namespace NatsBroker.Gateways.Link;

/// <summary>
/// Copies bytes both ways between an end user and the core. Each direction reads only after its previous write
/// completed, so a slow reader on either side stops the other side's reads (TCP/Unix-socket backpressure, one
/// buffer per direction, nothing queued without bound). When the user's input ends, the core sees end of input
/// (half-close) and what it still sends is delivered before the user's side closes; when the core's side ends,
/// the user's side is closed after the last bytes, or at once when the user takes none of them (CoreHangupWatch).
/// </summary>
public static class Relay
{
    /// <param name="user">The end user's stream (after TLS, if any).</param>
    /// <param name="core">The link to the core.</param>
    /// <param name="closeUser">Ends the user's connection (TLS close_notify, socket close).</param>
    /// <param name="userSocket">The user's socket, shut down when the user takes nothing after the core hung up (CoreHangupWatch).</param>
    /// <param name="ct">Cancelled to stop reading from the user (drain): the core side still flushes to the user.</param>
    public static async Task RunAsync(Stream user, CoreLink core, Func<Task> closeUser, System.Net.Sockets.Socket userSocket, CancellationToken ct)
    {
        ArgumentNullException.ThrowIfNull(user);
        ArgumentNullException.ThrowIfNull(core);
        ArgumentNullException.ThrowIfNull(closeUser);
        var toUser = new Progress();
        using var hangup = new CoreHangupWatch(core, () => Volatile.Read(ref toUser.Writes), userSocket);
        var fromCore = PumpAsync(core.Stream, user, toUser, CancellationToken.None);
        var fromUser = PumpAsync(user, core.Stream, null, ct);
        var first = await Task.WhenAny(fromCore, fromUser).ConfigureAwait(false);
        if (first == fromUser)
        {
            // The user is done (or we are draining): the core sees EOF, closes its side, and anything it had
            // queued for the user still arrives.
            core.ShutdownSend();
            await Task.WhenAny(fromCore, Task.Delay(TimeSpan.FromSeconds(5), CancellationToken.None)).ConfigureAwait(false);
        }
        await closeUser().ConfigureAwait(false);
        await core.DisposeAsync().ConfigureAwait(false);
        await Task.WhenAll(Quiet(fromCore), Quiet(fromUser)).ConfigureAwait(false);
    }

    /// <summary>Writes completed by one direction (read by the hang-up watch on a timer thread).</summary>
    private sealed class Progress
    {
        public long Writes;
    }

    private static async Task PumpAsync(Stream from, Stream to, Progress? progress, CancellationToken ct)
    {
        using var buffer = new AdaptiveReadBuffer();
        try
        {
            while (true)
            {
                int n = await from.ReadAsync(buffer.Memory, ct).ConfigureAwait(false);
                if (n == 0) return;
                await to.WriteAsync(buffer.Filled(n), CancellationToken.None).ConfigureAwait(false);
                if (progress is not null) Volatile.Write(ref progress.Writes, progress.Writes + 1);
                buffer.Read(n);
            }
        }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException or System.Net.Sockets.SocketException
            or System.Security.Authentication.AuthenticationException or InvalidOperationException)
        {
            // The other side is gone or we are draining: this direction ends; the caller closes both.
        }
    }

    private static async Task Quiet(Task t)
    {
        try { await t.ConfigureAwait(false); }
        catch (Exception ex) when (ex is IOException or ObjectDisposedException or OperationCanceledException) { }
    }
}
