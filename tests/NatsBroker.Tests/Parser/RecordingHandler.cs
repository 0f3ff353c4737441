using System.Buffers;
using System.Text;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Parser;

/// <summary>Records every parser callback as a readable line, for exact comparisons.</summary>
internal sealed class RecordingHandler : IProtocolHandler
{
    public List<string> Events { get; } = [];
    public bool AuthRequired { get; set; }
    public bool Connected { get; set; }
    public bool Headers { get; set; } = true;
    public int Max { get; set; } = 1024 * 1024;
    public bool IsClosing { get; set; }
    /// <summary>Stop the parser after CONNECT, as a connection whose CONNECT awaits a password check does.</summary>
    public bool PauseAfterConnect { get; set; }
    public bool HeadersEnabled => Headers;
    public int MaxPayload => Max;

    public bool RejectBeforeConnect() => AuthRequired && !Connected;
    public void OnConnect(ReadOnlySpan<byte> json) { Connected = true; Events.Add("CONNECT " + S(json)); IsClosing |= PauseAfterConnect; }
    public void OnInfo(ReadOnlySpan<byte> json) => Events.Add("INFO " + S(json));
    public void OnPing() => Events.Add("PING");
    public void OnPong() => Events.Add("PONG");
    public void OnClientError(ReadOnlySpan<byte> text) { Events.Add("ERR " + S(text)); IsClosing = true; }
    public void OnPubArgs(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, int totalSize) { }
    public void OnPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload)
        => Events.Add($"PUB {S(subject)} [{S(reply)}] {headerSize} {Encoding.ASCII.GetString(payload.ToArray())}");
    public void OnSub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, ReadOnlySpan<byte> sid)
        => Events.Add($"SUB {S(subject)} [{S(queue)}] {S(sid)}");
    public void OnUnsub(ReadOnlySpan<byte> sid, long max) => Events.Add($"UNSUB {S(sid)} {max}");
    public void OnProtocolError(ProtocolError error) { Events.Add("ERROR " + error); IsClosing = true; }

    private static string S(ReadOnlySpan<byte> b) => Encoding.ASCII.GetString(b);
}
