using System.Buffers.Binary;
using System.Runtime.InteropServices;
using System.Runtime.Intrinsics;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// RFC 6455 section 5.3 masking: XOR with the 4-byte key, continuing at <c>position</c> (0-3) across calls. 32 bytes
/// at a time with Vector256 where the CPU has it, then 8 at a time, then bytes (nats-server does 8 at a time).
/// </summary>
public static class Masking
{
    /// <param name="key">The key as it appears on the wire, read little-endian (byte 0 in the low bits).</param>
    /// <param name="position">Key offset to start at; advanced by the data length (mod 4).</param>
    public static void Apply(Span<byte> data, uint key, ref int position)
    {
        int p = position & 3;
        // Rotate so that the key's byte p lines up with data[0].
        uint k = p == 0 ? key : (key >> (8 * p)) | (key << (32 - (8 * p)));
        int i = 0;
        if (Vector256.IsHardwareAccelerated && data.Length >= 32)
        {
            var kv = Vector256.Create(k).AsByte();
            ref byte start = ref MemoryMarshal.GetReference(data);
            for (; i <= data.Length - 32; i += 32)
            {
                var v = Vector256.LoadUnsafe(ref start, (nuint)i);
                (v ^ kv).StoreUnsafe(ref start, (nuint)i);
            }
        }
        ulong k8 = k | ((ulong)k << 32);
        for (; i <= data.Length - 8; i += 8)
        {
            var slot = data.Slice(i, 8);
            BinaryPrimitives.WriteUInt64LittleEndian(slot, BinaryPrimitives.ReadUInt64LittleEndian(slot) ^ k8);
        }
        for (; i < data.Length; i++)
        {
            data[i] ^= (byte)(k >> (8 * (i & 3)));
        }
        position = (p + data.Length) & 3;
    }
}
