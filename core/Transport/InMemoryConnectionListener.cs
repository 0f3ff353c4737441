using System.Threading.Channels;
using NatsBroker.Connections;

namespace NatsBroker.Transport;

/// <summary>
/// An in-process listener: <see cref="Connect"/> makes a pipe pair (<see cref="InMemoryTransport"/>), queues the
/// server end to be accepted and returns the client end. Connections accepted here run exactly as socket ones do;
/// protocol tests use it to run without sockets.
/// </summary>
public sealed class InMemoryConnectionListener : IConnectionListener
{
    private readonly Channel<AcceptedConnection> _pending = Channel.CreateUnbounded<AcceptedConnection>(new UnboundedChannelOptions { SingleReader = true });

    public string Address => "in-memory";

    /// <summary>A new connection to the server: the client end of the pipe pair.</summary>
    /// <exception cref="ObjectDisposedException">The listener is closed.</exception>
    public Stream Connect()
    {
        var (server, client) = InMemoryTransport.CreatePair();
        if (!_pending.Writer.TryWrite(new AcceptedConnection(server, TransportKind.InMemory, "", 0)))
        {
            server.Dispose();
            client.Dispose();
            throw new ObjectDisposedException(nameof(InMemoryConnectionListener));
        }
        return client;
    }

    public async ValueTask<AcceptedConnection?> AcceptAsync(CancellationToken cancellationToken)
    {
        try
        {
            if (await _pending.Reader.WaitToReadAsync(cancellationToken).ConfigureAwait(false) && _pending.Reader.TryRead(out var next)) return next;
        }
        catch (OperationCanceledException)
        {
            // Closing: as a socket listener does, report no more connections.
        }
        return null;
    }

    public void Dispose()
    {
        _pending.Writer.TryComplete();
        // Connections queued but never accepted: their client ends see EOF.
        while (_pending.Reader.TryRead(out var orphan)) orphan.Stream.Dispose();
    }
}
