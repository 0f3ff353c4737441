using System.Diagnostics;
using System.Net;
using System.Text;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Infrastructure;

/// <summary>
/// What the real-browser tests share: Debian's chromium, the browser clients of tests/browser (nats.ws, mqtt.js)
/// installed with <c>npm ci</c> from its package-lock.json, and a page server on localhost.
/// </summary>
public static class BrowserSupport
{
    /// <summary>Every file the browser tests load from tests/browser/node_modules. When one is missing (a checkout
    /// installed before a package was added to package.json) <c>npm ci</c> runs, so all of them come from the lock.</summary>
    private static readonly string[] s_bundles =
    [
        Path.Combine("nats.ws", "esm", "nats.js"),
        Path.Combine("mqtt", "dist", "mqtt.min.js"),
    ];

    private static readonly SemaphoreSlim s_installLock = new(1, 1);
    private static bool s_installTried;

    private static string BrowserDir => Path.Combine(TestEnvironment.RepoRoot, "tests", "browser");

    /// <summary>chromium's path (CHROMIUM_PATH, then Debian's and Ubuntu's names), or null.</summary>
    public static string? Chromium() =>
        new[] { Environment.GetEnvironmentVariable("CHROMIUM_PATH"), "/usr/bin/chromium", "/usr/bin/chromium-browser" }
            .FirstOrDefault(p => !string.IsNullOrEmpty(p) && File.Exists(p));

    /// <summary>
    /// The full path of <paramref name="bundle"/> (a path under tests/browser/node_modules, one of
    /// <see cref="s_bundles"/>), running <c>npm ci</c> once per test run when any bundle is missing; null when it is
    /// still missing (no npm, or npm failed: its output goes to <paramref name="output"/>).
    /// </summary>
    public static async Task<string?> BundleAsync(string bundle, ITestOutputHelper output)
    {
        var path = Path.Combine(BrowserDir, "node_modules", bundle);
        await s_installLock.WaitAsync();
        try
        {
            bool allThere = s_bundles.All(b => File.Exists(Path.Combine(BrowserDir, "node_modules", b)));
            if (!allThere && !s_installTried && TestEnvironment.NpmPath is not null)
            {
                s_installTried = true;
                await NpmCiAsync(output);
            }
        }
        finally
        {
            s_installLock.Release();
        }

        return File.Exists(path) ? path : null;
    }

    private static async Task NpmCiAsync(ITestOutputHelper output)
    {
        var psi = new ProcessStartInfo(TestEnvironment.NpmPath!, "ci --no-audit --no-fund")
        {
            WorkingDirectory = BrowserDir,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
        };
        using var p = Process.Start(psi)!;
        var stdout = p.StandardOutput.ReadToEndAsync();
        var stderr = p.StandardError.ReadToEndAsync();
        using var cts = new CancellationTokenSource(TimeSpan.FromMinutes(3));
        try
        {
            await p.WaitForExitAsync(cts.Token);
        }
        catch (OperationCanceledException)
        {
            p.Kill(entireProcessTree: true);
            output.WriteLine("npm ci in tests/browser did not finish within 3 minutes");
        }

        output.WriteLine(await stdout + await stderr);
    }

    /// <summary>
    /// Serves <paramref name="page"/> at <c>/</c> and each of <paramref name="files"/> (URL path → file, as
    /// JavaScript) until <paramref name="http"/> stops; anything else is a 404.
    /// </summary>
    public static async Task ServeAsync(HttpListener http, string page, IReadOnlyDictionary<string, string> files)
    {
        while (http.IsListening)
        {
            HttpListenerContext ctx;
            try
            {
                ctx = await http.GetContextAsync();
            }
            catch (Exception ex) when (ex is HttpListenerException or ObjectDisposedException or InvalidOperationException)
            {
                return;
            }

            byte[] body;
            var path = ctx.Request.Url!.AbsolutePath;
            if (files.TryGetValue(path, out var file))
            {
                body = await File.ReadAllBytesAsync(file);
                ctx.Response.ContentType = "text/javascript";
            }
            else if (path == "/")
            {
                body = Encoding.UTF8.GetBytes(page);
                ctx.Response.ContentType = "text/html; charset=utf-8";
            }
            else
            {
                body = [];
                ctx.Response.StatusCode = 404;
            }

            await ctx.Response.OutputStream.WriteAsync(body);
            ctx.Response.Close();
        }
    }
}
