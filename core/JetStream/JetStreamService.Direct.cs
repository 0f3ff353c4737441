namespace NatsBroker.JetStream;

// Which stream answers $JS.API.DIRECT.GET.<stream>: the stream itself when it allows direct gets, else a mirror of
// it with mirror_direct (nats-server: mirrors with mirror_direct join the origin's direct-get queue group).
public sealed partial class JetStreamService
{
    private bool TryDirectStream(string name, out JsStream stream)
    {
        if (Account.TryGet(name, out stream) && stream.Config.AllowDirect) return true;
        foreach (var s in Account.Streams())
        {
            if (s.Config.MirrorDirect && s.Config.Mirror?.Name == name)
            {
                stream = s;
                return true;
            }
        }
        stream = null!;
        return false;
    }
}
