using System.Buffers;
using System.Text;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Parser;

/// <summary>
/// Records every <see cref="RouteProtocolParser"/> callback as a readable line, and writes each op back with
/// <see cref="RouteProtocolWriter"/> into <see cref="Rewritten"/>, so a captured stream can be compared byte for byte
/// with what the writer makes of it.
/// </summary>
internal sealed class RouteRecordingHandler : IRouteProtocolHandler
{
    private byte[] _pinned = [];

    public RouteRecordingHandler(ConnectionKind kind) => Kind = kind;

    public ConnectionKind Kind { get; }
    public List<string> Events { get; } = [];
    public MemoryStream Rewritten { get; } = new();
    public bool ExpectConnect { get; set; }
    public bool InfoBeforeConnectAllowed { get; set; }
    public bool Connected { get; set; }
    public bool Headers { get; set; } = true;
    public int Max { get; set; } = int.MaxValue;
    public bool IsClosing { get; set; }
    public bool Lnocu { get; set; }
    /// <summary>Take <c>lnocu</c> and <c>route_account</c> from the peer's INFO, as a route does.</summary>
    public bool LearnFromInfo { get; set; }

    public string Pinned
    {
        get => Encoding.ASCII.GetString(_pinned);
        set => _pinned = Encoding.ASCII.GetBytes(value);
    }

    public ReadOnlySpan<byte> PinnedAccount => _pinned;
    public bool LeafUnsubHasOrigin => Lnocu;
    public bool HeadersEnabled => Headers;
    public int MaxPayload => Max;

    public bool RejectBeforeConnect(bool isInfo) => ExpectConnect && !Connected && !(isInfo && InfoBeforeConnectAllowed);

    public void OnConnect(ReadOnlySpan<byte> json)
    {
        Connected = true;
        Events.Add("CONNECT " + S(json));
        Raw("CONNECT "u8, json);
    }

    public void OnInfo(ReadOnlySpan<byte> json)
    {
        Events.Add("INFO " + S(json));
        Raw("INFO "u8, json);
        if (!LearnFromInfo) return;
        string text = S(json);
        if (text.Contains("\"lnocu\":true", StringComparison.Ordinal)) Lnocu = true;
        const string key = "\"route_account\":\"";
        int i = text.IndexOf(key, StringComparison.Ordinal);
        if (i >= 0)
        {
            int start = i + key.Length;
            Pinned = text[start..text.IndexOf('"', start)];
        }
    }

    public void OnPing()
    {
        Events.Add("PING");
        Raw("PING"u8, default);
    }

    public void OnPong()
    {
        Events.Add("PONG");
        Raw("PONG"u8, default);
    }

    public void OnError(ReadOnlySpan<byte> text)
    {
        Events.Add("-ERR " + S(text));
        IsClosing = true;
    }

    public void OnRemoteSub(in RemoteInterest interest) => Interest(interest);
    public void OnRemoteUnsub(in RemoteInterest interest) => Interest(interest);

    private void Interest(in RemoteInterest i)
    {
        Events.Add($"{i.Op} o={S(i.Origin)} a={S(i.Account)} s={S(i.Subject)} q={S(i.Queue)} w={i.Weight} args={S(i.Arguments)}");
        var op = i.Op switch
        {
            RouteOp.Sub => Kind == ConnectionKind.Leaf ? RouteProtocolWriter.InterestOp.LeafSub : RouteProtocolWriter.InterestOp.RouteSub,
            RouteOp.Unsub => Kind == ConnectionKind.Leaf ? RouteProtocolWriter.InterestOp.LeafUnsub : RouteProtocolWriter.InterestOp.RouteUnsub,
            RouteOp.LeafSub => RouteProtocolWriter.InterestOp.LeafSub,
            _ => RouteProtocolWriter.InterestOp.LeafUnsub,
        };
        // A pinned route leaves the account out of the line.
        var account = _pinned.Length > 0 ? default : i.Account;
        var buf = new byte[RouteProtocolWriter.InterestLength(op, i.Origin, account, i.Subject, i.Queue, i.Weight)];
        int n = RouteProtocolWriter.WriteInterest(buf, op, i.Origin, account, i.Subject, i.Queue, i.Weight);
        Assert.Equal(buf.Length, n);
        Rewritten.Write(buf);
    }

    public void OnMessage(in RouteMessageArgs m, in ReadOnlySequence<byte> payload)
    {
        var queues = new List<string>();
        foreach (var q in m.QueueNames) queues.Add(S(q));
        var body = payload.ToArray();
        Events.Add($"{m.Op} o={S(m.Origin)} a={S(m.Account)} s={S(m.Subject)} r={S(m.Reply)} q=[{string.Join(",", queues)}] "
            + $"h={m.HeaderSize} n={m.TotalSize} {Encoding.ASCII.GetString(body)}");
        var account = _pinned.Length > 0 ? default : m.Account;
        var buf = new byte[RouteProtocolWriter.MessageHeaderLength(Kind, m.Origin, account, m.Subject, m.Reply, m.Queues, m.HeaderSize, m.TotalSize)];
        int n = RouteProtocolWriter.WriteMessageHeader(buf, Kind, m.Origin, account, m.Subject, m.Reply, m.Queues, m.HeaderSize, m.TotalSize);
        Assert.Equal(buf.Length, n);
        Rewritten.Write(buf);
        Rewritten.Write(body);
        Rewritten.Write("\r\n"u8);
    }

    public void OnProtocolError(ProtocolError error)
    {
        Events.Add("ERROR " + error);
        IsClosing = true;
    }

    private void Raw(ReadOnlySpan<byte> op, ReadOnlySpan<byte> arg)
    {
        Rewritten.Write(op);
        Rewritten.Write(arg);
        Rewritten.Write("\r\n"u8);
    }

    private static string S(ReadOnlySpan<byte> b) => Encoding.ASCII.GetString(b);
}
