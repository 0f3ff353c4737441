using System.Text.Json;
using NatsBroker.Protocol;

namespace NatsBroker.Server;

/// <summary>Protocol lines to this client (INFO, -ERR, +OK, PONG), queued on the connection's outbound buffer.</summary>
public sealed partial class ClientConnection
{
    /// <summary>Queue a protocol line for this client (the caller or the batch end wakes the writer).</summary>
    /// <param name="wake">False when the caller wakes the writer itself (e.g. right after, to close).</param>
    internal void EnqueueProto(ReadOnlySpan<byte> bytes, bool wake = true) => _conn.Enqueue(bytes, wake);

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
}
