using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// The one contract suite every engine runs: memory, file and the plug-in test engine derive from it.
/// Persistent engines additionally check that everything survives a reopen.
/// </summary>
public abstract partial class StoreContractTests : IDisposable
{
    private readonly List<IStreamStore> _open = [];
    protected string Dir { get; } = TempDir("contract");

    protected abstract IStreamStoreFactory Factory { get; }
    protected virtual bool ZeroAllocAppend => true;
    protected virtual IReadOnlyDictionary<string, string> EngineOptions => new Dictionary<string, string>();

    protected virtual SyncPolicy DefaultSync => SyncPolicy.Periodic;

    protected StreamStoreConfig Config(StreamLimits? limits = null, TimeProvider? clock = null, SyncPolicy? sync = null) => new()
    {
        StreamName = "S",
        Limits = limits ?? StreamLimits.None,
        Clock = clock ?? TimeProvider.System,
        Sync = sync ?? DefaultSync,
        EngineOptions = EngineOptions,
    };

    protected IStreamStore Open(StreamLimits? limits = null, TimeProvider? clock = null, SyncPolicy? sync = null)
        => Open(Config(limits, clock, sync));

    protected IStreamStore Open(StreamStoreConfig cfg)
    {
        var r = Factory.Open(cfg, Factory.IsPersistent ? Dir : null);
        Assert.True(r.IsOk, r.Error);
        _open.Add(r.Store!);
        return r.Store!;
    }

    /// <summary>Closes and reopens a persistent store; a memory store is returned as is.</summary>
    protected IStreamStore Reopen(IStreamStore s)
    {
        if (!Factory.IsPersistent) return s;
        var cfg = s.Config;
        s.Dispose();
        _open.Remove(s);
        return Open(cfg);
    }

    public void Dispose()
    {
        foreach (var s in _open) s.Dispose();
        try { if (Directory.Exists(Dir)) Directory.Delete(Dir, true); } catch (IOException) { }
        try { if (Directory.Exists(SecondDir)) Directory.Delete(SecondDir, true); } catch (IOException) { }
        GC.SuppressFinalize(this);
    }

    [Fact]
    public void Append_assigns_sequences_and_load_round_trips()
    {
        var s = Open();
        var r1 = s.Append(B("orders.new"), B("NATS/1.0\r\nA: 1\r\n\r\n"), B("hello"));
        var r2 = s.Append(B("orders.old"), default, B("world"), timestamp: 12345);
        Assert.Equal((StoreStatus.Ok, 1UL), (r1.Status, r1.Sequence));
        Assert.Equal((StoreStatus.Ok, 2UL), (r2.Status, r2.Sequence));
        Assert.Equal(12345, r2.Timestamp);
        s = Reopen(s);
        var m = s.Get(1);
        Assert.Equal("orders.new", m.SubjectString);
        Assert.Equal("NATS/1.0\r\nA: 1\r\n\r\n", S(m.Headers));
        Assert.Equal("hello", S(m.Payload));
        Assert.Equal(1UL, m.Sequence);
        Assert.Equal(r1.Timestamp, m.Timestamp);
        m = s.Get(2);
        Assert.Equal(("orders.old", "", "world", 12345L), (m.SubjectString, S(m.Headers), S(m.Payload), m.Timestamp));
        Assert.Equal(StoreStatus.NotFound, s.Load(3, m));
        Assert.Equal(StoreStatus.NotFound, s.Load(0, m));
    }

    [Fact]
    public void Invalid_subjects_are_refused()
    {
        var s = Open();
        Assert.Equal(StoreStatus.InvalidArgument, s.Append(default, default, B("x")).Status);
        Assert.Equal(StoreStatus.InvalidArgument, s.Append(B("a.*"), default, B("x")).Status);
        Assert.Equal(StoreStatus.InvalidArgument, s.Append(B("a.>"), default, B("x")).Status);
        Assert.Equal(0UL, s.GetState().LastSequence);
    }

    [Fact]
    public void Empty_and_large_payloads_round_trip()
    {
        var s = Open();
        var big = new byte[3 << 20];
        new Random(1).NextBytes(big);
        Assert.True(s.Append(B("e"), default, default).IsOk);
        Assert.True(s.Append(B("big"), default, big).IsOk);
        s = Reopen(s);
        Assert.Equal(0, s.Get(1).PayloadLength);
        Assert.True(big.AsSpan().SequenceEqual(s.Get(2).Payload));
        Assert.Equal((ulong)(ExpectedStoredSize(1, 0, 0) + ExpectedStoredSize(3, 0, big.Length)), s.GetState().Bytes);
    }

    [Fact]
    public void Remove_and_erase_leave_deleted_sequences()
    {
        var s = Open();
        for (int i = 1; i <= 5; i++) s.Put("a", "m" + i);
        Assert.Equal(StoreStatus.Ok, s.Remove(2));
        Assert.Equal(StoreStatus.Ok, s.Erase(4));
        Assert.Equal(StoreStatus.Deleted, s.Remove(2));
        Assert.Equal(StoreStatus.NotFound, s.Remove(9));
        s = Reopen(s);
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Deleted, s.Load(2, m));
        Assert.Equal(StoreStatus.Deleted, s.Load(4, m));
        var st = s.GetState();
        Assert.Equal((3UL, 1UL, 5UL, 2UL), (st.Messages, st.FirstSequence, st.LastSequence, st.Deleted));
        Assert.Equal(StoreStatus.Ok, s.Remove(1));
        st = s.GetState();
        Assert.Equal((2UL, 3UL, 1UL), (st.Messages, st.FirstSequence, st.Deleted));
        Assert.Equal(StoreStatus.NotFound, s.Load(1, m));
    }

    [Fact]
    public void LoadLast_by_subject_literal_and_wildcard()
    {
        var s = Open();
        s.Put("kv.a", "1");
        s.Put("kv.b", "2");
        s.Put("kv.a", "3");
        s.Put("other", "4");
        s = Reopen(s);
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s.LoadLast(B("kv.a"), m));
        Assert.Equal((3UL, "3"), (m.Sequence, S(m.Payload)));
        Assert.Equal(StoreStatus.Ok, s.LoadLast(B("kv.*"), m));
        Assert.Equal(3UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadLast(B(">"), m));
        Assert.Equal(4UL, m.Sequence);
        Assert.Equal(StoreStatus.NotFound, s.LoadLast(B("kv.c"), m));
        s.Remove(3);
        Assert.Equal(StoreStatus.Ok, s.LoadLast(B("kv.a"), m));
        Assert.Equal(1UL, m.Sequence);
    }

    /// <summary>Whether LoadLastCached must answer from memory right after the appends (no reopen).</summary>
    protected virtual bool CachedLoadsWhenWarm => false;

    [Fact]
    public void LoadLastCached_answers_as_LoadLast_or_would_block()
    {
        var s = Open();
        s.Put("kv.a", "1", "NATS/1.0\r\nA: 1\r\n\r\n");
        s.Put("kv.b", "2");
        s.Put("kv.a", "3");
        s.Put("other", "4");
        foreach (var subject in new[] { "kv.a", "kv.b", "kv.*", ">", "kv.c" })
        {
            var want = new StoredMessage();
            var got = new StoredMessage();
            var wantStatus = s.LoadLast(B(subject), want);
            var gotStatus = s.LoadLastCached(B(subject), got);
            if (gotStatus == StoreStatus.WouldBlock)
            {
                Assert.False(CachedLoadsWhenWarm, $"{subject}: would block right after the appends");
                continue;
            }
            Assert.Equal(wantStatus, gotStatus);
            if (wantStatus != StoreStatus.Ok) continue;
            Assert.Equal((want.Sequence, want.Timestamp, S(want.Subject), S(want.Headers), S(want.Payload)),
                (got.Sequence, got.Timestamp, S(got.Subject), S(got.Headers), S(got.Payload)));
        }
    }

    [Fact]
    public void LoadNext_with_filters()
    {
        var s = Open();
        for (int i = 0; i < 30; i++) s.Put(i % 3 == 0 ? "foo.x" : i % 3 == 1 ? "foo.y" : "bar.z", i.ToString());
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("bar.z"), 1, m));
        Assert.Equal(3UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("bar.z"), 4, m));
        Assert.Equal(6UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("foo.*"), 3, m));
        Assert.Equal(4UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("foo.>"), 6, m));
        Assert.Equal(7UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(default, 17, m));
        Assert.Equal(17UL, m.Sequence);
        Assert.Equal(StoreStatus.NotFound, s.LoadNext(B("bar.z"), 31, m));
        Assert.Equal(StoreStatus.NotFound, s.LoadNext(B("nope"), 1, m));
        s.Remove(6);
        s.Remove(9);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("bar.z"), 4, m));
        Assert.Equal(12UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("*.z"), 4, m));
        Assert.Equal(12UL, m.Sequence);
        // Every position matches the naive answer.
        for (ulong from = 1; from <= 31; from++)
        {
            foreach (var f in new[] { "foo.x", "bar.z", "foo.*", ">" })
            {
                ulong expect = 0;
                for (ulong q = from; q <= 30; q++)
                {
                    if (q is 6 or 9) continue;
                    int i = (int)q - 1;
                    var subj = i % 3 == 0 ? "foo.x" : i % 3 == 1 ? "foo.y" : "bar.z";
                    if (SubjectMatch.Matches(B(subj), B(f))) { expect = q; break; }
                }
                var st = s.LoadNext(B(f), from, m);
                Assert.Equal(expect == 0 ? StoreStatus.NotFound : StoreStatus.Ok, st);
                if (expect != 0) Assert.Equal(expect, m.Sequence);
            }
        }
    }

    [Fact]
    public void Purge_all_keeps_sequence_going()
    {
        var s = Open();
        for (int i = 0; i < 10; i++) s.Put("a." + i, "x");
        var r = s.Purge();
        Assert.Equal(new PurgeResult(StoreStatus.Ok, 10), r);
        s = Reopen(s);
        var st = s.GetState();
        Assert.Equal((0UL, 11UL, 10UL, 0), (st.Messages, st.FirstSequence, st.LastSequence, st.Subjects));
        Assert.Equal(11UL, s.Put("a", "y"));
        s = Reopen(s);
        Assert.Equal(12UL, s.Put("a", "z"));
        Assert.Equal(StoreStatus.NotFound, s.Load(5, new StoredMessage()));
    }

    [Fact]
    public void Purge_by_subject_with_keep_and_sequence()
    {
        var s = Open();
        for (int i = 0; i < 20; i++) s.Put(i % 2 == 0 ? "a" : "b", i.ToString());
        Assert.Equal(new PurgeResult(StoreStatus.Ok, 7), s.Purge(B("a"), keep: 3));
        Assert.Equal(3UL, s.CountMatching(B("a")));
        Assert.Equal(10UL, s.CountMatching(B("b")));
        Assert.Equal(new PurgeResult(StoreStatus.Ok, 3), s.Purge(B("b"), upToSequence: 7));
        Assert.Equal(7UL, s.CountMatching(B("b")));
        s = Reopen(s);
        Assert.Equal(3UL, s.CountMatching(B("a")));
        Assert.Equal(7UL, s.CountMatching(B("b")));
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("a"), 1, m));
        Assert.Equal(15UL, m.Sequence);
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("b"), 1, m));
        Assert.Equal(8UL, m.Sequence);
        Assert.Equal(10UL, s.GetState().Messages);
    }

    [Fact]
    public void Purge_wildcard_with_keep_keeps_newest_across_subjects()
    {
        var s = Open();
        for (int i = 0; i < 12; i++) s.Put("x." + (i % 3), i.ToString());
        s.Put("y", "keep me");
        var r = s.Purge(B("x.*"), keep: 4);
        Assert.Equal(8UL, r.Purged);
        s = Reopen(s);
        var st = s.GetState();
        Assert.Equal(5UL, st.Messages);
        Assert.Equal(9UL, st.FirstSequence);
        var counts = new Dictionary<string, ulong>();
        Assert.Equal(4, s.GetSubjectCounts(default, counts));
        Assert.Equal(2UL, counts["x.2"]);
        Assert.Equal(1UL, counts["x.0"]);
        Assert.Equal(1UL, counts["y"]);
    }

    [Fact]
    public void Compact_removes_below_and_survives_reopen()
    {
        var s = Open();
        for (int i = 0; i < 10; i++) s.Put("c", i.ToString());
        Assert.Equal(new PurgeResult(StoreStatus.Ok, 6), s.Compact(7));
        s = Reopen(s);
        var st = s.GetState();
        Assert.Equal((4UL, 7UL, 10UL), (st.Messages, st.FirstSequence, st.LastSequence));
        Assert.Equal(new PurgeResult(StoreStatus.Ok, 4), s.Compact(100));
        s = Reopen(s);
        st = s.GetState();
        Assert.Equal((0UL, 100UL, 99UL), (st.Messages, st.FirstSequence, st.LastSequence));
        Assert.Equal(100UL, s.Put("c", "again"));
    }

    [Fact]
    public void State_reports_counts_bytes_times_and_subjects()
    {
        var clock = new ManualClock();
        var s = Open(clock: clock);
        s.Put("a.1", "12345");
        clock.Advance(TimeSpan.FromSeconds(1));
        s.Put("a.2", "12", "hh");
        s.Put("b", "");
        var st = s.GetState();
        Assert.Equal(3UL, st.Messages);
        Assert.Equal((ulong)(ExpectedStoredSize(3, 0, 5) + ExpectedStoredSize(3, 2, 2) + ExpectedStoredSize(1, 0, 0)), st.Bytes);
        Assert.Equal(1UL, st.FirstSequence);
        Assert.Equal(3UL, st.LastSequence);
        Assert.Equal(3, st.Subjects);
        Assert.Equal(1_000_000_000L, st.LastTimestamp - st.FirstTimestamp);
        var counts = new Dictionary<string, ulong>();
        Assert.Equal(2, s.GetSubjectCounts(B("a.*"), counts));
        Assert.Equal(2, counts.Count);
        Assert.Equal(2UL, s.CountMatching(B("a.>")));
    }

    [Fact]
    public void MaxMessages_discard_old_and_new()
    {
        var s = Open(new StreamLimits { MaxMessages = 3 });
        for (int i = 0; i < 5; i++) s.Put("a", i.ToString());
        var st = s.GetState();
        Assert.Equal((3UL, 3UL, 5UL), (st.Messages, st.FirstSequence, st.LastSequence));
        s = Reopen(s);
        Assert.Equal(3UL, s.GetState().Messages);
        Assert.Equal("2", S(s.Get(3).Payload));

        s.Dispose();
        var s2 = Factory.Open(Config(new StreamLimits { MaxMessages = 2, Discard = DiscardPolicy.New }), Factory.IsPersistent ? Dir + "-n" : null).Store!;
        _open.Add(s2);
        s2.Put("a", "1");
        s2.Put("a", "2");
        var r = s2.Append(B("a"), default, B("3"));
        Assert.Equal(StoreStatus.MaxMessagesExceeded, r.Status);
        Assert.Equal(2UL, s2.GetState().LastSequence);
        s2.Delete();
    }

    [Fact]
    public void MaxBytes_discard_old_and_new()
    {
        // Room for two 10-byte messages and one 1-byte message, in the engine's figure.
        long big = ExpectedStoredSize(2, 0, 10), small = ExpectedStoredSize(2, 0, 1);
        long max = 2 * big + small;
        var s = Open(new StreamLimits { MaxBytes = max });
        for (int i = 0; i < 5; i++) s.Put("ab", "0123456789");
        Assert.Equal(2UL, s.GetState().Messages);
        Assert.Equal((ulong)(2 * big), s.GetState().Bytes);
        s.UpdateLimits(new StreamLimits { MaxBytes = max, Discard = DiscardPolicy.New });
        Assert.Equal(StoreStatus.MaxBytesExceeded, s.Append(B("ab"), default, B("0123456789")).Status);
        Assert.True(s.Append(B("ab"), default, B("1")).IsOk); // exactly at the limit: kept, as nats-server (">" refuses)
        Assert.Equal((ulong)max, s.GetState().Bytes);
        Assert.Equal(StoreStatus.MaxBytesExceeded, s.Append(B("ab"), default, default).Status);
        Assert.Equal(6UL, s.GetState().LastSequence);
    }

    [Fact]
    public void MaxMessagesPerSubject_discard_old_and_new_per_subject()
    {
        var s = Open(new StreamLimits { MaxMessagesPerSubject = 2 });
        for (int i = 0; i < 5; i++) { s.Put("k.a", "a" + i); s.Put("k.b", "b" + i); }
        s = Reopen(s);
        Assert.Equal(4UL, s.GetState().Messages);
        Assert.Equal(2UL, s.CountMatching(B("k.a")));
        var m = new StoredMessage();
        Assert.Equal(StoreStatus.Ok, s.LoadNext(B("k.a"), 1, m));
        Assert.Equal("a3", S(m.Payload));
        s.UpdateLimits(new StreamLimits { MaxMessagesPerSubject = 2, Discard = DiscardPolicy.New, DiscardNewPerSubject = true });
        Assert.Equal(StoreStatus.MaxMessagesPerSubjectExceeded, s.Append(B("k.a"), default, B("x")).Status);
        Assert.True(s.Append(B("k.c"), default, B("x")).IsOk);
    }

    [Fact]
    public void MaxMessageSize_refuses_large_messages()
    {
        // Headers + payload count, not the subject (see MaxMessageSize_counts_headers_and_payload_not_the_subject).
        var s = Open(new StreamLimits { MaxMessageSize = 10 });
        Assert.Equal(StoreStatus.MessageTooLarge, s.Append(B("a"), default, new byte[11]).Status);
        Assert.True(s.Append(B("a"), default, new byte[10]).IsOk);
    }

    [Fact]
    public void MaxAge_expires_from_the_front()
    {
        var clock = new ManualClock();
        var s = Open(new StreamLimits { MaxAge = TimeSpan.FromSeconds(10) }, clock);
        s.Put("a", "1");
        clock.Advance(TimeSpan.FromSeconds(6));
        s.Put("a", "2");
        clock.Advance(TimeSpan.FromSeconds(6));
        var st = s.GetState();
        Assert.Equal((1UL, 2UL), (st.Messages, st.FirstSequence));
        clock.Advance(TimeSpan.FromSeconds(6));
        s.Put("b", "3");
        st = s.GetState();
        Assert.Equal((1UL, 3UL), (st.Messages, st.FirstSequence));
    }

    [Fact]
    public void Per_message_ttl_expires()
    {
        var clock = new ManualClock();
        var s = Open(clock: clock);
        s.Append(B("t"), default, B("short"), ttl: TimeSpan.FromSeconds(1).Ticks * 100);
        s.Put("t", "forever");
        Assert.Equal(TimeSpan.FromSeconds(1).Ticks * 100, s.Get(1).Ttl);
        s = Reopen(s);
        clock.Advance(TimeSpan.FromSeconds(2));
        var st = s.GetState();
        Assert.Equal((1UL, 2UL), (st.Messages, st.FirstSequence));
    }

    [Fact]
    public void AppendAt_and_SkipTo_leave_gaps()
    {
        var s = Open();
        Assert.Equal(StoreStatus.Ok, s.AppendAt(5, 100, B("a"), default, B("five")));
        Assert.Equal(StoreStatus.SequenceMismatch, s.AppendAt(5, 100, B("a"), default, B("again")));
        Assert.Equal(StoreStatus.Ok, s.SkipTo(9));
        Assert.Equal(10UL, s.Put("a", "ten"));
        s = Reopen(s);
        var st = s.GetState();
        Assert.Equal((2UL, 5UL, 10UL, 4UL), (st.Messages, st.FirstSequence, st.LastSequence, st.Deleted));
        Assert.Equal("five", S(s.Get(5).Payload));
        Assert.Equal(StoreStatus.Deleted, s.Load(7, new StoredMessage()));
    }

    [Fact]
    public async Task Snapshot_and_restore_round_trip_across_engines()
    {
        var s = Open();
        for (int i = 0; i < 50; i++) s.Put("s." + (i % 5), "payload-" + i, i % 2 == 0 ? "h" : "");
        s.Remove(10);
        s.Compact(3);
        Assert.Equal(StoreStatus.Ok, s.OpenConsumer("c1", out var c));
        c!.UpdateDelivered(1, 3, 1, 77);
        var ms = new MemoryStream();
        Assert.Equal(StoreStatus.Ok, await s.SnapshotAsync(ms));
        ms.Position = 0;
        var target = new Memory.MemoryStoreFactory().Open(Config(), null).Store!;
        _open.Add(target);
        Assert.Equal(StoreStatus.Ok, await target.RestoreAsync(ms));
        // Same messages; the bytes are each engine's own figure (nats-server counts them per engine too).
        Assert.Equal(s.GetState() with { Consumers = 0, Bytes = 0 }, target.GetState() with { Consumers = 0, Bytes = 0 });
        var all = new StoredMessage();
        ulong memoryBytes = 0;
        for (ulong q = target.GetState().FirstSequence; target.LoadNext(default, q, all) == StoreStatus.Ok; q = all.Sequence + 1)
            memoryBytes += (ulong)GoSizes.Memory(all.SubjectLength, all.HeadersLength, all.PayloadLength);
        Assert.Equal(memoryBytes, target.GetState().Bytes);
        Assert.Equal("payload-40", S(target.Get(41).Payload));
        Assert.Equal(StoreStatus.Ok, target.OpenConsumer("c1", out var c2));
        var cs = new ConsumerState();
        c2!.GetState(cs);
        Assert.Equal(new SequencePair(1, 3), cs.Delivered);

        // And back into this engine, then corrupt snapshots are refused.
        var back = Factory.Open(Config(), Factory.IsPersistent ? Dir + "-restore" : null).Store!;
        _open.Add(back);
        ms.Position = 0;
        Assert.Equal(StoreStatus.Ok, await back.RestoreAsync(ms));
        Assert.Equal(s.GetState().Messages, back.GetState().Messages);
        back.Delete();
        var bad = ms.ToArray();
        bad[bad.Length / 2] ^= 0x40;
        var other = new Memory.MemoryStoreFactory().Open(Config(), null).Store!;
        _open.Add(other);
        Assert.NotEqual(StoreStatus.Ok, await other.RestoreAsync(new MemoryStream(bad)));
    }

    [Fact]
    public void Consumer_state_tracks_delivered_acks_pending_redeliveries()
    {
        var s = Open();
        Assert.Equal(StoreStatus.Ok, s.OpenConsumer("dur", out var c));
        c!.UpdateDelivered(1, 10, 1, 1000);
        c.UpdateDelivered(2, 11, 1, 1001);
        c.UpdateDelivered(3, 12, 1, 1002);
        c.UpdateDelivered(4, 11, 2, 1003);
        c.UpdateAcked(1, 10);
        var cs = new ConsumerState();
        c.GetState(cs);
        Assert.Equal(new SequencePair(4, 12), cs.Delivered);
        Assert.Equal(new SequencePair(1, 10), cs.AckFloor);
        Assert.Equal(2, cs.Pending.Count);
        Assert.Equal(1UL, cs.Redelivered[11]);
        s = Reopen(s);
        Assert.Contains("dur", s.ConsumerNames());
        Assert.Equal(StoreStatus.Ok, s.OpenConsumer("dur", out c));
        var cs2 = new ConsumerState();
        c!.GetState(cs2);
        Assert.Equal(cs.Delivered, cs2.Delivered);
        Assert.Equal(cs.AckFloor, cs2.AckFloor);
        Assert.Equal(cs.Pending, cs2.Pending);
        c.UpdateAcked(2, 11);
        c.UpdateAcked(3, 12);
        c.GetState(cs2);
        Assert.Equal(new SequencePair(4, 12), cs2.AckFloor);
        Assert.Empty(cs2.Pending);
        Assert.Equal(StoreStatus.Ok, c.Delete());
        s = Reopen(s);
        Assert.DoesNotContain("dur", s.ConsumerNames());
    }

    [Fact]
    public void Concurrent_appends_get_unique_sequences()
    {
        var s = Open();
        var seqs = new ulong[2][];
        Parallel.For(0, 2, t =>
        {
            seqs[t] = new ulong[5000];
            for (int i = 0; i < 5000; i++) seqs[t][i] = s.Append(B("p." + t), default, B("x")).Sequence;
        });
        var all = seqs[0].Concat(seqs[1]).ToHashSet();
        Assert.Equal(10000, all.Count);
        Assert.DoesNotContain(0UL, all);
        Assert.Equal(10000UL, s.GetState().Messages);
    }

    [SkippableFact]
    public void Steady_state_append_and_load_allocate_nothing()
    {
        // Reported skipped (not passed) for engines that do not promise zero-allocation appends.
        Skip.IfNot(ZeroAllocAppend, "this engine configuration does not promise zero-allocation appends");
        var s = Open(new StreamLimits { MaxMessages = 10_000 });
        var subj = B("alloc.test");
        var payload = new byte[128];
        var m = new StoredMessage(512);
        for (int i = 0; i < 50_000; i++) s.Append(subj, default, payload);
        s.Load(s.GetState().LastSequence, m);
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 20_000; i++) s.Append(subj, default, payload);
        long appendBytes = GC.GetAllocatedBytesForCurrentThread() - before;
        ulong last = s.GetState().LastSequence;
        // The thread's count can over-report by the unused rest of an allocation quantum (~8 KB) when a collection
        // started by another thread (the tests run in parallel) lands in the window: a fresh-clone CI run measured
        // 8,120 B once for these loads, never reproduced alone. So the loads are measured up to three times and the
        // least count is taken; an allocation per load (5,001 of them) shows in every attempt.
        long loadBytes = long.MaxValue;
        for (int attempt = 0; attempt < 3 && loadBytes != 0; attempt++)
        {
            before = GC.GetAllocatedBytesForCurrentThread();
            for (ulong q = last - 5000; q <= last; q++) s.Load(q, m);
            s.LoadLast(subj, m);
            loadBytes = Math.Min(loadBytes, GC.GetAllocatedBytesForCurrentThread() - before);
        }
        // Zero per message; a file engine allocates a little per new block (64 KiB blocks here: ~57 new blocks for these
        // appends, 700-800 B each measured, which a checkpoint or block deletion landing on this thread can push past
        // 40 KB; a fresh-clone CI run measured 66,480 B). 128 KB is ~2.2 KB per block and still a quarter of one
        // allocation per message (24 B x 20,000 = 480 KB).
        Assert.True(appendBytes < 128_000, $"append allocated {appendBytes} B for 20000 appends");
        Assert.Equal(0, loadBytes);
    }

    [Fact]
    public void Random_operations_match_a_model()
    {
        var rnd = new Random(42);
        var s = Open(new StreamLimits { MaxMessagesPerSubject = 6 });
        var model = new SortedDictionary<ulong, (string Subj, string Payload)>();
        ulong last = 0;
        for (int step = 0; step < 3000; step++)
        {
            int op = rnd.Next(100);
            if (op < 70)
            {
                var subj = "r." + rnd.Next(8);
                var pay = "p" + step;
                last = s.Put(subj, pay);
                model[last] = (subj, pay);
                var ofSubj = model.Where(kv => kv.Value.Subj == subj).Select(kv => kv.Key).ToList();
                while (ofSubj.Count > 6) { model.Remove(ofSubj[0]); ofSubj.RemoveAt(0); }
            }
            else if (op < 85 && model.Count > 0)
            {
                var seq = model.Keys.ElementAt(rnd.Next(model.Count));
                Assert.Equal(StoreStatus.Ok, s.Remove(seq));
                model.Remove(seq);
            }
            else if (op < 92)
            {
                var subj = "r." + rnd.Next(8);
                ulong keep = (ulong)rnd.Next(3);
                // Half the purges also stop below a sequence (nats-server's purge request with "seq").
                ulong upTo = rnd.Next(2) == 0 ? 0 : Math.Max(1, last + 1 - Math.Min(last, (ulong)rnd.Next(30)));
                s.Purge(B(subj), upToSequence: upTo, keep: keep);
                var ofSubj = model.Where(kv => kv.Value.Subj == subj).Select(kv => kv.Key).ToList();
                while ((ulong)ofSubj.Count > keep && (upTo == 0 || ofSubj[0] < upTo)) { model.Remove(ofSubj[0]); ofSubj.RemoveAt(0); }
                AssertSubjectWalk(s, subj, model);
            }
            else if (op < 94 && model.Count > 0)
            {
                ulong upTo = model.Keys.First() + (ulong)rnd.Next(5);
                s.Compact(upTo);
                foreach (var k in model.Keys.Where(k => k < upTo).ToList()) model.Remove(k);
            }
            else if (op == 99 && Factory.IsPersistent)
            {
                s = Reopen(s);
            }
        }
        s = Reopen(s);
        var st = s.GetState();
        Assert.Equal((ulong)model.Count, st.Messages);
        Assert.Equal(last, st.LastSequence);
        if (model.Count > 0) Assert.Equal(model.Keys.First(), st.FirstSequence);
        var m = new StoredMessage();
        foreach (var kv in model)
        {
            Assert.Equal(StoreStatus.Ok, s.Load(kv.Key, m));
            Assert.Equal(kv.Value.Subj, m.SubjectString);
            Assert.Equal(kv.Value.Payload, S(m.Payload));
        }
        for (int k = 0; k < 8; k++)
        {
            var subj = "r." + k;
            var expected = model.Where(kv => kv.Value.Subj == subj).Select(kv => kv.Key).ToList();
            Assert.Equal((ulong)expected.Count, s.CountMatching(B(subj)));
            if (expected.Count > 0)
            {
                Assert.Equal(StoreStatus.Ok, s.LoadLast(B(subj), m));
                Assert.Equal(expected[^1], m.Sequence);
            }
            AssertSubjectWalk(s, subj, model);
        }
    }

    /// <summary>Reading a subject forward from sequence 1 finds exactly the model's messages of it, in order.</summary>
    private static void AssertSubjectWalk(IStreamStore s, string subj, SortedDictionary<ulong, (string Subj, string Payload)> model)
    {
        var expected = model.Where(kv => kv.Value.Subj == subj).Select(kv => kv.Key).ToList();
        var walked = new List<ulong>();
        var m = new StoredMessage();
        for (ulong from = 1; s.LoadNext(B(subj), from, m) == StoreStatus.Ok; from = m.Sequence + 1) walked.Add(m.Sequence);
        Assert.Equal(expected, walked);
    }

    /// <summary>
    /// The MQTT session stream's pattern (one record per client: max_msgs_per_subject 1, rewritten on every change and
    /// purged by subject when a session ends): after every operation the last message of the subject touched is the
    /// one a model says, and a purged subject has none, across block rolls, compactions and reopens.
    /// </summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void Records_rewritten_and_purged_by_subject_stay_exact(int seed)
    {
        var rnd = new Random(seed);
        var s = Open(new StreamLimits { MaxMessagesPerSubject = 1 });
        var model = new Dictionary<string, (ulong Seq, string Payload)>();
        var m = new StoredMessage();
        for (int step = 0; step < 4000; step++)
        {
            var subj = "sess." + rnd.Next(40);
            int op = rnd.Next(100);
            if (op < 75)
            {
                var pay = "rec" + step;
                model[subj] = (s.Put(subj, pay), pay);
            }
            else if (op < 98)
            {
                s.Purge(B(subj));
                model.Remove(subj);
            }
            else if (Factory.IsPersistent)
            {
                s = Reopen(s);
            }
            if (model.TryGetValue(subj, out var want))
            {
                Assert.Equal(StoreStatus.Ok, s.LoadLast(B(subj), m));
                Assert.Equal(want.Seq, m.Sequence);
                Assert.Equal(want.Payload, S(m.Payload));
            }
            else
            {
                Assert.NotEqual(StoreStatus.Ok, s.LoadLast(B(subj), m));
            }
            Assert.Equal(model.ContainsKey(subj) ? 1UL : 0UL, s.CountMatching(B(subj)));
        }
        s = Reopen(s);
        Assert.Equal((ulong)model.Count, s.GetState().Messages);
        foreach (var (subj, want) in model)
        {
            Assert.Equal(StoreStatus.Ok, s.LoadLast(B(subj), m));
            Assert.Equal(want.Seq, m.Sequence);
        }
    }
}

public sealed class MemoryStoreContractTests : StoreContractTests
{
    protected override IStreamStoreFactory Factory { get; } = new Memory.MemoryStoreFactory();
    protected override long ExpectedStoredSize(int subject, int headers, int payload) => GoSizes.Memory(subject, headers, payload);
    protected override bool CachedLoadsWhenWarm => true;
}

public sealed class FileStoreContractTests : StoreContractTests
{
    protected override IStreamStoreFactory Factory { get; } = new File.FileStoreFactory();
    protected override long ExpectedStoredSize(int subject, int headers, int payload) => GoSizes.File(subject, headers, payload);
    // Small blocks so the suite crosses block boundaries, evicts caches and compacts emptied blocks.
    protected override IReadOnlyDictionary<string, string> EngineOptions => new Dictionary<string, string> { ["block_size"] = "65536" };
    // The block being written keeps its image in memory (FileStore.Read.cs).
    protected override bool CachedLoadsWhenWarm => true;
}

public sealed class FileStoreSyncAlwaysContractTests : StoreContractTests
{
    protected override IStreamStoreFactory Factory { get; } = new File.FileStoreFactory();
    protected override long ExpectedStoredSize(int subject, int headers, int payload) => GoSizes.File(subject, headers, payload);
    protected override IReadOnlyDictionary<string, string> EngineOptions => new Dictionary<string, string> { ["block_size"] = "16384", ["cache_blocks"] = "0" };
    protected override bool ZeroAllocAppend => false;
    protected override SyncPolicy DefaultSync => SyncPolicy.Always;
}
