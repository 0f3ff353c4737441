using NatsBroker.Contracts;
using static NatsBroker.Storage.Tests.U;

namespace NatsBroker.Storage.Tests;

/// <summary>
/// Stored sizes: what each engine counts toward its state's bytes, max_bytes and the account's limits is its own
/// figure (nats-server 2.14.5: memstore.go memStoreMsgSize, filestore.go fileStoreMsgSize; <see cref="GoSizes"/>),
/// a removal takes off exactly what the append added, and a reopen counts the same.
/// </summary>
public abstract partial class StoreContractTests
{
    /// <summary>The figure this engine must count (the built-in engines: nats-server's; others: the contract's default).</summary>
    protected virtual long ExpectedStoredSize(int subject, int headers, int payload) => (long)subject + headers + payload;

    /// <summary>A second store of this test (a persistent one in its own directory, removed with the first).</summary>
    private IStreamStore OpenSecond(StreamLimits limits)
    {
        var r = Factory.Open(Config(limits) with { StreamName = "S2" }, Factory.IsPersistent ? SecondDir : null);
        Assert.True(r.IsOk, r.Error);
        _open.Add(r.Store!);
        return r.Store!;
    }

    private string SecondDir => Dir + "-2";

    private const string LongSubject = "orders.europe.west.warehouse-0042.shipments.express.priority.high";
    private const string Hdr = "NATS/1.0\r\nNats-Msg-Id: abc\r\n\r\n";

    /// <summary>Short and long subjects, with and without headers, empty and longer payloads.</summary>
    private static readonly (string Subject, string Headers, string Payload)[] SizeCases =
    [
        ("a", "", "x"),
        (LongSubject, "", new string('p', 100)),
        ("h", Hdr, "pp"),
        (LongSubject, Hdr, ""),
        ("e", "", ""),
        ("a", Hdr, new string('q', 1000)),
    ];

    private long Expected((string Subject, string Headers, string Payload) m) =>
        ExpectedStoredSize(B(m.Subject).Length, B(m.Headers).Length, B(m.Payload).Length);

    [Fact]
    public void Stored_size_is_the_engines_figure_and_a_reopen_counts_the_same()
    {
        var s = Open();
        long total = 0;
        foreach (var m in SizeCases)
        {
            Assert.Equal(Expected(m), s.StoredSize(B(m.Subject).Length, B(m.Headers).Length, B(m.Payload).Length));
            s.Put(m.Subject, m.Payload, m.Headers);
            total += Expected(m);
            Assert.Equal((ulong)total, s.GetState().Bytes);
        }
        Assert.Equal(StoreStatus.Ok, s.Remove(2));
        total -= Expected(SizeCases[1]);
        Assert.Equal(StoreStatus.Ok, s.Erase(3));
        total -= Expected(SizeCases[2]);
        Assert.Equal((ulong)total, s.GetState().Bytes);
        s = Reopen(s);
        Assert.Equal((ulong)total, s.GetState().Bytes);
        Assert.Equal(StoreStatus.Ok, s.Remove(4));
        total -= Expected(SizeCases[3]);
        Assert.Equal((ulong)total, s.GetState().Bytes);
        s = Reopen(s);
        Assert.Equal((ulong)total, s.GetState().Bytes);
        Assert.Equal(new PurgeResult(StoreStatus.Ok, 3), s.Purge());
        Assert.Equal(0UL, s.GetState().Bytes);
    }

    [Fact]
    public void MaxMessageSize_counts_headers_and_payload_not_the_subject()
    {
        // stream.go processJetStreamMsg: len(hdr) + len(msg) > max_msg_size refuses; the subject is not counted.
        var s = Open(new StreamLimits { MaxMessageSize = 10 });
        Assert.True(s.Append(B(LongSubject), default, new byte[10]).IsOk);
        Assert.Equal(StoreStatus.MessageTooLarge, s.Append(B(LongSubject), default, new byte[11]).Status);
        Assert.Equal(StoreStatus.MessageTooLarge, s.Append(B("a"), B("NATS/1.0\r\nA: 1\r\n\r\n"), default).Status);
        var s2 = OpenSecond(new StreamLimits { MaxMessageSize = 30 });
        Assert.True(s2.Append(B(LongSubject), B(Hdr), default).IsOk); // 30 bytes of headers
        Assert.Equal(StoreStatus.MessageTooLarge, s2.Append(B("a"), B(Hdr), B("x")).Status);
    }

    [Fact]
    public void MaxBytes_discard_old_keeps_what_the_engines_figure_allows()
    {
        // Room for about three of the mixed messages: which ones stay depends on the figure with its overheads.
        long max = Expected(SizeCases[1]) + Expected(SizeCases[3]) + Expected(SizeCases[4]) + 5;
        var s = Open(new StreamLimits { MaxBytes = max });
        var sizes = new List<long>();
        for (int round = 0; round < 3; round++)
        {
            foreach (var m in SizeCases)
            {
                s.Put(m.Subject, m.Payload, m.Headers);
                sizes.Add(Expected(m));
            }
        }
        // Model: drop from the front while over max_bytes.
        int first = 0;
        long bytes = sizes.Sum();
        while (bytes > max) bytes -= sizes[first++];
        var st = s.GetState();
        Assert.Equal(((ulong)first + 1, (ulong)(sizes.Count - first), (ulong)bytes), (st.FirstSequence, st.Messages, st.Bytes));
        s = Reopen(s);
        st = s.GetState();
        Assert.Equal(((ulong)first + 1, (ulong)(sizes.Count - first), (ulong)bytes), (st.FirstSequence, st.Messages, st.Bytes));
    }

    [Fact]
    public void MaxBytes_discard_new_refuses_the_message_that_would_pass_the_limit()
    {
        long max = Expected(SizeCases[0]) + Expected(SizeCases[2]);
        var s = Open(new StreamLimits { MaxBytes = max, Discard = DiscardPolicy.New });
        s.Put(SizeCases[0].Subject, SizeCases[0].Payload);
        Assert.Equal(StoreStatus.MaxBytesExceeded, s.Append(B("h"), B(Hdr), B("ppp")).Status);
        Assert.True(s.Append(B("h"), B(Hdr), B("pp")).IsOk); // exactly at the limit
        Assert.Equal((ulong)max, s.GetState().Bytes);
        Assert.Equal(StoreStatus.MaxBytesExceeded, s.Append(B("e"), default, default).Status);
        Assert.Equal(2UL, s.GetState().LastSequence);
    }

    [Fact]
    public void Discard_new_at_the_subject_limit_replaces_the_subjects_oldest()
    {
        // memstore.go / filestore.go storeRawMsg: a subject at max_msgs_per_subject replaces its oldest message, so
        // max_msgs does not refuse it, and max_bytes refuses it only when the oldest is smaller than it.
        var s = Open(new StreamLimits { MaxMessages = 2, MaxMessagesPerSubject = 1, Discard = DiscardPolicy.New });
        s.Put("a", "1");
        s.Put("b", "1");
        Assert.Equal(StoreStatus.MaxMessagesExceeded, s.Append(B("c"), default, B("1")).Status);
        Assert.True(s.Append(B("a"), default, B("2")).IsOk);
        var st = s.GetState();
        Assert.Equal((2UL, 2UL, 3UL), (st.Messages, st.FirstSequence, st.LastSequence));

        long max = 2 * ExpectedStoredSize(1, 0, 10);
        var s2 = OpenSecond(new StreamLimits { MaxBytes = max, MaxMessagesPerSubject = 1, Discard = DiscardPolicy.New });
        s2.Put("a", new string('x', 10));
        s2.Put("b", new string('x', 10));
        Assert.True(s2.Append(B("a"), default, B(new string('y', 10))).IsOk);  // same size as the one it replaces
        Assert.Equal(StoreStatus.MaxBytesExceeded, s2.Append(B("a"), default, B(new string('y', 11))).Status);
        Assert.True(s2.Append(B("a"), default, B("small")).IsOk);
        Assert.Equal(StoreStatus.MaxBytesExceeded, s2.Append(B("c"), default, B("zzzzzz")).Status);
        Assert.Equal(2UL, s2.GetState().Messages);
    }
}
