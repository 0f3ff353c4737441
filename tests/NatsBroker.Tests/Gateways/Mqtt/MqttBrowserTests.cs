using System.Net;
using Microsoft.Playwright;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// MQTT over WebSocket from a real browser (issue 12): Debian's chromium (driven by Playwright by path) opens a page
/// served on localhost that uses mqtt.js's browser bundle (npm <c>mqtt</c>, tests/browser) and connects to the
/// websocket gateway's <c>/mqtt</c> path (with <c>allowed_origins</c> naming the page's origin), as MQTT 3.1.1, as
/// MQTT 5, and as MQTT 5 with <c>compression: true</c> (chromium offers permessage-deflate, so both ways are then
/// compressed). The page exchanges messages with NATS.Net both ways, round-trips a QoS 1 message, stays connected
/// through idle keep-alive periods, gets a retained message on a second connection and a QoS 1 message queued for
/// its persistent session while it was away. The test checks what the page shows and what NATS.Net received, and
/// saves a screenshot. nats-server 2.9.10 (in-process MQTT over WebSocket, MQTT 3.1.1 only) runs the MQTT 3.1.1 cases as
/// the oracle: the page must show exactly the same. Skipped (failed under CI=true) without chromium or npm.
/// </summary>
[Collection("Gateways")]
public sealed class MqttBrowserTests(ITestOutputHelper output)
{
    /// <summary>Each step names itself in #step, so a failure says where it stopped; #state gets the results.</summary>
    private const string Page = """
        <!doctype html>
        <html><head><title>mqtt.js through the NatsBroker websocket gateway</title></head>
        <body>
        <h1>mqtt.js → websocket gateway (/mqtt) → core</h1>
        <p>step: <span id="step">loading</span></p>
        <p>state: <span id="state">pending</span></p>
        <ol id="log"></ol>
        <script src="/mqtt.min.js"></script>
        <script>
        const q = new URLSearchParams(location.search);
        const url = q.get("ws"), v = Number(q.get("v")), id = q.get("id");
        const stepEl = document.getElementById("step"), state = document.getElementById("state");
        const step = name => { stepEl.textContent = name; };
        const show = line => { const li = document.createElement("li"); li.textContent = line; document.getElementById("log").appendChild(li); };
        const within = (ms, p) => Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error("timed out")), ms))]);

        // A client whose messages queue from the first packet on (a resumed session delivers right after CONNACK).
        function open(clientId, persistent) {
          return new Promise((resolve, reject) => {
            let socket = null;
            // mqtt.js's own hook for making the WebSocket: the same socket it would make, kept to read what the
            // 101 negotiated (subprotocol, extensions).
            const createWebsocket = (u, protocols) => (socket = new WebSocket(u, protocols));
            const options = { clientId, protocolVersion: v, clean: !persistent, reconnectPeriod: 0, connectTimeout: 10000, keepalive: 2, createWebsocket };
            if (v === 5 && persistent) options.properties = { sessionExpiryInterval: 300 };
            const c = mqtt.connect(url, options);
            const queued = [], waiting = [];
            c.on("message", (topic, payload, packet) => {
              const m = { topic, text: payload.toString(), qos: packet.qos, retain: packet.retain };
              show("v" + v + " " + clientId + " got " + topic + " '" + m.text + "' qos " + m.qos + (m.retain ? " retained" : ""));
              const w = waiting.shift();
              if (w) w(m); else queued.push(m);
            });
            const next = () => within(10000, queued.length ? Promise.resolve(queued.shift()) : new Promise(r => waiting.push(r)));
            c.once("connect", connack => {
              show("v" + v + " " + clientId + " connected, session present " + connack.sessionPresent
                + ", subprotocol '" + socket.protocol + "', extensions '" + socket.extensions + "'");
              resolve({ c, next, connack, socket });
            });
            c.once("error", reject);
            c.once("close", () => reject(new Error("closed before CONNACK")));
          });
        }

        (async () => {
          const t = "browser/" + id + "/";
          try {
            step("connect a");
            const a = await within(15000, open(id + "-a", false));
            step("subscribe a");
            const granted = await within(10000, a.c.subscribeAsync(t + "down", { qos: 1 }));
            step("publish to NATS");
            const props = v === 5 ? { properties: { userProperties: { origin: "browser" } } } : {};
            await within(10000, a.c.publishAsync(t + "up", "from the page", { qos: 1, ...props }));
            step("receive from NATS");
            const fromNats = await a.next();
            step("QoS 1 round trip");
            await within(10000, a.c.publishAsync(t + "down", "qos 1 round trip", { qos: 1 }));
            const loop = await a.next();
            step("idle past the keep-alive");
            // keepalive 2 s: mqtt.js pings while idle (and closes itself when no PINGRESP comes), the gateway closes
            // a client silent for 1.5 keep-alives: still connected after 5 s idle with a PINGRESP seen means both
            // ways went through.
            let pongs = 0;
            a.c.on("packetreceive", p => { if (p.cmd === "pingresp") pongs++; });
            await new Promise(r => setTimeout(r, 5000));
            show("v" + v + " idle 5 s: connected " + a.c.connected + ", " + pongs + " PINGRESP");
            const keptAlive = a.c.connected && pongs >= 1 ? "kept alive" : "connected " + a.c.connected + ", " + pongs + " PINGRESP";
            step("publish retained");
            await within(10000, a.c.publishAsync(t + "status", "retained from the page", { qos: 1, retain: true }));

            step("connect b (persistent)");
            const b = await within(15000, open(id + "-b", true));
            step("retained to b");
            await within(10000, b.c.subscribeAsync(t + "status", { qos: 1 }));
            const retained = await b.next();
            step("b subscribes, leaves");
            await within(10000, b.c.subscribeAsync(t + "offline", { qos: 1 }));
            await within(10000, b.c.endAsync());
            step("publish while b is away");
            await within(10000, a.c.publishAsync(t + "offline", "while you were away", { qos: 1 }));
            await within(10000, a.c.endAsync());
            step("b comes back");
            const b2 = await within(15000, open(id + "-b", true));
            const queued = await b2.next();
            await within(10000, b2.c.endAsync());

            step("done");
            state.textContent = ["ok", "protocol " + a.socket.protocol, "extensions " + a.socket.extensions,
              "granted " + granted.map(g => g.qos).join(","),
              fromNats.topic, fromNats.text, "qos " + fromNats.qos,
              loop.text, "qos " + loop.qos, keptAlive,
              retained.topic, retained.text, "retain " + retained.retain,
              "session present " + b2.connack.sessionPresent, queued.text, "qos " + queued.qos].join("|");
          } catch (e) {
            state.textContent = "error|" + stepEl.textContent + "|" + e;
          }
        })();
        </script>
        </body></html>
        """;

    [SkippableTheory]
    [InlineData(ServerKind.Ours, 4, false)]
    [InlineData(ServerKind.Ours, 5, false)]
    [InlineData(ServerKind.Ours, 5, true)]
    // The oracle: nats-server 2.9.10 serves MQTT 3.1.1 over WebSocket in-process (no MQTT 5).
    [InlineData(ServerKind.Go, 4, false)]
    [InlineData(ServerKind.Go, 4, true)]
    public async Task Chromium_with_mqtt_js_over_websocket_exchanges_messages_with_NatsNet_and_keeps_retained_and_session_state(ServerKind kind, int protocolVersion, bool compression)
    {
        Prerequisites.RequireServer(kind, output);
        var chromium = BrowserSupport.Chromium();
        if (chromium is null) Prerequisites.Missing("chromium not found (apt-get install chromium, or set CHROMIUM_PATH)", output);
        var bundle = await BrowserSupport.BundleAsync(Path.Combine("mqtt", "dist", "mqtt.min.js"), output);
        if (bundle is null) Prerequisites.Missing("tests/browser/node_modules/mqtt is missing and npm could not install it", output);

        int pagePort = TestPorts.Next(), wsPort = TestPorts.Next();
        using var http = new HttpListener();
        http.Prefixes.Add($"http://127.0.0.1:{pagePort}/");
        http.Start();
        var serving = BrowserSupport.ServeAsync(http, Page, new Dictionary<string, string> { ["/mqtt.min.js"] = bundle! });

        // JetStream is on (MqttTestServer): QoS 1 messages, retained messages and sessions live in streams.
        await using var s = await MqttTestServer.StartAsync(kind, output, rest: MqttTestServer.Users + $$"""

            websocket {
              host: "127.0.0.1"
              port: {{wsPort}}
              no_tls: true
              compression: {{(compression ? "true" : "false")}}
              allowed_origins: ["http://127.0.0.1:{{pagePort}}"]
            }
            """);
        await GatewayTestHelpers.WaitListeningAsync(wsPort);
        await using var nats = s.Nats();
        await nats.ConnectAsync();
        string id = "v" + protocolVersion + Guid.NewGuid().ToString("N")[..8];
        await using var up = await nats.SubscribeCoreAsync<string>($"browser.{id}.up");
        // What the page publishes to NATS is answered on the subject its QoS 1 subscription maps to.
        using var upCts = new CancellationTokenSource(TimeSpan.FromSeconds(120));
        var upReceived = Task.Run(async () =>
        {
            var m = await up.Msgs.ReadAsync(upCts.Token);
            await nats.PublishAsync($"browser.{id}.down", "from nats");
            return m;
        });
        await nats.PingAsync();

        using var pw = await Playwright.CreateAsync();
        await using var browser = await pw.Chromium.LaunchAsync(new BrowserTypeLaunchOptions
        {
            ExecutablePath = chromium,
            Headless = true,
            Args = ["--no-sandbox"],
        });
        var page = await browser.NewPageAsync();
        page.Console += (_, msg) => output.WriteLine("page: " + msg.Text);
        await page.GotoAsync($"http://127.0.0.1:{pagePort}/?ws=ws://127.0.0.1:{wsPort}/mqtt&v={protocolVersion}&id={id}");
        await page.WaitForFunctionAsync("() => document.getElementById('state').textContent !== 'pending'", null,
            new PageWaitForFunctionOptions { Timeout = 90000 });
        var state = await page.TextContentAsync("#state");
        foreach (var line in await page.Locator("#log li").AllTextContentsAsync()) output.WriteLine("page log: " + line);
        var shot = Path.Combine(AppContext.BaseDirectory, $"browser-mqtt-{kind}-v{protocolVersion}{(compression ? "-deflate" : "")}.png");
        await page.ScreenshotAsync(new PageScreenshotOptions { Path = shot });
        output.WriteLine("screenshot: " + shot);

        Assert.Equal(string.Join('|',
            "ok", "protocol mqtt",
            // chromium always offers permessage-deflate; the gateway takes it only under compression: true.
            "extensions " + (compression ? "permessage-deflate; server_no_context_takeover; client_no_context_takeover" : ""),
            "granted 1",
            // A NATS publication reaches a QoS 1 subscription at QoS 0, as on nats-server (it is not in $MQTT_msgs).
            $"browser/{id}/down", "from nats", "qos 0",
            "qos 1 round trip", "qos 1", "kept alive",
            $"browser/{id}/status", "retained from the page", "retain true",
            "session present true", "while you were away", "qos 1"), state);
        var fromPage = await upReceived.WaitAsync(TimeSpan.FromSeconds(5));
        Assert.Equal("from the page", fromPage.Data);
        if (protocolVersion == 5)
        {
            // MQTT 5 user properties become NATS headers.
            Assert.Equal("browser", fromPage.Headers?["origin"].ToString());
        }

        http.Stop();
        await serving;
    }
}
