using System.Buffers.Binary;
using System.Text.Unicode;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>
/// What the MQTT specs require a server to check in a packet's raw bytes, before MQTTnet's decoder sees them: the
/// decoder is lenient (it takes a will QoS of 3, a password without a user name, an empty SUBSCRIBE, fixed-header
/// flags of any value) and replaces ill-formed UTF-8 silently. The checks are nats-server's (server/mqtt.go
/// mqttParseConnect, mqttCheckFixedHeaderFlags, mqttCheckRemainingLength, mqttParseSubsOrUnsubs, mqttParsePub)
/// plus the MQTT 5 ones nats-server has no counterpart for (it has no MQTT 5). The statement each one enforces is
/// named beside it; gateways/mqtt/README.md has the table. Nothing here allocates.
/// </summary>
internal static class PacketChecks
{
    /// <summary>How a CONNECT that fails a check ends: closed without CONNACK (3.1.1, nats-server), or with one.</summary>
    public enum ConnectVerdict { Ok, Close, Refuse }

    private const byte ReservedFlag = 0x01, CleanFlag = 0x02, WillFlag = 0x04, WillRetainFlag = 0x20, PasswordFlag = 0x40, UserFlag = 0x80;

    /// <summary>
    /// The CONNECT body (protocol name and level already checked). <paramref name="reason"/> is the CONNACK reason
    /// for <see cref="ConnectVerdict.Refuse"/> (3.1.1 return codes are derived from it by the caller).
    /// </summary>
    public static ConnectVerdict CheckConnect(ReadOnlySpan<byte> body, bool v5, out MqttConnectReasonCode reason)
    {
        reason = MqttConnectReasonCode.MalformedPacket;
        // A malformed CONNECT: 3.1.1 closes the connection ([MQTT-3.1.4-1]); MQTT 5 may send CONNACK 0x81 first
        // ([MQTT-4.13.1-1] / section 3.1.4), as MQTT 5 clients are told why.
        var malformed = v5 ? ConnectVerdict.Refuse : ConnectVerdict.Close;
        if (body.Length < 10) return malformed;
        byte flags = body[7];
        if ((flags & ReservedFlag) != 0) return malformed; // [MQTT-3.1.2-3]
        int willQos = (flags >> 3) & 3;
        bool will = (flags & WillFlag) != 0;
        if (!will && (willQos != 0 || (flags & WillRetainFlag) != 0)) return malformed; // [MQTT-3.1.2-13], [MQTT-3.1.2-15] (5: -11, -13)
        if (will && willQos == 3) return malformed; // [MQTT-3.1.2-14] (5: [MQTT-3.1.2-12])
        bool user = (flags & UserFlag) != 0, password = (flags & PasswordFlag) != 0;
        if (!v5 && password && !user) return malformed; // [MQTT-3.1.2-22] (MQTT 5 allows a password alone)
        int at = 10;
        if (v5 && !SkipProperties(body, ref at)) return malformed;
        if (!ReadString(body, ref at, out var clientId)) return malformed;
        if (!ValidUtf8String(clientId))
        {
            // [MQTT-3.1.3-4] / [MQTT-1.5.3-1], [MQTT-1.5.3-2]: nats-server answers CONNACK 0x02 (mqttValidateString).
            reason = MqttConnectReasonCode.ClientIdentifierNotValid;
            return ConnectVerdict.Refuse;
        }
        if (clientId.IsEmpty && !v5 && (flags & CleanFlag) == 0)
        {
            reason = MqttConnectReasonCode.ClientIdentifierNotValid; // [MQTT-3.1.3-8]
            return ConnectVerdict.Refuse;
        }
        if (will)
        {
            if (v5 && !SkipProperties(body, ref at)) return malformed;
            if (!ReadString(body, ref at, out var willTopic) || !ReadString(body, ref at, out _)) return malformed;
            if (!ValidUtf8String(willTopic)) return malformed; // [MQTT-3.1.3-10]
        }
        if (user)
        {
            if (!ReadString(body, ref at, out var name)) return malformed;
            // nats-server answers a zero-length or ill-formed user name with CONNACK 0x04 (mqttParseConnect,
            // errMQTTEmptyUsername; [MQTT-3.1.3-11]); ours does the same for MQTT 5 (0x86, its counterpart).
            if (name.IsEmpty || !ValidUtf8String(name))
            {
                reason = MqttConnectReasonCode.BadUserNameOrPassword;
                return ConnectVerdict.Refuse;
            }
        }
        if (password && !ReadString(body, ref at, out _)) return malformed;
        return ConnectVerdict.Ok;
    }

    /// <summary>
    /// Every packet after CONNECT: null when well formed, else the MQTT 5 DISCONNECT reason the connection is closed
    /// with (3.1.1 just closes). PUBLISH is only checked for its QoS here (its topic: <see cref="ValidTopicName"/>).
    /// </summary>
    public static MqttDisconnectReasonCode? Check(byte fixedHeader, ReadOnlySpan<byte> body, bool v5)
    {
        var type = (MqttControlPacketType)(fixedHeader >> 4);
        int flags = fixedHeader & 0x0F;
        const MqttDisconnectReasonCode Malformed = MqttDisconnectReasonCode.MalformedPacket;
        switch (type)
        {
            case MqttControlPacketType.Publish:
                if ((flags & 0x06) == 0x06) return Malformed; // [MQTT-3.3.1-4]: QoS 3
                return null;
            case MqttControlPacketType.PubAck or MqttControlPacketType.PubRec or MqttControlPacketType.PubComp:
                // [MQTT-2.2.2-2]: reserved flags 0; 3.1.1 bodies are exactly the packet identifier (nats-server mqttCheckRemainingLength).
                if (flags != 0 || (v5 ? body.Length < 2 : body.Length != 2)) return Malformed;
                return null;
            case MqttControlPacketType.PubRel:
                if (flags != 0x02 || (v5 ? body.Length < 2 : body.Length != 2)) return Malformed; // [MQTT-3.6.1-1]
                return null;
            case MqttControlPacketType.PingReq:
                return flags != 0 || !body.IsEmpty ? Malformed : null;
            case MqttControlPacketType.Disconnect:
                // [MQTT-3.14.1-1]; a 3.1.1 DISCONNECT has no body.
                return flags != 0 || (!v5 && !body.IsEmpty) ? Malformed : null;
            case MqttControlPacketType.Subscribe:
                return CheckSubscribe(flags, body, v5);
            case MqttControlPacketType.Unsubscribe:
                return CheckUnsubscribe(flags, body, v5);
            default:
                return null; // CONNECT again, AUTH, server-only types: the read loop decides
        }
    }

    /// <summary>
    /// [MQTT-3.8.1-1] flags 0x2; a packet identifier ([MQTT-2.3.1-1]: not 0); at least one filter ([MQTT-3.8.3-3]),
    /// none empty ([MQTT-4.7.3-1]) nor ill-formed UTF-8 ([MQTT-1.5.3-1]); options: QoS 3 or reserved bits set are
    /// malformed ([MQTT-3-8.3-4]; 5: [MQTT-3.8.3-5]), Retain Handling 3 a protocol error (MQTT 5 section 3.8.3.1).
    /// </summary>
    private static MqttDisconnectReasonCode? CheckSubscribe(int flags, ReadOnlySpan<byte> body, bool v5)
    {
        const MqttDisconnectReasonCode Malformed = MqttDisconnectReasonCode.MalformedPacket;
        if (flags != 0x02 || !PacketIdentifier(body, v5, out int at)) return Malformed;
        int filters = 0;
        while (at < body.Length)
        {
            if (!ReadString(body, ref at, out var filter) || filter.IsEmpty || !ValidUtf8String(filter) || at >= body.Length) return Malformed;
            byte options = body[at++];
            if ((options & 0x03) == 0x03) return Malformed;
            if (v5)
            {
                if ((options & 0xC0) != 0) return Malformed;
                if ((options & 0x30) == 0x30) return MqttDisconnectReasonCode.ProtocolError;
            }
            else if (options > 2)
            {
                return Malformed;
            }
            filters++;
        }
        // [MQTT-3.8.3-3]; MQTT 5 calls a SUBSCRIBE without payload a Protocol Error ([MQTT-3.8.3-2]).
        return filters == 0 ? (v5 ? MqttDisconnectReasonCode.ProtocolError : Malformed) : null;
    }

    /// <summary>[MQTT-3.10.1-1] flags 0x2; a packet identifier; at least one filter ([MQTT-3.10.3-2]), none empty nor ill-formed.</summary>
    private static MqttDisconnectReasonCode? CheckUnsubscribe(int flags, ReadOnlySpan<byte> body, bool v5)
    {
        const MqttDisconnectReasonCode Malformed = MqttDisconnectReasonCode.MalformedPacket;
        if (flags != 0x02 || !PacketIdentifier(body, v5, out int at)) return Malformed;
        int filters = 0;
        while (at < body.Length)
        {
            if (!ReadString(body, ref at, out var filter) || filter.IsEmpty || !ValidUtf8String(filter)) return Malformed;
            filters++;
        }
        return filters == 0 ? (v5 ? MqttDisconnectReasonCode.ProtocolError : Malformed) : null;
    }

    /// <summary>
    /// A PUBLISH's topic name as sent: well-formed UTF-8 without U+0000 ([MQTT-3.3.2-1], [MQTT-1.5.3-1], [MQTT-1.5.3-2]).
    /// MQTTnet would decode ill-formed bytes to U+FFFD and publish them on another topic.
    /// </summary>
    public static bool ValidTopicName(ReadOnlySpan<byte> body)
    {
        int at = 0;
        return ReadString(body, ref at, out var topic) && ValidUtf8String(topic);
    }

    /// <summary>The packet identifier (not 0, [MQTT-2.3.1-1]) and, for MQTT 5, the property block after it; <paramref name="at"/> past both.</summary>
    private static bool PacketIdentifier(ReadOnlySpan<byte> body, bool v5, out int at)
    {
        at = 2;
        if (body.Length < 2 || BinaryPrimitives.ReadUInt16BigEndian(body) == 0) return false;
        return !v5 || SkipProperties(body, ref at);
    }

    /// <summary>A two-byte length and that many bytes (MQTT 3.1.1 section 1.5.3).</summary>
    private static bool ReadString(ReadOnlySpan<byte> body, ref int at, out ReadOnlySpan<byte> value)
    {
        value = default;
        if (at + 2 > body.Length) return false;
        int length = BinaryPrimitives.ReadUInt16BigEndian(body[at..]);
        at += 2;
        if (at + length > body.Length) return false;
        value = body.Slice(at, length);
        at += length;
        return true;
    }

    /// <summary>An MQTT 5 property block: its Variable Byte Integer length (at most 4 bytes) and that many bytes.</summary>
    private static bool SkipProperties(ReadOnlySpan<byte> body, ref int at)
    {
        int length = 0;
        for (int shift = 0; ; shift += 7)
        {
            if (shift > 21 || at >= body.Length) return false;
            byte b = body[at++];
            length |= (b & 0x7F) << shift;
            if ((b & 0x80) == 0) break;
        }
        if (length > body.Length - at) return false;
        at += length;
        return true;
    }

    /// <summary>Well-formed UTF-8 without U+0000 ([MQTT-1.5.3-1], [MQTT-1.5.3-2]).</summary>
    private static bool ValidUtf8String(ReadOnlySpan<byte> s) => s.IndexOf((byte)0) < 0 && Utf8.IsValid(s);
}
