using System.Runtime.CompilerServices;

namespace NatsBroker.Routing;

/// <summary>Reply prefixes reserved for the server (client.go isReservedReply): service imports, JetStream acks, gateways.</summary>
internal static class ReservedReplies
{
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static bool IsReserved(ReadOnlySpan<byte> reply) =>
        reply.StartsWith("_R_."u8) || reply.StartsWith("$JS.ACK."u8) || reply.StartsWith("_GR_."u8);
}
