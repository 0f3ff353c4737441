using System.Text.Json;

namespace NatsBroker.Client.Batch;

/// <summary>The error a JetStream server answered with (code, err_code, description).</summary>
public sealed record BatchApiError(int Code, int ErrCode, string Description)
{
    public override string ToString() => $"{Description} (code {Code}, err_code {ErrCode})";
}

/// <summary>A batch publish the server refused.</summary>
public sealed class BatchPublishException(BatchApiError error) : Exception(error.ToString())
{
    public BatchApiError Error { get; } = error;
}

/// <summary>The PubAck that ends a batch: the last stored sequence, and the batch id and size (ADR-50 "batch"/"count").</summary>
public sealed record BatchPubAck(string Stream, ulong Sequence, string? BatchId, ulong Count, string? Domain)
{
    /// <summary>Parses a PubAck; throws <see cref="BatchPublishException"/> for an error PubAck.</summary>
    public static BatchPubAck Parse(ReadOnlySpan<byte> json)
    {
        using var doc = JsonDocument.Parse(json.ToArray());
        var root = doc.RootElement;
        if (root.TryGetProperty("error", out var err)) throw new BatchPublishException(ParseError(err));
        return new BatchPubAck(
            root.TryGetProperty("stream", out var s) ? s.GetString() ?? "" : "",
            root.TryGetProperty("seq", out var q) ? q.GetUInt64() : 0,
            root.TryGetProperty("batch", out var b) ? b.GetString() : null,
            root.TryGetProperty("count", out var c) ? c.GetUInt64() : 0,
            root.TryGetProperty("domain", out var d) ? d.GetString() : null);
    }

    internal static BatchApiError ParseError(JsonElement err) => new(
        err.TryGetProperty("code", out var c) ? c.GetInt32() : 0,
        err.TryGetProperty("err_code", out var e) ? e.GetInt32() : 0,
        err.TryGetProperty("description", out var d) ? d.GetString() ?? "" : "");
}
