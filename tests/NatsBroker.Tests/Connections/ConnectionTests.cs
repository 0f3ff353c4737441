using System.Buffers;
using System.Text;
using NatsBroker.Connections;
using NatsBroker.Transport;

namespace NatsBroker.Tests.Connections;

/// <summary>
/// <see cref="Connection"/> with a protocol that is not NATS (an echo of each line): the read loop, outbound, close
/// and statistics work for any handler, as routes and leaf nodes will need.
/// </summary>
public sealed class ConnectionTests
{
    /// <summary>Echoes each complete line; "QUIT" queues "BYE" and closes after the flush.</summary>
    private sealed class EchoHandler : IConnectionHandler
    {
        public Connection Connection { get; set; } = null!;
        public int Closing, Closed, Started;

        public bool OnStart()
        {
            Started++;
            Connection.Enqueue("HELLO\r\n"u8);
            return true;
        }

        public SequencePosition OnInput(in ReadOnlySequence<byte> buffer, out SequencePosition examined)
        {
            var reader = new SequenceReader<byte>(buffer);
            while (reader.TryReadTo(out ReadOnlySequence<byte> line, "\r\n"u8))
            {
                Connection.CountInbound(line.Length);
                if (line.FirstSpan.SequenceEqual("QUIT"u8))
                {
                    Connection.Enqueue("BYE\r\n"u8, wake: false);
                    Connection.CloseAfterFlush(CloseReason.ClientClosed);
                    break;
                }
                lock (Connection.OutboundLock)
                {
                    Connection.WriteLocked(line);
                    Connection.WriteLocked("\r\n"u8);
                    Connection.CountOutboundLocked(line.Length);
                }
                Connection.Batch.Add(Connection);
            }
            examined = buffer.End;
            return reader.Position;
        }

        public Task? CompletePendingInput() => null;
        public void OnSlowConsumer(CloseReason reason) { }
        public void OnProducerStalled() { }
        public TimeSpan? HandshakeTimeout => null;
        public void OnHandshakeTimeout() { }
        public KeepAlivePolicy KeepAlivePolicy => default;
        public void SendPing() { }
        public void OnStale() { }

        public void OnLoopFault(Exception exception) => throw new InvalidOperationException("loop fault", exception);
        public void OnClosing() => Closing++;
        public void OnClosed() => Closed++;
    }

    private static (Connection Connection, EchoHandler Handler, StreamLines Peer, Task Run) Start()
    {
        var (server, client) = InMemoryTransport.CreatePair();
        var handler = new EchoHandler();
        var connection = new Connection(server, TransportKind.InMemory, new OutboundLimits(1 << 20, TimeSpan.FromSeconds(10)), handler);
        handler.Connection = connection;
        return (connection, handler, new StreamLines(client), connection.RunAsync());
    }

    [Fact]
    public async Task Any_protocol_runs_on_it_lines_split_across_writes_included()
    {
        var (connection, handler, peer, run) = Start();
        Assert.Equal("HELLO\r\n", await peer.ReadUntilAsync("HELLO\r\n"));
        await peer.SendAsync("one\r\ntw");
        Assert.Equal("one\r\n", await peer.ReadUntilAsync("one\r\n"));
        await peer.SendAsync("o\r\n");
        Assert.Equal("two\r\n", await peer.ReadUntilAsync("two\r\n"));
        Assert.Equal(2, connection.InMsgs);
        Assert.Equal(6, connection.InBytes);
        Assert.Equal(2, connection.OutMsgs);
        await peer.Stream.DisposeAsync();
        await run.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.Equal(CloseReason.ClientClosed, connection.ClosedReason);
        Assert.NotNull(connection.ClosedAt);
        Assert.Equal((1, 1, 1), (handler.Started, handler.Closing, handler.Closed));
    }

    [Fact]
    public async Task Close_after_flush_writes_what_is_queued_then_ends_the_stream()
    {
        var (connection, handler, peer, run) = Start();
        await peer.ReadUntilAsync("HELLO\r\n");
        await peer.SendAsync("a\r\nQUIT\r\nnot echoed\r\n");
        Assert.Equal("a\r\nBYE\r\n", await peer.ReadToEndAsync());
        await run.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.True(connection.IsClosing);
        Assert.Equal(1, handler.Closed);
    }

    [Fact]
    public async Task Close_now_drops_what_is_queued()
    {
        var (connection, _, peer, run) = Start();
        await peer.ReadUntilAsync("HELLO\r\n");
        connection.CloseNow(CloseReason.ServerShutdown);
        connection.Enqueue(Encoding.ASCII.GetBytes("late\r\n"));
        Assert.Equal("", await peer.ReadToEndAsync());
        await run.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.Equal(CloseReason.ServerShutdown, connection.ClosedReason);
        Assert.Equal(0, connection.PendingBytes);
    }
}
