using System.Buffers.Binary;
using System.Numerics;
using System.Runtime.CompilerServices;

namespace NatsBroker.Contracts;

/// <summary>CRC-32C (Castagnoli) using the CPU's CRC32 instructions through <see cref="BitOperations.Crc32C(uint, ulong)"/>.</summary>
public static class Crc32C
{
    public static uint Compute(ReadOnlySpan<byte> data) => ~Append(0xFFFFFFFFu, data);

    /// <summary>Continues a running (non-inverted) CRC; start with 0xFFFFFFFF and invert the end result.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    public static uint Append(uint crc, ReadOnlySpan<byte> data)
    {
        while (data.Length >= 32)
        {
            crc = BitOperations.Crc32C(crc, BinaryPrimitives.ReadUInt64LittleEndian(data));
            crc = BitOperations.Crc32C(crc, BinaryPrimitives.ReadUInt64LittleEndian(data[8..]));
            crc = BitOperations.Crc32C(crc, BinaryPrimitives.ReadUInt64LittleEndian(data[16..]));
            crc = BitOperations.Crc32C(crc, BinaryPrimitives.ReadUInt64LittleEndian(data[24..]));
            data = data[32..];
        }
        while (data.Length >= 8)
        {
            crc = BitOperations.Crc32C(crc, BinaryPrimitives.ReadUInt64LittleEndian(data));
            data = data[8..];
        }
        foreach (byte b in data) crc = BitOperations.Crc32C(crc, b);
        return crc;
    }
}
