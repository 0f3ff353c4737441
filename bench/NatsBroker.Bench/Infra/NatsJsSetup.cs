namespace NatsBroker.Bench.Infra;

/// <summary>Makes sure node and bench/js/node_modules (the nats.js client) are present; runs npm ci if not.</summary>
internal static class NatsJsSetup
{
    public static string? Unavailable { get; set; }

    public static string ScriptDir(string root) => Path.Combine(root, "bench", "js");

    public static string? Ensure(string root)
    {
        if (Harness.FindOnPath("node") is null)
        {
            return "node not found on PATH (Debian: apt-get install nodejs npm)";
        }

        string dir = ScriptDir(root);
        if (Directory.Exists(Path.Combine(dir, "node_modules", "nats")))
        {
            return null;
        }

        if (Harness.FindOnPath("npm") is null)
        {
            return "npm not found on PATH (Debian: apt-get install npm)";
        }

        bool lockfile = File.Exists(Path.Combine(dir, "package-lock.json"));
        Console.WriteLine($"installing nats.js: npm {(lockfile ? "ci" : "install")} in {dir} ...");
        var (code, output) = Harness.RunProcess("npm", lockfile ? ["ci", "--no-audit", "--no-fund"] : ["install", "--no-audit", "--no-fund"], TimeSpan.FromMinutes(5), dir);
        if (code != 0)
        {
            return $"npm failed (exit {code}): {output.Trim().Split('\n').LastOrDefault()}";
        }

        return Directory.Exists(Path.Combine(dir, "node_modules", "nats")) ? null : "npm finished but node_modules/nats is missing";
    }
}
