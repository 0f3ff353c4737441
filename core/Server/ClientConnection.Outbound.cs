using System.Text.Json;
using NatsBroker.Protocol;

namespace NatsBroker.Server;

public sealed partial class ClientConnection
{
    // Environment.TickCount64 when the in-flight socket write started, 0 when idle; the heartbeat reads it
    // to enforce write_deadline.
    private long _writeStartTicks;

    /// <summary>Queue a protocol line for this client (the caller or the batch end wakes the writer).</summary>
    /// <param name="wake">False when the caller wakes the writer itself (e.g. right after, to close).</param>
    internal void EnqueueProto(ReadOnlySpan<byte> bytes, bool wake = true)
    {
        lock (_out.Lock)
        {
            if (_closeStarted != 0) return;
            _out.Write(bytes);
        }
        if (wake) _writeSignal.Set();
    }

    /// <summary>-ERR '...' to this client (the connection stays open unless the caller closes it).</summary>
    internal void SendError(string text, bool wake = true)
    {
        EnqueueProto(ProtocolWriter.Error(text), wake);
        _server.Log.ClientError(Id, RemoteIp, text);
    }

    private void SendInfo()
    {
        var info = _server.CreateInfo(this);
        var json = JsonSerializer.SerializeToUtf8Bytes(info, ProtocolJsonContext.Default.ServerInfo);
        var line = new byte[json.Length + 7];
        "INFO "u8.CopyTo(line);
        json.CopyTo(line.AsSpan(5));
        line[^2] = (byte)'\r';
        line[^1] = (byte)'\n';
        EnqueueProto(line);
    }

    /// <summary>Pushes an async INFO (e.g. lame duck mode) to a client that has completed CONNECT.</summary>
    internal void SendAsyncInfo() { if (_connectReceived) SendInfo(); }

    /// <summary>The destination's outbound is over max_pending: close it as a slow consumer. Caller holds _out.Lock.</summary>
    private void MarkSlowConsumerLocked()
    {
        if (_closing) return;
        _closing = true;
        ClosedReason ??= CloseReason.SlowConsumerPendingBytes;
        _out.Discard();
        SignalDrainedLocked();
        _server.CountSlowConsumer();
        _server.Log.SlowConsumerPending(Id, RemoteIp);
        // Shut the transport down outside the lock, from the thread pool.
        ThreadPool.UnsafeQueueUserWorkItem(static c => c.CloseNow(CloseReason.SlowConsumerPendingBytes), this, preferLocal: false);
    }

    /// <summary>The single writer: waits for a signal, writes everything queued in one write, repeats.</summary>
    private async Task WriteLoopAsync()
    {
        try
        {
            while (true)
            {
                await _writeSignal.WaitAsync().ConfigureAwait(false);
                while (true)
                {
                    List<ArraySegment<byte>> chunks;
                    lock (_out.Lock)
                    {
                        if (_closeStarted != 0) return;
                        chunks = _out.TakeForWrite();
                    }
                    if (chunks.Count == 0) break;
                    Volatile.Write(ref _writeStartTicks, Environment.TickCount64);
                    try
                    {
                        foreach (var chunk in chunks) await _stream.WriteAsync(chunk.AsMemory()).ConfigureAwait(false);
                    }
                    finally
                    {
                        Volatile.Write(ref _writeStartTicks, 0);
                        lock (_out.Lock)
                        {
                            _out.Written(chunks);
                            SignalDrainedLocked();
                        }
                    }
                }
                if (_closing)
                {
                    if (_closeAfterFlush) ShutdownTransport();
                    return;
                }
            }
        }
        catch (Exception ex) when (ex is IOException or System.Net.Sockets.SocketException or ObjectDisposedException or InvalidOperationException)
        {
            CloseNow(CloseReason.WriteError);
        }
    }
}
