using System.Buffers;
using NatsBroker.Connections;
using NatsBroker.Transport;

namespace NatsBroker.Tests.Connections;

/// <summary>
/// <see cref="Connection.OnHeartbeat"/> for a protocol that is not NATS, with the heartbeat's time passed in: the
/// handshake deadline comes first and alone, then keep-alive; the handler only says what to send.
/// </summary>
public sealed class HeartbeatTests
{
    private sealed class Handler : IConnectionHandler
    {
        public Connection Connection { get; set; } = null!;
        public TimeSpan? Handshake { get; set; }
        public int HandshakeTimeouts, Pings, Stales;

        public bool OnStart() => true;
        public SequencePosition OnInput(in ReadOnlySequence<byte> buffer, out SequencePosition examined)
        {
            examined = buffer.End;
            return buffer.End;
        }
        public Task? CompletePendingInput() => null;
        public void OnSlowConsumer(CloseReason reason) { }
        public void OnProducerStalled() { }
        public TimeSpan? HandshakeTimeout => Handshake;
        public void OnHandshakeTimeout()
        {
            HandshakeTimeouts++;
            Connection.CloseAfterFlush(CloseReason.AuthenticationTimeout);
        }
        public KeepAlivePolicy KeepAlivePolicy => new(1000, 1, KeepAlivePolicy.FirstPingMs, DelayWhileActive: false);
        public void SendPing() => Pings++;
        public void OnStale()
        {
            Stales++;
            Connection.CloseAfterFlush(CloseReason.StaleConnection);
        }
        public void OnLoopFault(Exception exception) { }
        public void OnClosing() { }
        public void OnClosed() { }
    }

    private static (Connection, Handler) Create(TimeSpan? handshake)
    {
        // Not run: the heartbeat needs no read loop.
        var (server, _) = InMemoryTransport.CreatePair();
        var handler = new Handler { Handshake = handshake };
        var connection = new Connection(server, TransportKind.InMemory, new OutboundLimits(1 << 20, TimeSpan.FromSeconds(10)), handler);
        handler.Connection = connection;
        return (connection, handler);
    }

    [Fact]
    public void The_handshake_deadline_fires_at_its_time_from_the_connect_and_no_ping_goes_out_before()
    {
        var (c, h) = Create(TimeSpan.FromMilliseconds(2000));
        long t0 = c.ConnectedTicks;
        c.OnHeartbeat(t0 + 1999);
        Assert.Equal((0, 0), (h.HandshakeTimeouts, h.Pings));
        c.OnHeartbeat(t0 + 2000);
        Assert.Equal(1, h.HandshakeTimeouts);
        Assert.True(c.IsClosing);
        Assert.Equal(CloseReason.AuthenticationTimeout, c.ClosedReason);
        // Closing: the heartbeat does nothing more.
        c.OnHeartbeat(t0 + 10_000);
        Assert.Equal((1, 0), (h.HandshakeTimeouts, h.Pings));
    }

    [Fact]
    public void A_handshake_step_that_bounds_its_own_wait_is_not_timed_out()
    {
        var (c, h) = Create(Timeout.InfiniteTimeSpan);
        c.OnHeartbeat(c.ConnectedTicks + 3_600_000);
        Assert.Equal((0, 0), (h.HandshakeTimeouts, h.Pings));
        Assert.False(c.IsClosing);
    }

    [Fact]
    public void After_the_handshake_keep_alive_pings_then_closes_as_stale()
    {
        var (c, h) = Create(null);
        long t0 = c.ConnectedTicks;
        c.OnHeartbeat(t0 + 999);
        Assert.Equal(0, h.Pings);
        // First PING between 1 s and 1.2 s after the connect (firstPingInterval plus up to 20%).
        c.OnHeartbeat(t0 + 1200);
        Assert.Equal(1, h.Pings);
        Assert.Equal(1, c.KeepAlive.PingsOut);
        c.OnHeartbeat(t0 + 2200);
        Assert.Equal((1, 1), (h.Pings, h.Stales));
        Assert.Equal(CloseReason.StaleConnection, c.ClosedReason);
    }
}
