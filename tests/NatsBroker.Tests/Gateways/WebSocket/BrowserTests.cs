using System.Net;
using Microsoft.Playwright;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.WebSocket;

/// <summary>
/// A real browser: Debian's chromium (driven by Playwright by path) opens a page served on localhost that uses the
/// official browser client (nats.ws from npm, tests/browser), connects through the websocket gateway (with
/// <c>allowed_origins</c> naming the page's origin), subscribes, publishes, and does a request/reply with a NATS.Net
/// service. The test checks what the page shows and saves a screenshot. Skipped (failed under CI=true) without
/// chromium or npm.
/// </summary>
[Collection("Gateways")]
public sealed class BrowserTests(ITestOutputHelper output)
{
    private const string Page = """
        <!doctype html>
        <html><head><title>nats.ws through the NatsBroker websocket gateway</title></head>
        <body>
        <h1>nats.ws → websocket gateway → core</h1>
        <p>state: <span id="state">pending</span></p>
        <script type="module">
        import { connect, StringCodec } from "/nats.js";
        const state = document.getElementById("state");
        try {
          const nc = await connect({ servers: new URLSearchParams(location.search).get("ws") });
          const sc = StringCodec();
          const sub = nc.subscribe("browser.echo", { max: 1 });
          nc.publish("browser.echo", sc.encode("from the page"));
          let got = "";
          for await (const m of sub) got = sc.decode(m.data);
          const reply = await nc.request("svc.greet", sc.encode("browser"), { timeout: 5000 });
          state.textContent = "ok|" + got + "|" + sc.decode(reply.data);
          await nc.close();
        } catch (e) {
          state.textContent = "error|" + e;
        }
        </script>
        </body></html>
        """;

    [SkippableFact]
    public async Task Chromium_with_nats_ws_pubsub_and_request_reply_with_a_NatsNet_service()
    {
        Prerequisites.RequireServer(ServerKind.Ours, output);
        var chromium = BrowserSupport.Chromium();
        if (chromium is null) Prerequisites.Missing("chromium not found (apt-get install chromium, or set CHROMIUM_PATH)", output);
        var bundle = await BrowserSupport.BundleAsync(Path.Combine("nats.ws", "esm", "nats.js"), output);
        if (bundle is null) Prerequisites.Missing("tests/browser/node_modules/nats.ws is missing and npm could not install it", output);

        int pagePort = TestPorts.Next(), wsPort = TestPorts.Next();
        using var http = new HttpListener();
        http.Prefixes.Add($"http://127.0.0.1:{pagePort}/");
        http.Start();
        var serving = BrowserSupport.ServeAsync(http, Page, new Dictionary<string, string> { ["/nats.js"] = bundle! });

        await using var server = await ServerProcess.StartAsync(ServerKind.Ours, new ServerStartOptions
        {
            Config = $$"""
                websocket {
                  port: {{wsPort}}
                  no_tls: true
                  allowed_origins: ["http://127.0.0.1:{{pagePort}}"]
                }
                """,
            Port = TestPorts.Next(),
        }, output);
        await using var nc = new NatsConnection(new NatsOpts { Url = server.Url });
        await nc.ConnectAsync();
        await using var svc = await nc.SubscribeCoreAsync<string>("svc.greet");
        var service = Task.Run(async () =>
        {
            await foreach (var m in svc.Msgs.ReadAllAsync()) await m.ReplyAsync("hello, " + m.Data);
        });
        await nc.PingAsync();

        using var pw = await Playwright.CreateAsync();
        await using var browser = await pw.Chromium.LaunchAsync(new BrowserTypeLaunchOptions
        {
            ExecutablePath = chromium,
            Headless = true,
            Args = ["--no-sandbox"],
        });
        var page = await browser.NewPageAsync();
        page.Console += (_, msg) => output.WriteLine("page: " + msg.Text);
        // The gateway starts a moment after the core: retry the page until it connects.
        string? state = null;
        for (int attempt = 0; attempt < 20; attempt++)
        {
            await page.GotoAsync($"http://127.0.0.1:{pagePort}/?ws=ws://127.0.0.1:{wsPort}");
            await page.WaitForFunctionAsync("() => document.getElementById('state').textContent !== 'pending'", null,
                new PageWaitForFunctionOptions { Timeout = 30000 });
            state = await page.TextContentAsync("#state");
            if (state is not null && state.StartsWith("ok|", StringComparison.Ordinal)) break;
            output.WriteLine("attempt: " + state);
            await Task.Delay(500);
        }
        var shot = Path.Combine(AppContext.BaseDirectory, "browser-websocket.png");
        await page.ScreenshotAsync(new PageScreenshotOptions { Path = shot });
        output.WriteLine("screenshot: " + shot);
        Assert.Equal("ok|from the page|hello, browser", state);
        http.Stop();
        await serving;
    }
}
