using System.Collections.Concurrent;
using System.Runtime.InteropServices;

namespace NatsBroker.WebSocketGateway;

/// <summary>
/// permessage-deflate (RFC 7692) without context takeover, through the system's zlib (<c>libz.so.1</c>): raw deflate
/// streams that are reset for each message instead of created for it.
/// </summary>
/// <remarks>
/// Why not <see cref="System.IO.Compression.DeflateStream"/>: it cannot be reset, so each message needed a new one,
/// and creating one initialises a fresh zlib state (~256 KiB allocated and freed natively for a compressor) plus the
/// managed stream objects. With <c>compression: true</c> and 256 B messages the gateway then delivered 292 K msgs/s
/// against nats-server's 796 K (which keeps its flate writers in a pool and resets them). Here compressors and
/// decompressors are pooled process-wide (<see cref="RentDeflater"/>, <see cref="RentInflater"/>): one is held only while a message is (de)compressed,
/// so an idle compressed connection costs no zlib state, as in nats-server.
/// </remarks>
internal static unsafe partial class Zlib
{
    private const string Library = "libz.so.1";

    // zlib.h: return codes, flush values, method; a negative window size means a raw stream (no zlib header).
    private const int ZOk = 0, ZStreamEnd = 1, ZBufError = -5, ZSyncFlush = 2, ZDeflated = 8, RawWindowBits = -15;

    /// <summary>nats-server's compressor level (flate.BestSpeed).</summary>
    private const int BestSpeed = 1;

    /// <summary>Pooled compressors and decompressors kept at most: enough for every thread compressing at once.</summary>
    private const int MaxPooled = 32;

    private static readonly ConcurrentQueue<Deflater> Deflaters = new();
    private static readonly ConcurrentQueue<Inflater> Inflaters = new();
    private static int _pooledDeflaters, _pooledInflaters;

    /// <summary>zlib checks the first character of the version it was built against: any 1.x accepts these calls.</summary>
    private static ReadOnlySpan<byte> Version => "1.2.13\0"u8;

    public static Deflater RentDeflater()
    {
        if (!Deflaters.TryDequeue(out var d)) return new Deflater();
        Interlocked.Decrement(ref _pooledDeflaters);
        return d;
    }

    public static Inflater RentInflater()
    {
        if (!Inflaters.TryDequeue(out var i)) return new Inflater();
        Interlocked.Decrement(ref _pooledInflaters);
        return i;
    }

    public static void Return(Deflater d)
    {
        if (Interlocked.Increment(ref _pooledDeflaters) <= MaxPooled) Deflaters.Enqueue(d);
        else
        {
            Interlocked.Decrement(ref _pooledDeflaters);
            d.Dispose();
        }
    }

    public static void Return(Inflater i)
    {
        if (Interlocked.Increment(ref _pooledInflaters) <= MaxPooled) Inflaters.Enqueue(i);
        else
        {
            Interlocked.Decrement(ref _pooledInflaters);
            i.Dispose();
        }
    }

    /// <summary>zlib's <c>z_stream</c> (LP64: <c>uLong</c> is 64 bits), kept in native memory so zlib may point into it.</summary>
    [StructLayout(LayoutKind.Sequential)]
    internal struct ZStream
    {
        public byte* NextIn;
        public uint AvailIn;
        public nuint TotalIn;
        public byte* NextOut;
        public uint AvailOut;
        public nuint TotalOut;
        public byte* Msg;
        public void* State;
        public void* ZAlloc;
        public void* ZFree;
        public void* Opaque;
        public int DataType;
        public nuint Adler;
        public nuint Reserved;
    }

    /// <summary>
    /// Owns one <c>z_stream</c> in native memory (zlib keeps pointers into it, so it must not move): initialised by the
    /// derived constructor through <see cref="Init"/>, ended and freed once by <see cref="Dispose"/> or the finalizer.
    /// </summary>
    public abstract class ZStreamOwner : IDisposable
    {
        private protected ZStream* _z = (ZStream*)NativeMemory.AllocZeroed((nuint)sizeof(ZStream));

        ~ZStreamOwner() => Free();

        /// <summary>Runs zlib's init for this stream; on failure frees it and throws.</summary>
        private protected void Init(int rc, string what)
        {
            if (rc == ZOk) return;
            NativeMemory.Free(_z);
            _z = null;
            GC.SuppressFinalize(this);
            throw new InvalidOperationException($"zlib {what} failed ({rc})");
        }

        /// <summary>zlib's end call for this kind of stream (deflateEnd or inflateEnd).</summary>
        private protected abstract int End(ZStream* z);

        public void Dispose()
        {
            Free();
            GC.SuppressFinalize(this);
        }

        private void Free()
        {
            if (_z is null) return;
            _ = End(_z);
            NativeMemory.Free(_z);
            _z = null;
        }
    }

    /// <summary>A raw deflate compressor; one message at a time, reset before each.</summary>
    public sealed class Deflater : ZStreamOwner
    {
        public Deflater()
        {
            fixed (byte* v = Version) Init(DeflateInit2(_z, BestSpeed, ZDeflated, RawWindowBits, 8, 0, v, sizeof(ZStream)), "deflateInit2");
        }

        private protected override int End(ZStream* z) => DeflateEnd(z);

        /// <summary>
        /// Compresses <paramref name="input"/> as one message into <paramref name="output"/> from
        /// <paramref name="offset"/>, renting a larger array from the shared pool when it does not fit (the old one is
        /// returned); the sync-flush marker 00 00 ff ff is removed (RFC 7692 section 7.2.1). Returns the end offset.
        /// </summary>
        public int Compress(ReadOnlySpan<byte> input, ref byte[] output, int offset)
        {
            if (DeflateReset(_z) != ZOk) throw new InvalidOperationException("zlib deflateReset failed");
            int at = offset;
            fixed (byte* inp = input)
            {
                _z->NextIn = inp;
                _z->AvailIn = (uint)input.Length;
                while (true)
                {
                    if (output.Length - at < 64) Grow(ref output, at);
                    int rc;
                    fixed (byte* outp = output)
                    {
                        _z->NextOut = outp + at;
                        _z->AvailOut = (uint)(output.Length - at);
                        rc = Deflate(_z, ZSyncFlush);
                        at = output.Length - (int)_z->AvailOut;
                    }
                    if (rc != ZOk && rc != ZBufError) throw new InvalidOperationException($"zlib deflate failed ({rc})");
                    // With room left after a sync flush, all input is consumed and the flush is complete.
                    if (_z->AvailIn == 0 && _z->AvailOut > 0) break;
                    Grow(ref output, at);
                }
                _z->NextIn = null;
            }
            if (at - offset < 4 || !output.AsSpan(at - 4, 4).SequenceEqual((ReadOnlySpan<byte>)[0x00, 0x00, 0xff, 0xff]))
                throw new InvalidOperationException("zlib sync flush did not end with 00 00 ff ff");
            return at - 4;
        }

        private static void Grow(ref byte[] output, int used)
        {
            var bigger = System.Buffers.ArrayPool<byte>.Shared.Rent(Math.Max(output.Length * 2, used + 4096));
            output.AsSpan(0, used).CopyTo(bigger);
            System.Buffers.ArrayPool<byte>.Shared.Return(output);
            output = bigger;
        }
    }

    /// <summary>A raw inflater; one message at a time, reset before each.</summary>
    public sealed class Inflater : ZStreamOwner
    {
        public Inflater()
        {
            fixed (byte* v = Version) Init(InflateInit2(_z, RawWindowBits, v, sizeof(ZStream)), "inflateInit2");
        }

        private protected override int End(ZStream* z) => InflateEnd(z);

        /// <summary>
        /// Inflates one message (its bytes with the tail that ends the stream) into <paramref name="scratch"/>, a
        /// piece at a time, each handed to <paramref name="sink"/>. Returns the decompressed length, -1 when the data
        /// is not valid deflate, or <paramref name="limit"/> + 1 as soon as it would exceed <paramref name="limit"/>.
        /// </summary>
        public long Decompress(ReadOnlySpan<byte> message, Span<byte> scratch, IFrameSink sink, long limit)
        {
            if (InflateReset(_z) != ZOk) throw new InvalidOperationException("zlib inflateReset failed");
            long total = 0;
            fixed (byte* inp = message)
            fixed (byte* outp = scratch)
            {
                _z->NextIn = inp;
                _z->AvailIn = (uint)message.Length;
                try
                {
                    while (true)
                    {
                        _z->NextOut = outp;
                        _z->AvailOut = (uint)scratch.Length;
                        int rc = Inflate(_z, ZSyncFlush);
                        if (rc != ZOk && rc != ZStreamEnd && rc != ZBufError) return -1;
                        int produced = scratch.Length - (int)_z->AvailOut;
                        total += produced;
                        if (total > limit) return limit + 1;
                        if (produced > 0) sink.Data(scratch[..produced]);
                        if (rc == ZStreamEnd) return total;
                        // No progress possible: the input ended without the stream's end (the tail always ends it).
                        if (produced == 0 && (_z->AvailIn == 0 || rc == ZBufError)) return _z->AvailIn == 0 ? total : -1;
                    }
                }
                finally
                {
                    _z->NextIn = null;
                    _z->NextOut = null;
                }
            }
        }
    }

    [LibraryImport(Library, EntryPoint = "deflateInit2_")]
    private static partial int DeflateInit2(ZStream* strm, int level, int method, int windowBits, int memLevel, int strategy, byte* version, int streamSize);

    [LibraryImport(Library, EntryPoint = "deflate")]
    private static partial int Deflate(ZStream* strm, int flush);

    [LibraryImport(Library, EntryPoint = "deflateReset")]
    private static partial int DeflateReset(ZStream* strm);

    [LibraryImport(Library, EntryPoint = "deflateEnd")]
    private static partial int DeflateEnd(ZStream* strm);

    [LibraryImport(Library, EntryPoint = "inflateInit2_")]
    private static partial int InflateInit2(ZStream* strm, int windowBits, byte* version, int streamSize);

    [LibraryImport(Library, EntryPoint = "inflate")]
    private static partial int Inflate(ZStream* strm, int flush);

    [LibraryImport(Library, EntryPoint = "inflateReset")]
    private static partial int InflateReset(ZStream* strm);

    [LibraryImport(Library, EntryPoint = "inflateEnd")]
    private static partial int InflateEnd(ZStream* strm);
}
