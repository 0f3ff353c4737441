using System.Text.RegularExpressions;
using System.Xml.Linq;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Hosting;

/// <summary>
/// deploy/Containerfile, checked without a container engine (none runs the image in the test sandbox): what it copies
/// from the build context exists, its last stage pulls nothing (FROM scratch), the executable its entrypoint names is
/// the one the build stage's `dotnet publish core` writes, the four executables are the ones whose libraries it
/// collects, and it reads its config from the /etc/natsbroker volume and exposes the usual ports.
/// </summary>
public sealed partial class ContainerfileTests
{
    private static readonly string Path_ = Path.Combine(TestEnvironment.RepoRoot, "deploy", "Containerfile");

    /// <summary>The instructions, continuation lines joined, comments dropped: (KEYWORD, rest).</summary>
    private static List<(string Keyword, string Args)> Instructions()
    {
        var joined = Continuation().Replace(File.ReadAllText(Path_).ReplaceLineEndings("\n"), " ");
        return joined.Split('\n')
            .Select(l => l.Trim())
            .Where(l => l.Length > 0 && !l.StartsWith('#'))
            .Select(l => (l.Split(' ', 2)[0].ToUpperInvariant(), l.Split(' ', 2) is [_, var rest] ? rest.Trim() : ""))
            .ToList();
    }

    private static string AssemblyName(string csproj) =>
        XDocument.Load(Path.Combine(TestEnvironment.RepoRoot, csproj)).Descendants("AssemblyName").Single().Value;

    [Fact]
    public void Its_context_copies_exist_and_the_last_stage_pulls_nothing()
    {
        var ins = Instructions();
        var froms = ins.Where(i => i.Keyword == "FROM").ToList();
        Assert.True(froms.Count >= 2, "expected a build stage and a runtime stage");
        Assert.Equal("scratch", froms[^1].Args.Split(' ')[0]);
        foreach (var (_, args) in ins.Where(i => i.Keyword == "COPY" && !i.Args.Contains("--from=", StringComparison.Ordinal)))
        {
            var parts = args.Split(' ', StringSplitOptions.RemoveEmptyEntries).Where(p => !p.StartsWith("--", StringComparison.Ordinal)).ToArray();
            foreach (var source in parts[..^1])
            {
                var full = Path.Combine(TestEnvironment.RepoRoot, source);
                Assert.True(File.Exists(full) || Directory.Exists(full), $"COPY source {source} is not in the repository");
            }
        }
        // Every COPY into the last stage comes from the build stage's file system under /rootfs.
        var stage = froms[0].Args.Split(' ') is [.., "AS" or "as", var name] ? name : null;
        Assert.NotNull(stage);
        var last = ins.FindLastIndex(i => i.Keyword == "FROM");
        foreach (var (_, args) in ins.Skip(last).Where(i => i.Keyword == "COPY"))
        {
            Assert.Contains($"--from={stage}", args, StringComparison.Ordinal);
            Assert.Contains(" /rootfs/", " " + args, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void The_entrypoint_is_the_published_core_and_the_gateways_are_beside_it()
    {
        var ins = Instructions();
        var publish = ins.Where(i => i.Keyword == "RUN").Select(i => PublishCore().Match(i.Args)).Single(m => m.Success);
        var outDir = publish.Groups[1].Value;
        Assert.StartsWith("/rootfs/", outDir, StringComparison.Ordinal);
        var imageDir = outDir["/rootfs".Length..];
        var entry = ins.Single(i => i.Keyword == "ENTRYPOINT").Args;
        Assert.Equal($"[\"{imageDir}/{AssemblyName("core/NatsBroker.csproj")}\"]", entry);
        // The library collection names the four executables the publish folder holds (core/NatsBroker.csproj
        // PublishSupervisedGateways publishes the gateways into it).
        var text = File.ReadAllText(Path_);
        foreach (var csproj in new[] { "core/NatsBroker.csproj", "gateways/tls-terminator/NatsBroker.TlsTerminator.csproj",
                     "gateways/websocket/NatsBroker.WebSocketGateway.csproj", "gateways/mqtt/NatsBroker.MqttGateway.csproj" })
        {
            var name = AssemblyName(csproj);
            Assert.Matches($@"for exe in [^;]*\b{Regex.Escape(name)}\b", text);
        }
    }

    [Fact]
    public void It_reads_the_config_volume_and_exposes_the_client_monitoring_and_gateway_ports()
    {
        var ins = Instructions();
        Assert.Contains("\"/etc/natsbroker\"", ins.Single(i => i.Keyword == "VOLUME").Args, StringComparison.Ordinal);
        Assert.Contains("\"/etc/natsbroker/", ins.Single(i => i.Keyword == "CMD").Args, StringComparison.Ordinal);
        var exposed = ins.Where(i => i.Keyword == "EXPOSE").SelectMany(i => i.Args.Split(' ', StringSplitOptions.RemoveEmptyEntries)).ToHashSet();
        foreach (var port in new[] { "4222", "8222", "8080", "1883" }) Assert.Contains(port, exposed);
    }

    [GeneratedRegex(@"\\\n")]
    private static partial Regex Continuation();

    [GeneratedRegex(@"dotnet publish core\b.*?-o (\S+)")]
    private static partial Regex PublishCore();
}
