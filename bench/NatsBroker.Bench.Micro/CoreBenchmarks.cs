using System.Buffers;
using System.Text;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Bench.Micro;

/// <summary>
/// SubList matching as the publish path does it: <c>Match(subject, l1)</c> with the connection's L1 cache, over
/// 1,000 subscriptions; the subjects rotate so every call is a real lookup (hits after the first round).
/// </summary>
internal sealed class SubListMatchBenchmark(string name, Func<int, (string Subject, string? Queue)> subscription, string[] published)
    : IMicroBenchmark
{
    private sealed class Owner : ISubscriber
    {
        public DeliveryOutcome Deliver(Subscription sub, ref RoutedMessage msg, DeliveryBatch batch) => DeliveryOutcome.Delivered;
    }

    private readonly SubList _sl = new();
    private readonly SubjectResultCache _l1 = new();
    private byte[][] _subjects = [];

    public string Name => name;
    public string? Pending => null;

    public void Setup()
    {
        var owner = new Owner();
        for (int i = 0; i < 1000; i++)
        {
            var (subject, queue) = subscription(i);
            _sl.Insert(new Subscription(Encoding.ASCII.GetBytes(subject), queue is null ? null : Encoding.ASCII.GetBytes(queue),
                Encoding.ASCII.GetBytes(i.ToString(System.Globalization.CultureInfo.InvariantCulture)), owner));
        }
        _subjects = [.. published.Select(Encoding.ASCII.GetBytes)];
    }

    public long Run(int n)
    {
        long c = 0;
        var subjects = _subjects;
        for (int i = 0; i < n; i++)
        {
            var r = _sl.Match(subjects[i & (subjects.Length - 1)], _l1);
            c += r.Plain.Length + r.Queues.Length;
        }
        return c;
    }

    public static IMicroBenchmark[] All() =>
    [
        new SubListMatchBenchmark("SubList match, exact subject (1k subs)",
            i => ($"orders.{i % 10}.item{i}.created", null),
            ["orders.1.item1.created", "orders.2.item2.created", "orders.3.item3.created", "orders.4.item4.created"]),
        new SubListMatchBenchmark("SubList match, wildcard subject (1k subs)",
            i => i % 100 == 0 ? ($"orders.*.item{i}.>", null) : ($"orders.{i % 10}.item{i}.created", null),
            ["orders.5.item100.created", "orders.2.item200.a.b", "orders.3.item3.created", "orders.4.item400.x"]),
        new SubListMatchBenchmark("SubList match, queue group (1k subs)",
            i => ("work.jobs", $"q{i % 4}"),
            ["work.jobs", "work.jobs", "work.jobs", "work.jobs"]),
    ];
}

/// <summary>
/// The protocol parser over pre-built input: 100 ops per buffer, parsed by a handler that only counts, so the
/// figure is the parser's own cost per op. The split variant hands the same bytes over in two segments cut inside
/// a PUB, the case of a read boundary falling mid-message.
/// </summary>
internal sealed class ParserBenchmark(string name, string op, bool split) : IMicroBenchmark
{
    private sealed class CountingHandler : IProtocolHandler
    {
        public long Ops;
        public bool IsClosing => false;
        public bool HeadersEnabled => true;
        public int MaxPayload => 1 << 20;
        public bool RejectBeforeConnect() => false;
        public void OnConnect(ReadOnlySpan<byte> json) => Ops++;
        public void OnInfo(ReadOnlySpan<byte> json) => Ops++;
        public void OnPing() => Ops++;
        public void OnPong() => Ops++;
        public void OnClientError(ReadOnlySpan<byte> text) => Ops++;
        public void OnPubArgs(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, int totalSize) { }
        public void OnPub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> reply, int headerSize, in ReadOnlySequence<byte> payload) => Ops++;
        public void OnSub(ReadOnlySpan<byte> subject, ReadOnlySpan<byte> queue, ReadOnlySpan<byte> sid) => Ops++;
        public void OnUnsub(ReadOnlySpan<byte> sid, long max) => Ops++;
        public void OnProtocolError(ProtocolError error) => throw new InvalidOperationException(error.ToString());
    }

    private sealed class Segment : ReadOnlySequenceSegment<byte>
    {
        public Segment(ReadOnlyMemory<byte> memory, long runningIndex) { Memory = memory; RunningIndex = runningIndex; }
        public void SetNext(Segment next) => Next = next;
    }

    private const int OpsPerBuffer = 100;
    private readonly ProtocolParser _parser = new(4096);
    private readonly CountingHandler _handler = new();
    private ReadOnlySequence<byte> _input;

    public string Name => name;
    public string? Pending => null;

    public void Setup()
    {
        var bytes = Encoding.ASCII.GetBytes(string.Concat(Enumerable.Repeat(op, OpsPerBuffer)));
        if (!split)
        {
            _input = new ReadOnlySequence<byte>(bytes);
            return;
        }
        // Cut inside the 50th op's payload.
        int cut = op.Length * 49 + op.Length - 5;
        var first = new Segment(bytes.AsMemory(0, cut), 0);
        var second = new Segment(bytes.AsMemory(cut), cut);
        first.SetNext(second);
        _input = new ReadOnlySequence<byte>(first, 0, second, second.Memory.Length);
    }

    public long Run(int n)
    {
        long before = _handler.Ops;
        for (int i = 0; i < n; i += OpsPerBuffer)
        {
            _parser.Parse(_input, _handler, out _);
        }
        return _handler.Ops - before;
    }

    public static IMicroBenchmark[] All() =>
    [
        new ParserBenchmark("Parser PING", "PING\r\n", split: false),
        new ParserBenchmark("Parser PUB 16 B", "PUB orders.eu.created 16\r\n0123456789abcdef\r\n", split: false),
        new ParserBenchmark("Parser HPUB", "HPUB orders.eu.created _INBOX.abc 18 34\r\nNATS/1.0\r\nA: b\r\n\r\n0123456789abcdef\r\n", split: false),
        new ParserBenchmark("Parser PUB split across segments", "PUB orders.eu.created 16\r\n0123456789abcdef\r\n", split: true),
    ];
}
