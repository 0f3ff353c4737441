using NatsBroker.Bench.Micro;

// Microbenchmarks: dotnet run -c Release --project bench/NatsBroker.Bench.Micro [-- --quick] [-- filter]
// Reports ops/s, ns/op and allocated bytes/op (GC.GetAllocatedBytesForCurrentThread). The delivery path's target is 0 B/op.
var quick = args.Contains("--quick");
var filters = args.Where(a => !a.StartsWith("--", StringComparison.Ordinal)).ToArray();
IMicroBenchmark[] all =
[
    new SubjectIsValidBenchmark(),
    new SubjectMatchesBenchmark(),
    new PendingBenchmark("SubList match, exact subject", "SubList not in core yet"),
    new PendingBenchmark("SubList match, wildcard subject", "SubList not in core yet"),
    new PendingBenchmark("SubList match, queue group", "SubList not in core yet"),
    new PendingBenchmark("Parser PING", "protocol parser not in core yet"),
    new PendingBenchmark("Parser PUB 16 B", "protocol parser not in core yet"),
    new PendingBenchmark("Parser HPUB", "protocol parser not in core yet"),
    new PendingBenchmark("Parser PUB split across segments", "protocol parser not in core yet"),
];
var target = TimeSpan.FromMilliseconds(quick ? 200 : 1000);
Console.WriteLine("| Benchmark | ops/s | ns/op | allocated B/op |");
Console.WriteLine("|---|---|---|---|");
foreach (var b in all.Where(b => filters.Length == 0 || filters.Any(f => b.Name.Contains(f, StringComparison.OrdinalIgnoreCase))))
{
    Console.WriteLine(MicroHarness.Format(MicroHarness.Measure(b, target)));
}
