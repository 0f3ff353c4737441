using System.Diagnostics;
using System.Text;
using System.Text.Json;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// Runs a nats.js scenario script (tests/js/*.mjs) with node. Scripts print JSON lines on stdout:
/// <c>{"event":"name",...}</c> progress events the test can wait for, and a final
/// <c>{"done":true,"ok":bool,"failures":[...],...}</c>. The test can write command lines to the script's stdin.
/// Server URLs are passed in NATS_URL (comma-separated) and as arguments.
/// </summary>
public sealed class NodeClient : IAsyncDisposable
{
    private static readonly SemaphoreSlim s_installLock = new(1, 1);
    private static Task? s_install;

    private readonly Process _process;
    private readonly StringBuilder _stderr = new();
    private readonly List<JsonElement> _lines = [];
    private readonly object _gate = new();
    private readonly ITestOutputHelper? _log;
    private TaskCompletionSource _changed = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private bool _stdoutClosed;

    private NodeClient(Process process, ITestOutputHelper? log)
    {
        _process = process;
        _log = log;
    }

    /// <summary>Why nats.js tests cannot run here (node or npm missing), or null.</summary>
    public static string? UnavailableReason()
    {
        if (TestEnvironment.NodePath is null)
        {
            return "node was not found on PATH (install Node.js 18+ to run the nats.js client tests)";
        }

        if (!Installed() && TestEnvironment.NpmPath is null)
        {
            return "tests/js/node_modules is missing and npm was not found on PATH";
        }

        return null;
    }

    // Every package of tests/js/package.json: a node_modules installed before a package was added runs npm ci again.
    private static readonly string[] s_packages = ["nats", "@nats-io/transport-node", "@nats-io/jetstream"];

    private static bool Installed() =>
        s_packages.All(p => File.Exists(Path.Combine(TestEnvironment.JsDir, "node_modules", p, "package.json")));

    /// <summary>Runs <c>npm ci</c> in tests/js once per test run when a package is missing (bounded to 3 minutes).</summary>
    public static async Task EnsureInstalledAsync()
    {
        await s_installLock.WaitAsync().ConfigureAwait(false);
        try
        {
            s_install ??= InstallAsync();
        }
        finally
        {
            s_installLock.Release();
        }

        await s_install.ConfigureAwait(false);
    }

    private static async Task InstallAsync()
    {
        var dir = TestEnvironment.JsDir;
        if (Installed())
        {
            return;
        }

        var psi = new ProcessStartInfo(TestEnvironment.NpmPath ?? "npm")
        {
            WorkingDirectory = dir,
            UseShellExecute = false,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
        };
        foreach (var a in new[] { "ci", "--no-audit", "--no-fund", "--loglevel=error" })
        {
            psi.ArgumentList.Add(a);
        }

        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        try
        {
            await p.WaitForExitAsync(cts.Token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            throw new TimeoutException("npm ci in tests/js did not finish within 3 minutes");
        }

        if (p.ExitCode != 0)
        {
            throw new InvalidOperationException($"npm ci in tests/js failed ({p.ExitCode}):\n{await stdout.ConfigureAwait(false)}\n{await stderr.ConfigureAwait(false)}");
        }
    }

    /// <summary>Starts <paramref name="script"/> (a file in tests/js) against <paramref name="urls"/>.</summary>
    public static async Task<NodeClient> StartAsync(string script, IEnumerable<string> urls, IReadOnlyDictionary<string, string>? env = null, ITestOutputHelper? log = null)
    {
        await EnsureInstalledAsync().ConfigureAwait(false);
        var urlList = urls.ToList();
        var psi = new ProcessStartInfo(TestEnvironment.NodePath ?? "node")
        {
            WorkingDirectory = TestEnvironment.JsDir,
            UseShellExecute = false,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
        };
        psi.ArgumentList.Add(Path.Combine(TestEnvironment.JsDir, script));
        foreach (var u in urlList)
        {
            psi.ArgumentList.Add(u);
        }

        psi.Environment["NATS_URL"] = string.Join(',', urlList);
        foreach (var (k, v) in env ?? new Dictionary<string, string>())
        {
            psi.Environment[k] = v;
        }

        var p = new Process { StartInfo = psi };
        var client = new NodeClient(p, log);
        p.OutputDataReceived += (_, e) => client.OnStdout(e.Data);
        p.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is not null)
            {
                lock (client._stderr)
                {
                    client._stderr.AppendLine(e.Data);
                }
            }
        };
        p.Start();
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        log?.WriteLine($"node {script} {string.Join(' ', urlList)} (pid {p.Id})");
        return client;
    }

    /// <summary>Runs a script to completion and returns its final result object (asserting nothing).</summary>
    public static async Task<JsonElement> RunAsync(string script, IEnumerable<string> urls, TimeSpan? timeout = null, IReadOnlyDictionary<string, string>? env = null, ITestOutputHelper? log = null)
    {
        await using var c = await StartAsync(script, urls, env, log).ConfigureAwait(false);
        return await c.ResultAsync(timeout).ConfigureAwait(false);
    }

    /// <summary>Runs a script and asserts that its result has ok == true (failures listed in the assertion message).</summary>
    public static async Task<JsonElement> RunAndAssertOkAsync(string script, IEnumerable<string> urls, TimeSpan? timeout = null, IReadOnlyDictionary<string, string>? env = null, ITestOutputHelper? log = null)
    {
        await using var c = await StartAsync(script, urls, env, log).ConfigureAwait(false);
        var result = await c.ResultAsync(timeout).ConfigureAwait(false);
        AssertOk(result, c.Stderr);
        return result;
    }

    public static void AssertOk(JsonElement result, string stderr = "")
    {
        if (result.TryGetProperty("ok", out var ok) && ok.ValueKind == JsonValueKind.True)
        {
            return;
        }

        throw new Xunit.Sdk.XunitException($"nats.js scenario failed: {result.GetRawText()}\n---- node stderr ----\n{stderr}");
    }

    public string Stderr
    {
        get
        {
            lock (_stderr)
            {
                return _stderr.ToString();
            }
        }
    }

    private void OnStdout(string? line)
    {
        lock (_gate)
        {
            if (line is null)
            {
                _stdoutClosed = true;
            }
            else
            {
                _log?.WriteLine("node> " + line);
                try
                {
                    using var doc = JsonDocument.Parse(line);
                    _lines.Add(doc.RootElement.Clone());
                }
                catch (JsonException)
                {
                    // Not ours (a library log line): ignore.
                }
            }

            var old = _changed;
            _changed = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            old.TrySetResult();
        }
    }

    private async Task<JsonElement> WaitLineAsync(Func<JsonElement, bool> match, TimeSpan timeout, string what)
    {
        var sw = Stopwatch.StartNew();
        while (true)
        {
            Task changed;
            lock (_gate)
            {
                foreach (var l in _lines)
                {
                    if (match(l))
                    {
                        return l;
                    }
                }

                if (_stdoutClosed)
                {
                    throw new Xunit.Sdk.XunitException($"node exited before {what}.\n---- stdout (json) ----\n{string.Join('\n', _lines.Select(l => l.GetRawText()))}\n---- stderr ----\n{Stderr}");
                }

                changed = _changed.Task;
            }

            var remaining = timeout - sw.Elapsed;
            if (remaining <= TimeSpan.Zero)
            {
                throw new TimeoutException($"node did not report {what} within {timeout.TotalSeconds:0.#}s.\n---- stderr ----\n{Stderr}");
            }

            await Task.WhenAny(changed, Task.Delay(remaining)).ConfigureAwait(false);
        }
    }

    /// <summary>Waits for <c>{"event":"<paramref name="name"/>"}</c>.</summary>
    public Task<JsonElement> WaitForEventAsync(string name, TimeSpan? timeout = null) =>
        WaitLineAsync(l => l.ValueKind == JsonValueKind.Object && l.TryGetProperty("event", out var e) && e.GetString() == name,
            timeout ?? TimeSpan.FromSeconds(20), $"event '{name}'");

    /// <summary>Writes a command line to the script's stdin.</summary>
    public async Task SendAsync(string line)
    {
        await _process.StandardInput.WriteLineAsync(line).ConfigureAwait(false);
        await _process.StandardInput.FlushAsync().ConfigureAwait(false);
    }

    /// <summary>Waits for the final <c>{"done":true,...}</c> line (bounded; default 30 s).</summary>
    public Task<JsonElement> ResultAsync(TimeSpan? timeout = null) =>
        WaitLineAsync(l => l.ValueKind == JsonValueKind.Object && l.TryGetProperty("done", out var d) && d.ValueKind == JsonValueKind.True,
            timeout ?? TimeSpan.FromSeconds(30), "its result");

    public async ValueTask DisposeAsync()
    {
        try
        {
            if (!_process.HasExited)
            {
                using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(2));
                try
                {
                    await _process.WaitForExitAsync(cts.Token).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    _process.Kill(entireProcessTree: true);
                }
            }
        }
        catch (InvalidOperationException)
        {
        }

        _process.Dispose();
    }
}
