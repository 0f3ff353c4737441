using System.Text.Json;
using System.Text.Json.Serialization;

namespace NatsBroker.JetStream.Api;

// nats-server's policy enums (server/stream.go RetentionPolicy / DiscardPolicy, store.go StorageType, consumer.go
// DeliverPolicy / AckPolicy / ReplayPolicy), parsed once where a config is decoded and compared as values after that.
// The JSON text in and out is Go's (their MarshalJSON / UnmarshalJSON). Requests reach these converters only after
// GoSchemas' strict decoding has refused what Go's UnmarshalJSON refuses ("can not unmarshal %q"); the stores' own
// files and snapshot metadata are decoded without it, so a text no policy has becomes Invalid and the config check
// refuses it as it refused the unknown string before ("invalid retention", ...). Hand-written converters: the
// source generator and Native AOT need no reflection for them.

/// <summary>stream.go RetentionPolicy.</summary>
[JsonConverter(typeof(RetentionPolicyConverter))]
public enum RetentionPolicy { Limits, Interest, WorkQueue, Invalid }

/// <summary>stream.go DiscardPolicy (its UnmarshalJSON lower-cases the text first).</summary>
[JsonConverter(typeof(StreamDiscardPolicyConverter))]
public enum StreamDiscardPolicy { Old, New, Invalid }

/// <summary>store.go StorageType.</summary>
[JsonConverter(typeof(StorageTypeConverter))]
public enum StorageType { File, Memory, Invalid }

/// <summary>consumer.go DeliverPolicy ("undefined" decodes as all, as Go's UnmarshalJSON does).</summary>
[JsonConverter(typeof(DeliverPolicyConverter))]
public enum DeliverPolicy { All, Last, New, ByStartSequence, ByStartTime, LastPerSubject, Invalid }

/// <summary>consumer.go AckPolicy (flow_control: 2.14).</summary>
[JsonConverter(typeof(AckPolicyConverter))]
public enum AckPolicy { None, All, Explicit, FlowControl, Invalid }

/// <summary>consumer.go ReplayPolicy.</summary>
[JsonConverter(typeof(ReplayPolicyConverter))]
public enum ReplayPolicy { Instant, Original, Invalid }

/// <summary>The JSON text of each policy, as Go's MarshalJSON writes it.</summary>
internal static class JsPolicyText
{
    public static string Text(this RetentionPolicy p) => p switch
    {
        RetentionPolicy.Limits => "limits",
        RetentionPolicy.Interest => "interest",
        RetentionPolicy.WorkQueue => "workqueue",
        _ => "invalid",
    };

    public static string Text(this StreamDiscardPolicy p) => p switch
    {
        StreamDiscardPolicy.Old => "old",
        StreamDiscardPolicy.New => "new",
        _ => "invalid",
    };

    public static string Text(this StorageType p) => p switch
    {
        StorageType.File => "file",
        StorageType.Memory => "memory",
        _ => "invalid",
    };

    public static string Text(this DeliverPolicy p) => p switch
    {
        DeliverPolicy.All => "all",
        DeliverPolicy.Last => "last",
        DeliverPolicy.New => "new",
        DeliverPolicy.ByStartSequence => "by_start_sequence",
        DeliverPolicy.ByStartTime => "by_start_time",
        DeliverPolicy.LastPerSubject => "last_per_subject",
        _ => "invalid",
    };

    public static string Text(this AckPolicy p) => p switch
    {
        AckPolicy.None => "none",
        AckPolicy.All => "all",
        AckPolicy.Explicit => "explicit",
        AckPolicy.FlowControl => "flow_control",
        _ => "invalid",
    };

    public static string Text(this ReplayPolicy p) => p switch
    {
        ReplayPolicy.Instant => "instant",
        ReplayPolicy.Original => "original",
        _ => "invalid",
    };

    public static RetentionPolicy ParseRetention(string? s) => s switch
    {
        "limits" => RetentionPolicy.Limits,
        "interest" => RetentionPolicy.Interest,
        "workqueue" => RetentionPolicy.WorkQueue,
        _ => RetentionPolicy.Invalid,
    };

    public static StreamDiscardPolicy ParseDiscard(string? s) => s?.ToLowerInvariant() switch
    {
        "old" => StreamDiscardPolicy.Old,
        "new" => StreamDiscardPolicy.New,
        _ => StreamDiscardPolicy.Invalid,
    };

    public static StorageType ParseStorage(string? s) => s switch
    {
        "file" => StorageType.File,
        "memory" => StorageType.Memory,
        _ => StorageType.Invalid,
    };

    public static DeliverPolicy ParseDeliver(string? s) => s switch
    {
        "all" or "undefined" => DeliverPolicy.All,
        "last" => DeliverPolicy.Last,
        "new" => DeliverPolicy.New,
        "by_start_sequence" => DeliverPolicy.ByStartSequence,
        "by_start_time" => DeliverPolicy.ByStartTime,
        "last_per_subject" => DeliverPolicy.LastPerSubject,
        _ => DeliverPolicy.Invalid,
    };

    public static AckPolicy ParseAck(string? s) => s switch
    {
        "none" => AckPolicy.None,
        "all" => AckPolicy.All,
        "explicit" => AckPolicy.Explicit,
        "flow_control" => AckPolicy.FlowControl,
        _ => AckPolicy.Invalid,
    };

    public static ReplayPolicy ParseReplay(string? s) => s switch
    {
        "instant" => ReplayPolicy.Instant,
        "original" => ReplayPolicy.Original,
        _ => ReplayPolicy.Invalid,
    };

    /// <summary>A JSON string's text; any other token (only in files decoded without GoSchemas) is no policy.</summary>
    public static string? ReadText(ref Utf8JsonReader reader)
    {
        if (reader.TokenType == JsonTokenType.String) return reader.GetString();
        reader.Skip();
        return null;
    }
}

internal sealed class RetentionPolicyConverter : JsonConverter<RetentionPolicy>
{
    // A null (the stores\' files only) is no policy, as a null string was before; value types skip nulls otherwise.
    public override bool HandleNull => true;

    public override RetentionPolicy Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        JsPolicyText.ParseRetention(JsPolicyText.ReadText(ref reader));

    public override void Write(Utf8JsonWriter writer, RetentionPolicy value, JsonSerializerOptions options) => writer.WriteStringValue(value.Text());
}

internal sealed class StreamDiscardPolicyConverter : JsonConverter<StreamDiscardPolicy>
{
    // A null (the stores\' files only) is no policy, as a null string was before; value types skip nulls otherwise.
    public override bool HandleNull => true;

    public override StreamDiscardPolicy Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        JsPolicyText.ParseDiscard(JsPolicyText.ReadText(ref reader));

    public override void Write(Utf8JsonWriter writer, StreamDiscardPolicy value, JsonSerializerOptions options) => writer.WriteStringValue(value.Text());
}

internal sealed class StorageTypeConverter : JsonConverter<StorageType>
{
    // A null (the stores\' files only) is no policy, as a null string was before; value types skip nulls otherwise.
    public override bool HandleNull => true;

    public override StorageType Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        JsPolicyText.ParseStorage(JsPolicyText.ReadText(ref reader));

    public override void Write(Utf8JsonWriter writer, StorageType value, JsonSerializerOptions options) => writer.WriteStringValue(value.Text());
}

internal sealed class DeliverPolicyConverter : JsonConverter<DeliverPolicy>
{
    // A null (the stores\' files only) is no policy, as a null string was before; value types skip nulls otherwise.
    public override bool HandleNull => true;

    public override DeliverPolicy Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        JsPolicyText.ParseDeliver(JsPolicyText.ReadText(ref reader));

    public override void Write(Utf8JsonWriter writer, DeliverPolicy value, JsonSerializerOptions options) => writer.WriteStringValue(value.Text());
}

internal sealed class AckPolicyConverter : JsonConverter<AckPolicy>
{
    // A null (the stores\' files only) is no policy, as a null string was before; value types skip nulls otherwise.
    public override bool HandleNull => true;

    public override AckPolicy Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        JsPolicyText.ParseAck(JsPolicyText.ReadText(ref reader));

    public override void Write(Utf8JsonWriter writer, AckPolicy value, JsonSerializerOptions options) => writer.WriteStringValue(value.Text());
}

internal sealed class ReplayPolicyConverter : JsonConverter<ReplayPolicy>
{
    // A null (the stores\' files only) is no policy, as a null string was before; value types skip nulls otherwise.
    public override bool HandleNull => true;

    public override ReplayPolicy Read(ref Utf8JsonReader reader, Type typeToConvert, JsonSerializerOptions options) =>
        JsPolicyText.ParseReplay(JsPolicyText.ReadText(ref reader));

    public override void Write(Utf8JsonWriter writer, ReplayPolicy value, JsonSerializerOptions options) => writer.WriteStringValue(value.Text());
}
