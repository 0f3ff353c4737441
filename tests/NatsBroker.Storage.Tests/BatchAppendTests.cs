using NatsBroker.Contracts;
using NatsBroker.Storage.File;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>IStreamStore.AppendBatch: all or nothing in memory, on refusal, and across a crash cut in the middle of the batch.</summary>
public sealed class BatchAppendTests : IDisposable
{
    private readonly string _dir = TempDir("batch");

    public void Dispose()
    {
        if (Directory.Exists(_dir)) Directory.Delete(_dir, recursive: true);
    }

    private sealed class Batch(int count, string prefix, int payloadSize = 100) : IAppendBatch
    {
        private readonly byte[][] _subjects = [.. Enumerable.Range(0, count).Select(i => B($"{prefix}.{i % 7}"))];
        private readonly byte[][] _payloads = [.. Enumerable.Range(0, count).Select(i => B($"{prefix}-{i}-" + new string('x', payloadSize)))];
        public int Count => count;
        public ReadOnlySpan<byte> Subject(int index) => _subjects[index];
        public ReadOnlySpan<byte> Headers(int index) => default;
        public ReadOnlySpan<byte> Payload(int index) => _payloads[index];
    }

    private static IStreamStore OpenFile(string dir, StreamLimits? limits = null, SyncPolicy sync = SyncPolicy.Always)
    {
        var cfg = new StreamStoreConfig { StreamName = "B", Limits = limits ?? StreamLimits.None, Sync = sync };
        var r = FileStore.Open(cfg, dir, new FileStoreOptions { BlockSize = 64 << 10 });
        Assert.True(r.IsOk, $"{r.Status} {r.Error}");
        return r.Store!;
    }

    private static IStreamStore OpenMemory(StreamLimits? limits = null) =>
        new Memory.MemoryStoreFactory().Open(new StreamStoreConfig { StreamName = "B", Limits = limits ?? StreamLimits.None }, null).Store!;

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void A_batch_gets_consecutive_sequences_and_is_readable(bool file)
    {
        using var s = file ? OpenFile(_dir) : OpenMemory();
        s.Put("pre", "one");
        var r = s.AppendBatch(new Batch(1000, "b"));
        Assert.Equal(StoreStatus.Ok, r.Status);
        Assert.Equal(1001UL, r.Sequence);
        Assert.Equal(1001UL, s.GetState().Messages);
        Assert.Equal("b-0-" + new string('x', 100), S(s.Get(2).Payload));
        Assert.Equal("b-999-" + new string('x', 100), S(s.Get(1001).Payload));
        Assert.Equal("b.5", S(s.Get(1001).Subject)); // 999 % 7
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void Discard_new_limits_refuse_the_whole_batch(bool file)
    {
        var limits = new StreamLimits { MaxMessages = 10, Discard = DiscardPolicy.New };
        using var s = file ? OpenFile(_dir, limits) : OpenMemory(limits);
        s.Put("pre", "one");
        Assert.Equal(StoreStatus.MaxMessagesExceeded, s.AppendBatch(new Batch(10, "b")).Status);
        Assert.Equal(1UL, s.GetState().Messages);
        Assert.Equal(1UL, s.GetState().LastSequence);
        Assert.Equal(StoreStatus.Ok, s.AppendBatch(new Batch(9, "b")).Status);
        Assert.Equal(10UL, s.GetState().Messages);
    }

    [Fact]
    public void Discard_old_limits_apply_after_the_batch()
    {
        using var s = OpenFile(_dir, new StreamLimits { MaxMessages = 50 });
        Assert.Equal(StoreStatus.Ok, s.AppendBatch(new Batch(120, "b")).Status);
        var st = s.GetState();
        Assert.Equal(50UL, st.Messages);
        Assert.Equal(71UL, st.FirstSequence);
        Assert.Equal(120UL, st.LastSequence);
    }

    /// <summary>
    /// A crash that leaves only part of a batch on disk (every cut point inside it): at open none of the batch is
    /// kept and what came before it is intact; the complete batch before it survives whole.
    /// </summary>
    [Fact]
    public void A_batch_cut_short_on_disk_is_discarded_whole_at_open()
    {
        string blockPath;
        using (var s = OpenFile(_dir))
        {
            s.Put("pre", "one");
            Assert.Equal(StoreStatus.Ok, s.AppendBatch(new Batch(30, "a", 20)).Status);
            blockPath = Directory.GetFiles(Path.Combine(_dir, "msgs"), "*.blk").Single();
            Assert.Equal(StoreStatus.Ok, s.AppendBatch(new Batch(200, "b", 50)).Status);
        }
        // Preallocation makes the file longer than its records; the records end where the batch's last one does.
        var full = System.IO.File.ReadAllBytes(blockPath);
        var rnd = new Random(7);
        long end = RecordsEnd(full);
        Assert.True(BatchStart(full, end) > 40 + 31 * 60, "the second batch starts after the first message and batch");
        for (int round = 0; round < 12; round++)
        {
            long batchStart = BatchStart(full, end);
            long cut = round == 0 ? end - 1 : batchStart + 1 + rnd.NextInt64(end - batchStart - 1);
            var dir = _dir + "-cut" + round;
            CopyDir(_dir, dir);
            var blk = Directory.GetFiles(Path.Combine(dir, "msgs"), "*.blk").Single();
            using (var f = new FileStream(blk, FileMode.Open)) f.SetLength(cut);
            foreach (var idx in Directory.Exists(Path.Combine(dir, "idx")) ? Directory.GetFiles(Path.Combine(dir, "idx")) : []) System.IO.File.Delete(idx);
            using (var s = OpenFile(dir))
            {
                var st = s.GetState();
                Assert.True(st.LastSequence == 31, $"cut at {cut} (batch {batchStart}..{end}): last {st.LastSequence}, report: {string.Join(" | ", s.RecoveryReport)}");
                Assert.Equal(31UL, st.Messages);
                Assert.Equal("a-29-" + new string('x', 20), S(s.Get(31).Payload));
                // The store goes on normally after the discarded batch.
                Assert.Equal(StoreStatus.Ok, s.AppendBatch(new Batch(5, "c")).Status);
                Assert.Equal(36UL, s.GetState().LastSequence);
            }
            using (var s = OpenFile(dir)) Assert.Equal(36UL, s.GetState().Messages);
            Directory.Delete(dir, recursive: true);
        }
        using (var s = OpenFile(_dir)) Assert.Equal(231UL, s.GetState().Messages);
    }

    /// <summary>Offset just past the last valid record (block header 40 bytes, then length-prefixed records).</summary>
    private static long RecordsEnd(byte[] data)
    {
        int off = 40;
        while (off + 40 <= data.Length)
        {
            int len = BitConverter.ToInt32(data, off);
            if (len < 40 || off + len > data.Length || data[off + 4] == 0) break;
            off += len;
        }
        return off;
    }

    /// <summary>Offset of the first record of the last batch (the first record with the batch-continues flag after a record without it).</summary>
    private static long BatchStart(byte[] data, long end)
    {
        int off = 40;
        int start = -1;
        bool prevContinues = false;
        while (off < end)
        {
            int len = BitConverter.ToInt32(data, off);
            bool continues = (data[off + 5] & 2) != 0;
            if (continues && !prevContinues) start = off;
            prevContinues = continues;
            off += len;
        }
        return start;
    }

    private static void CopyDir(string from, string to)
    {
        foreach (var d in Directory.GetDirectories(from, "*", SearchOption.AllDirectories)) Directory.CreateDirectory(d.Replace(from, to));
        Directory.CreateDirectory(to);
        foreach (var f in Directory.GetFiles(from, "*", SearchOption.AllDirectories)) System.IO.File.Copy(f, f.Replace(from, to));
    }
}
