using System.Text;
using System.Text.Json;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Differential;

/// <summary>
/// Plays a <see cref="Transcript"/> against a server and renders what each connection received, normalized so
/// that two conforming servers produce identical text: INFO is reduced to the presence of the keys clients use
/// plus the values that must agree (ids, ports, nonces, versions are masked); every other line is verbatim.
/// After each step the player waits until no connection has received anything for <see cref="QuietMs"/>.
/// </summary>
public static class TranscriptPlayer
{
    public const int QuietMs = 100;

    /// <summary>Longer quiet wait after the last step.</summary>
    public const int FinalQuietMs = 300;

    /// <summary>INFO keys whose presence is compared.</summary>
    private static readonly string[] InfoKeys =
    [
        "server_id", "server_name", "version", "proto", "host", "port", "headers", "auth_required", "tls_required",
        "max_payload", "client_id", "client_ip", "nonce", "ldm",
    ];

    /// <summary>INFO keys whose values are compared.</summary>
    private static readonly string[] InfoValues = ["proto", "headers", "auth_required", "tls_required", "max_payload", "client_ip", "ldm"];

    public static async Task<string> PlayAsync(Transcript t, ServerProcess server)
    {
        // What each connection received is rendered as one stream per connection (in the order of first use), so
        // the result does not depend on how fast a response came relative to the next step. The steps are paced:
        // after each, the player waits until every connection was quiet for QuietMs, and it does not send to a
        // connection the server already closed (that would turn the close into a reset and lose the -ERR).
        var conns = new Dictionary<string, RawClient>(StringComparer.Ordinal);
        var order = new List<string>();
        var received = new Dictionary<string, List<byte>>(StringComparer.Ordinal);
        var sb = new StringBuilder();
        try
        {
            async Task OpenAsync(string name)
            {
                conns[name] = await RawClient.ConnectAsync(server);
                order.Add(name);
                received[name] = [];
                sb.Append($"%conn {name}\n");
            }

            // Liveness probe after each step: a fresh connection must get its INFO, which shows the server is being
            // scheduled (on a loaded machine a quiet period alone can be a starved server). Not with max_connections,
            // where the probe would take a connection slot.
            var probe = t.Config is null || !t.Config.Contains("max_connections", StringComparison.Ordinal);
            await OpenAsync("a");
            await CollectAsync(conns, received, QuietMs);
            foreach (var step in t.Steps)
            {
                switch (step.Kind)
                {
                    case StepKind.Open:
                        await OpenAsync(step.Conn);
                        break;
                    case StepKind.Close:
                        received[step.Conn].AddRange(conns[step.Conn].TakeAll());
                        received[step.Conn].AddRange("[closed by client]\r\n"u8.ToArray());
                        await conns[step.Conn].DisposeAsync();
                        conns.Remove(step.Conn);
                        sb.Append($"%close {step.Conn}\n");
                        break;
                    case StepKind.Sleep:
                        await Task.Delay(step.SleepMs);
                        sb.Append($"%sleep {step.SleepMs}\n");
                        break;
                    case StepKind.Send:
                        var c = conns[step.Conn];
                        sb.Append($"{step.Conn}> {Shorten(RawClient.Escape(step.Data))}\n");
                        if (c.IsClosed)
                        {
                            sb.Append($"{step.Conn}! not sent: closed by server\n");
                        }
                        else if (!await c.TrySendAsync(step.Data))
                        {
                            sb.Append($"{step.Conn}! send failed\n");
                        }

                        break;
                }

                if (probe)
                {
                    await ProbeAsync(server);
                }

                await CollectAsync(conns, received, QuietMs);
            }

            await CollectAsync(conns, received, FinalQuietMs);

            foreach (var name in order)
            {
                sb.Append($"== {name} received\n");
                foreach (var line in Render(received[name]))
                {
                    sb.Append($"{name}< {line}\n");
                }

                if (conns.TryGetValue(name, out var c) && c.IsClosed)
                {
                    sb.Append($"{name}# closed by server\n");
                }
            }
        }
        finally
        {
            foreach (var c in conns.Values)
            {
                await c.DisposeAsync();
            }
        }

        return sb.ToString();
    }

    private static async Task ProbeAsync(ServerProcess server)
    {
        try
        {
            await using var p = await RawClient.ConnectAsync(server);
            await p.ReadLineAsync(TimeSpan.FromSeconds(5));
        }
        catch (Exception e) when (e is TimeoutException or System.Net.Sockets.SocketException or OperationCanceledException)
        {
            // The comparison will show whatever this caused.
        }
    }

    private static async Task CollectAsync(Dictionary<string, RawClient> conns, Dictionary<string, List<byte>> received, int quietMs)
    {
        // Wait until every connection has been quiet for quietMs (bounded).
        var deadline = DateTime.UtcNow.AddSeconds(5);
        while (DateTime.UtcNow < deadline)
        {
            await Task.Delay(quietMs);
            var any = false;
            foreach (var (name, c) in conns)
            {
                var got = c.TakeAll();
                if (got.Length > 0)
                {
                    received[name].AddRange(got);
                    any = true;
                }
            }

            if (!any)
            {
                break;
            }
        }
    }

    private static IEnumerable<string> Render(List<byte> data)
    {
        var bytes = data.ToArray();
        var start = 0;
        while (start < bytes.Length)
        {
            var idx = bytes.AsSpan(start).IndexOf("\r\n"u8);
            if (idx < 0)
            {
                yield return RawClient.Escape(bytes.AsSpan(start)) + " [no CRLF]";
                yield break;
            }

            var line = Encoding.UTF8.GetString(bytes, start, idx);
            start += idx + 2;
            // Keep-alive/RTT PINGs from the server depend on wall-clock timing (nats-server sends the first one
            // ~2-2.4 s after connecting, 2.9 and 2.10 differ on when); sessions here last about that long, so
            // they are not part of the comparison. LimitsTests covers server PINGs and Stale Connection.
            if (line == "PING") continue;
            yield return line.StartsWith("INFO ", StringComparison.Ordinal) ? NormalizeInfo(line) : Shorten(RawClient.Escape(Encoding.UTF8.GetBytes(line)));
        }
    }

    /// <summary>INFO {json} → "INFO keys=... values..." with ids/ports/versions masked.</summary>
    public static string NormalizeInfo(string line)
    {
        try
        {
            using var doc = JsonDocument.Parse(line[5..]);
            var root = doc.RootElement;
            var keys = InfoKeys.Where(k => root.TryGetProperty(k, out _));
            var values = InfoValues.Where(k => root.TryGetProperty(k, out _)).Select(k => $"{k}={root.GetProperty(k).GetRawText()}");
            return $"INFO keys=[{string.Join(',', keys)}] {string.Join(' ', values)}";
        }
        catch (JsonException)
        {
            return "INFO <invalid json> " + line;
        }
    }

    private static string Shorten(string s) => s.Length <= 200 ? s : $"{s[..120]}...({s.Length} chars)...{s[^40..]}";
}
