using NatsBroker.Bench.Micro;

// Microbenchmarks: dotnet run -c Release --project bench/NatsBroker.Bench.Micro [-- --quick] [-- filter]
// Reports ops/s, ns/op and allocated bytes/op (GC.GetAllocatedBytesForCurrentThread). The delivery path's target is 0 B/op.
var quick = args.Contains("--quick");
var filters = args.Where(a => !a.StartsWith("--", StringComparison.Ordinal)).ToArray();
IMicroBenchmark[] all =
[
    new SubjectIsValidBenchmark(),
    new SubjectMatchesBenchmark(),
    .. SubListMatchBenchmark.All(),
    .. ParserBenchmark.All(),
];
var target = TimeSpan.FromMilliseconds(quick ? 200 : 1000);
Console.WriteLine("| Benchmark | ops/s | ns/op | allocated B/op |");
Console.WriteLine("|---|---|---|---|");
foreach (var b in all.Where(b => filters.Length == 0 || filters.Any(f => b.Name.Contains(f, StringComparison.OrdinalIgnoreCase))))
{
    Console.WriteLine(MicroHarness.Format(MicroHarness.Measure(b, target)));
}
