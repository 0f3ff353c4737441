using System.Numerics;
using System.Runtime.CompilerServices;

namespace NatsBroker.Subscriptions;

public sealed partial class SubList
{
    /// <summary>
    /// Match and cache-hit counters for /subsz without atomics on the match path. A single shared counter would
    /// bounce its cache line between every core that publishes (even with plain ++), so counts are striped by
    /// current processor id, each stripe on its own 128-byte span (two cache lines, to defeat adjacent-line
    /// prefetch). Increments are plain read-modify-writes: two threads sharing a stripe at the same instant (a thread
    /// migrated between cores) can lose an increment, which is acceptable for monitoring. Reads sum all stripes.
    /// </summary>
    private sealed class MatchCounters
    {
        private const int Stride = 16; // longs per stripe: 128 bytes
        private readonly long[] _slots;
        private readonly int _mask;

        public MatchCounters()
        {
            int stripes = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Max(Environment.ProcessorCount, 1));
            _mask = stripes - 1;
            // One extra leading stripe keeps stripe 0 off the cache line holding the array header.
            _slots = new long[(stripes + 1) * Stride];
        }

        [MethodImpl(MethodImplOptions.AggressiveOptimization)]
        public void Record(bool hit)
        {
            int slot = ((Thread.GetCurrentProcessorId() & _mask) + 1) * Stride;
            _slots[slot]++;
            if (hit) _slots[slot + 1]++;
        }

        public (long Matches, long Hits) Read()
        {
            long matches = 0, hits = 0;
            for (int slot = Stride; slot < _slots.Length; slot += Stride)
            {
                matches += Volatile.Read(ref _slots[slot]);
                hits += Volatile.Read(ref _slots[slot + 1]);
            }
            return (matches, hits);
        }
    }
}
