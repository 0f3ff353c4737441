using System.Buffers.Text;
using System.Text.Json;
using NatsBroker.JetStream.Api;

namespace NatsBroker.JetStream;

// $JS.API.CONSUMER.RESET.<stream>.<consumer> (nats-server 2.14 consumer.go processResetReq, jetstream_api.go
// JSApiConsumerResetRequest / JSApiConsumerResetResponse): body empty (back to the ack floor) or {"seq":N}; the
// answer is the consumer's info with "reset_seq" (always written, also beside an error, as Go's field has no
// omitempty). nats-server subscribes this subject per consumer; a missing stream or consumer gets no answer.
public sealed partial class JetStreamService
{
    private const string ConsumerResetType = "consumer_reset_response";

    private bool ConsumerReset(ApiRequest req, string streamName, string name)
    {
        if (req.Reply.Length == 0) return true;
        // A missing stream or consumer: nats-server has no subscription for it and the $JS.API import drops the
        // request (client.go processServiceImport only skips MSG.NEXT and DIRECT.GET), so nothing answers.
        if (!req.JetStream.TryGet(streamName, out var stream) || !stream.TryGetConsumer(name, out var c)) return false;
        if (ApiLevel.RequiresMore(req.Headers)) return Respond(req, ResetJson(JsJson.Error(P + ConsumerResetType, JsErrors.RequiredApiLevel), 0), ok: false);
        // processResetReq: plain json.Unmarshal of a non-empty body (unknown fields pass; a blank one is an error).
        var r = new ConsumerResetRequest();
        if (!req.Body.IsEmpty && !JsJson.TryParseUnmarshal(req.Body, JsDirectJsonContext.Default.ConsumerResetRequest, GoSchemas.ConsumerResetRequest, out r, out var perr))
            return Respond(req, ResetJson(JsJson.Error(P + ConsumerResetType, perr!), 0), ok: false);
        if (c.Reset(r!.Seq ?? 0, out var why) is not { } seq)
            return Respond(req, ResetJson(JsJson.Error(P + ConsumerResetType, JsErrors.ConsumerInvalidReset(why!)), 0), ok: false);
        return Respond(req, ResetJson(ConsumerInfoJson(ConsumerResetType, c.Info()), seq), ok: true);
    }

    /// <summary>processResetReq answers with sendInternalAccountMsg: not audited, not counted.</summary>
    private static bool Respond(ApiRequest req, byte[] json, bool ok)
    {
        ReplyUncounted(req, json);
        return ok;
    }

    /// <summary>The response object with ,"reset_seq":N before its closing brace.</summary>
    private static byte[] ResetJson(byte[] json, ulong seq)
    {
        var tail = ",\"reset_seq\":"u8;
        var buf = new byte[json.Length + tail.Length + 20];
        json.AsSpan(0, json.Length - 1).CopyTo(buf);
        int n = json.Length - 1;
        tail.CopyTo(buf.AsSpan(n));
        n += tail.Length;
        Utf8Formatter.TryFormat(seq, buf.AsSpan(n), out int w);
        n += w;
        buf[n++] = (byte)'}';
        return buf.AsSpan(0, n).ToArray();
    }
}
