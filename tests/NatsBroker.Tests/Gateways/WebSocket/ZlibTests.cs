using System.Buffers;
using System.IO.Compression;
using System.Text;
using NatsBroker.WebSocketGateway;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>
/// permessage-deflate through the system's zlib (gateways/websocket/Zlib.cs): what it compresses, .NET's own
/// inflater (as any RFC 7692 peer) reads back; what a peer compresses, it inflates; bad data and size limits are
/// reported, and its compressors and decompressors are reused across messages.
/// </summary>
[Collection(PoolCollection)]
public sealed class ZlibTests
{
    /// <summary>The tests that rent from the process-wide zlib pool run one at a time (see FrameAllocationTests).</summary>
    public const string PoolCollection = "zlib pool";

    private static readonly byte[] Tail = [0x00, 0x00, 0xff, 0xff, 0x01, 0x00, 0x00, 0xff, 0xff];

    private sealed class Collector : IFrameSink
    {
        public MemoryStream Data { get; } = new();
        void IFrameSink.Data(ReadOnlySpan<byte> payload) => Data.Write(payload);
        void IFrameSink.Control(byte opcode, ReadOnlySpan<byte> payload) => throw new InvalidOperationException("no control frames here");
    }

    private static byte[] Compressible(int size) =>
        Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat("MSG updates.sensor 1 11\r\ntemperature\r\n", size / 38 + 1)))[..size];

    private static byte[] Random(int size)
    {
        var b = new byte[size];
        new Random(size).NextBytes(b);
        return b;
    }

    private static byte[] Compress(ReadOnlySpan<byte> input, int offset = 0)
    {
        var output = ArrayPool<byte>.Shared.Rent(256); // small on purpose: the compressor grows it as needed
        var d = Zlib.RentDeflater();
        try
        {
            int end = d.Compress(input, ref output, offset);
            return output[offset..end];
        }
        finally
        {
            Zlib.Return(d);
            ArrayPool<byte>.Shared.Return(output);
        }
    }

    private static byte[] InflateWithDotNet(byte[] message)
    {
        using var source = new MemoryStream([.. message, .. Tail]);
        using var inflate = new DeflateStream(source, CompressionMode.Decompress);
        using var result = new MemoryStream();
        inflate.CopyTo(result);
        return result.ToArray();
    }

    [Theory]
    [InlineData(1)]
    [InlineData(100)]
    [InlineData(64 * 1024)]
    [InlineData(1 << 20)]
    public void What_it_compresses_a_standard_inflater_reads_back(int size)
    {
        foreach (var input in new[] { Compressible(size), Random(size) })
        {
            // Written after a 14-byte gap (the frame header's room), with the sync-flush marker already removed.
            var message = Compress(input, offset: 14);
            Assert.Equal(input, InflateWithDotNet(message));
        }
    }

    [Fact]
    public void Consecutive_messages_are_independent_with_a_reused_compressor()
    {
        // No context takeover: each message must inflate on its own, whatever the compressor did before.
        var d = Zlib.RentDeflater();
        try
        {
            var output = new byte[1 << 16];
            for (int i = 0; i < 5; i++)
            {
                var input = Compressible(1000 + i * 300);
                int end = d.Compress(input, ref output, 0);
                Assert.Equal(input, InflateWithDotNet(output[..end]));
            }
        }
        finally
        {
            Zlib.Return(d);
        }
    }

    [Fact]
    public void What_a_peer_compresses_it_inflates_in_pieces()
    {
        var input = Compressible(200_000);
        using var ms = new MemoryStream();
        using (var d = new DeflateStream(ms, CompressionLevel.Optimal, leaveOpen: true))
        {
            d.Write(input);
            d.Flush();
        }
        var compressed = ms.ToArray();
        compressed = compressed[..compressed.AsSpan().LastIndexOf((ReadOnlySpan<byte>)[0x00, 0x00, 0xff, 0xff])];
        var sink = new Collector();
        var inflater = Zlib.RentInflater();
        try
        {
            long n = inflater.Decompress([.. compressed, .. Tail], new byte[4096], sink, long.MaxValue);
            Assert.Equal(input.Length, n);
            Assert.Equal(input, sink.Data.ToArray());
            // Reset between messages: the same inflater reads the next message from scratch.
            var sink2 = new Collector();
            Assert.Equal(input.Length, inflater.Decompress([.. compressed, .. Tail], new byte[4096], sink2, long.MaxValue));
            Assert.Equal(input, sink2.Data.ToArray());
        }
        finally
        {
            Zlib.Return(inflater);
        }
    }

    [Fact]
    public void Bad_data_and_oversized_messages_are_reported()
    {
        var inflater = Zlib.RentInflater();
        try
        {
            Assert.Equal(-1, inflater.Decompress([0xff, 0xff, 0xff, 0xff, .. Tail], new byte[1024], new Collector(), long.MaxValue));
            // A zip bomb in miniature: 1 MiB of zeros compresses to ~1 KiB; the limit stops it early.
            var bomb = Compress(new byte[1 << 20]);
            Assert.Equal(10_001, inflater.Decompress([.. bomb, .. Tail], new byte[4096], new Collector(), 10_000));
            // Still usable after both.
            var ok = Compress("PING\r\n"u8);
            var sink = new Collector();
            Assert.Equal(6, inflater.Decompress([.. ok, .. Tail], new byte[64], sink, 100));
            Assert.Equal("PING\r\n", Encoding.ASCII.GetString(sink.Data.ToArray()));
        }
        finally
        {
            Zlib.Return(inflater);
        }
    }

    [Fact]
    public void Compressors_are_pooled()
    {
        var first = Zlib.RentDeflater();
        Zlib.Return(first);
        // Other tests may rent concurrently, so look for it among a few rentals rather than expecting it first.
        var rented = Enumerable.Range(0, 40).Select(_ => Zlib.RentDeflater()).ToList();
        Assert.Contains(first, rented);
        foreach (var d in rented) Zlib.Return(d);
    }

    [Fact]
    public void The_decoder_closes_with_1007_on_data_that_does_not_inflate()
    {
        // RSV1 + binary + final, masked with a zero key: 4 bytes that are not a deflate stream.
        byte[] wire = [0xC2, 0x84, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff];
        using var decoder = new FrameDecoder(requireMask: true, compressionNegotiated: true);
        Assert.False(decoder.Decode(wire, new Collector()));
        Assert.Equal(WsCloseStatus.InvalidPayload, decoder.ErrorStatus);
    }
}
