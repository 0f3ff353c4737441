using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.JetStream;

/// <summary>
/// The JetStream API is plain request/reply with JSON on $JS.API.* subjects. A server without JetStream answers
/// with "no responders" (503), an error, or not at all: each of these becomes "not supported".
/// </summary>
internal sealed class JsApi
{
    private readonly RawConnection _c;
    private readonly string _inbox;
    private readonly TimeSpan _timeout;

    private JsApi(RawConnection c, string inbox, TimeSpan timeout)
    {
        _c = c;
        _inbox = inbox;
        _timeout = timeout;
    }

    public static JsApi Open(ScenarioContext ctx)
    {
        RawConnection c;
        try
        {
            c = ctx.Connect("js-api", headers: true);
        }
        catch (Exception ex) when (ex is SocketException or IOException or InvalidOperationException)
        {
            throw new ScenarioFailedException("cannot connect: " + ex.Message, ex);
        }

        string inbox = "_INBOX.api." + ctx.RunId;
        c.Send($"SUB {inbox} 1\r\n");
        c.Flush();
        c.SetReceiveTimeout(ctx.RequestTimeout);
        return new JsApi(c, inbox, ctx.RequestTimeout);
    }

    /// <summary>Sends one API request and returns the JSON reply; "not supported" on 503 or timeout.</summary>
    public JsonElement Request(string subject, string json)
    {
        var body = Encoding.UTF8.GetBytes(json);
        _c.Send($"PUB {subject} {_inbox} {body.Length}\r\n");
        _c.Send(body);
        _c.Send("\r\n"u8);
        var r = _c.Reader;
        try
        {
            while (true)
            {
                switch (r.Next())
                {
                    case FrameKind.Msg:
                        using (var doc = JsonDocument.Parse(r.Payload.ToArray()))
                        {
                            return doc.RootElement.Clone();
                        }

                    case FrameKind.HMsg:
                        int st = r.Status;
                        if (st == 503)
                        {
                            throw new NotSupportedByServerException($"no responders for {subject} (JetStream not enabled?)");
                        }

                        if (r.PayloadLength > 0)
                        {
                            using var doc = JsonDocument.Parse(r.Payload.ToArray());
                            return doc.RootElement.Clone();
                        }

                        throw new NotSupportedByServerException($"{subject}: status {st} reply");
                    case FrameKind.Err:
                        throw new NotSupportedByServerException($"{subject}: server error {r.LineText}");
                    default:
                        continue;
                }
            }
        }
        catch (SocketException ex) when (ex.SocketErrorCode is SocketError.TimedOut or SocketError.WouldBlock)
        {
            throw new NotSupportedByServerException($"no reply to {subject} within {_timeout.TotalSeconds:0} s", ex);
        }
        catch (JsonException ex)
        {
            throw new NotSupportedByServerException($"{subject}: reply is not JSON: {ex.Message}", ex);
        }
    }

    /// <summary>Request that must succeed; an "error" member in the reply becomes "not supported" with its text.</summary>
    public JsonElement Call(string subject, string json)
    {
        var e = Request(subject, json);
        if (e.ValueKind == JsonValueKind.Object && e.TryGetProperty("error", out var err))
        {
            throw new NotSupportedByServerException($"{subject} failed: {err}");
        }

        return e;
    }

    public void CreateStream(string name, string subject, string storage, string extra = "")
    {
        Call($"$JS.API.STREAM.CREATE.{name}",
            $"{{\"name\":\"{name}\",\"subjects\":[\"{subject}\"],\"storage\":\"{storage}\",\"num_replicas\":1{extra}}}");
    }

    public long StreamMessages(string name)
    {
        var e = Call($"$JS.API.STREAM.INFO.{name}", "");
        return e.GetProperty("state").GetProperty("messages").GetInt64();
    }

    /// <summary>Creates a durable pull consumer (DURABLE.CREATE; falls back to CONSUMER.CREATE.stream.name).</summary>
    public void CreateDurablePull(string stream, string durable, string extra = "")
    {
        string cfg = $"{{\"stream_name\":\"{stream}\",\"config\":{{\"durable_name\":\"{durable}\",\"ack_policy\":\"explicit\",\"deliver_policy\":\"all\",\"max_ack_pending\":20000{extra}}}}}";
        try
        {
            Call($"$JS.API.CONSUMER.DURABLE.CREATE.{stream}.{durable}", cfg);
        }
        catch (NotSupportedByServerException)
        {
            Call($"$JS.API.CONSUMER.CREATE.{stream}.{durable}", cfg);
        }
    }
}
