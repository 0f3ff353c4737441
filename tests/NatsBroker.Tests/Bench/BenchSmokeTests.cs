using System.Diagnostics;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Server;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Bench;

/// <summary>
/// CI's smoke pass of the side-by-side benchmark (bench/NatsBroker.Bench --smoke): tiny counts, both servers,
/// every raw-protocol and NATS.Net scenario; it must complete and print its table. No timing is asserted. Runs alone (CPU heavy).
/// </summary>
[Collection(AllocationCollection.Name)]
public class BenchSmokeTests(ITestOutputHelper output)
{
    [SkippableFact]
    public async Task Benchmark_smoke_pass_completes_and_prints_a_table()
    {
        // Side by side: without nats-server the bench would measure ours alone and this smoke would not cover the pairing.
        var goServer = Prerequisites.RequireGoServer(output);
        var root = TestEnvironment.RepoRoot;
        var dll = Path.Combine(root, "bench", "NatsBroker.Bench", "bin", "Release", "net10.0", "NatsBroker.Bench.dll");
        if (!File.Exists(dll)) dll = Path.Combine(root, "bench", "NatsBroker.Bench", "bin", "Debug", "net10.0", "NatsBroker.Bench.dll");
        Assert.True(File.Exists(dll), $"bench not built: {dll} (dotnet test NatsBroker.slnx builds it)");
        var outDir = Path.Combine(Path.GetTempPath(), "natsbroker-bench-smoke-" + Guid.NewGuid().ToString("N"));
        var psi = new ProcessStartInfo(TestEnvironment.DotnetHost())
        {
            WorkingDirectory = root,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
        };
        foreach (var a in new[] { dll, "--smoke", "--no-build", "--gen", "raw,natsnet", "--timeout", "30", "--go-cmd", goServer, "--out", outDir }) psi.ArgumentList.Add(a);
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(4));
        try
        {
            await p.WaitForExitAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            Assert.Fail("bench smoke did not finish in 4 minutes");
        }
        output.WriteLine(await stdout);
        output.WriteLine(await stderr);
        Assert.Equal(0, p.ExitCode);
        var table = File.ReadAllText(Path.Combine(outDir, "smoke.md"));
        Assert.Contains("| Scenario | Payload | Go msg/s | Go MB/s | ours msg/s | ours MB/s | Ratio", table);
        Assert.Contains("pubsub-16", table);
        Assert.Contains("nn-pubsub-16", table);
        Assert.Contains("nn-reqrep-128", table);
        // Every core row also runs cold (first traffic on a fresh process), paired with its steady-state twin.
        Assert.Contains("## Cold and steady state", table);
        Assert.Contains("`pubsub-16-cold`", table);
        // Cluster rows (issue 46): a fresh 3-node mesh per run on both sides, counts checked across the routes.
        Assert.Matches(@"\(`route-pub-sub-16`\) \| 16 B \| \d", table);
        Assert.Matches(@"\(`route-queue`\) \| 128 B \| \d", table);
        Assert.Contains("`route-req-rep-cold`", table);
        // Start-up to listening, idle RSS and per-idle-connection memory of both servers in the same run.
        Assert.Contains("## Start-up and memory footprint", table);
        Assert.Matches(@"\| ours \| \d+\.\d", table);
        if (TestEnvironment.GoServerPath is not null) Assert.Matches(@"\| go \| \d+\.\d", table);
        Directory.Delete(outDir, recursive: true);
    }
}
