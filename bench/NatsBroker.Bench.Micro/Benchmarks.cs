using NatsBroker.Subjects;

namespace NatsBroker.Bench.Micro;

/// <summary>Subject validation of a typical 4-token literal subject.</summary>
internal sealed class SubjectIsValidBenchmark : IMicroBenchmark
{
    // Several inputs, rotated, so the JIT cannot hoist a pure call out of the loop.
    private readonly byte[][] _subjects =
    [
        "orders.eu.west.created"u8.ToArray(), "orders.us.east.updated"u8.ToArray(),
        "orders.ap.south.deleted"u8.ToArray(), "orders.eu.north.created"u8.ToArray(),
    ];

    public string Name => "Subject.IsValid (4 tokens)";

    public string? Pending => null;

    public void Setup()
    {
    }

    public long Run(int n)
    {
        long c = 0;
        for (int i = 0; i < n; i++)
        {
            c += Subject.IsValid(_subjects[i & 3]) ? 1 : 0;
        }

        return c;
    }
}

/// <summary>Wildcard pattern against a literal subject (no SubList: the pairwise matcher).</summary>
internal sealed class SubjectMatchesBenchmark : IMicroBenchmark
{
    private readonly byte[] _pattern = "orders.*.west.>"u8.ToArray();
    private readonly byte[][] _literals =
    [
        "orders.eu.west.created"u8.ToArray(), "orders.us.west.updated"u8.ToArray(),
        "orders.ap.east.deleted"u8.ToArray(), "orders.eu.west.a.b"u8.ToArray(),
    ];

    public string Name => "Subject.Matches (orders.*.west.>)";

    public string? Pending => null;

    public void Setup()
    {
    }

    public long Run(int n)
    {
        long c = 0;
        for (int i = 0; i < n; i++)
        {
            c += Subject.Matches(_pattern, _literals[i & 3]) ? 1 : 0;
        }

        return c;
    }
}

