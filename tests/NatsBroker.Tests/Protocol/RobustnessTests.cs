using System.Diagnostics;
using System.Globalization;
using System.Text;
using NatsBroker.Tests.Differential;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Protocol;

/// <summary>
/// Randomized robustness: thousands of random and mutated protocol inputs over many connections while a healthy
/// client keeps doing PUB/SUB round trips. The server must keep serving it and must still be alive at the end.
/// Time-bounded (NATSBROKER_FUZZ_SECONDS, default 8 s per server); the seed is printed (NATSBROKER_FUZZ_SEED replays).
/// </summary>
public sealed class RobustnessTests(ITestOutputHelper output)
{
    private static readonly string[] Ops = ["PUB", "SUB", "UNSUB", "HPUB", "PING", "PONG", "CONNECT", "MSG", "HMSG", "INFO", "+OK", "-ERR", "pub", "sub", "Ping"];

    private static readonly string[] Atoms =
    [
        "foo", "foo.bar", "foo.*", "foo.>", ">", "*", "", ".", "..", "a..b", "q", "1", "0", "-1", "2", "5", "12", "14",
        "99999999999999999999", "2147483648", "-2147483649", "1048577", "4294967296", "NaN", "0x10", "{}", "{\"verbose\":true}",
        "{\"headers\":true,\"no_responders\":true}", "{\"echo\":false}", "{\"protocol\":2}", "{", "\"", "\t", "  ", "\u00e9\u00e8", "\0",
        "NATS/1.0", "NATS/1.0 503", "\r", "\n", "\r\n", "\r\n\r\n",
    ];

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Survives_random_and_mutated_input_while_healthy_client_keeps_working(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        var seconds = int.TryParse(Environment.GetEnvironmentVariable("NATSBROKER_FUZZ_SECONDS"), CultureInfo.InvariantCulture, out var s) ? s : 8;
        var seed = int.TryParse(Environment.GetEnvironmentVariable("NATSBROKER_FUZZ_SEED"), CultureInfo.InvariantCulture, out var sd) ? sd : Environment.TickCount;
        output.WriteLine($"seed {seed}, budget {seconds}s");

        await using var server = await ServerProcess.StartAsync(kind, new ServerStartOptions { Config = "max_payload: 65536\nmax_pending: 1048576\n" }, output);
        var corpus = Transcript.AllNames().Select(Transcript.Load)
            .Select(t => t.Steps.Where(x => x.Kind == StepKind.Send).SelectMany(x => x.Data).ToArray())
            .Where(b => b.Length > 0)
            .ToArray();

        using var stop = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        var healthy = HealthyLoopAsync(server, stop.Token);
        var stats = new FuzzStats();
        var workers = Enumerable.Range(0, 3).Select(i => FuzzLoopAsync(server, corpus, new Random(seed + i), stats, stop.Token)).ToArray();
        await Task.WhenAll(workers);
        var roundTrips = await healthy;

        output.WriteLine($"fuzz connections: {stats.Connections}, inputs: {stats.Inputs}, bytes: {stats.Bytes}, closed by server: {stats.ClosedByServer}; healthy round trips: {roundTrips}");
        Assert.False(server.HasExited, "server died:\n" + server.OutputTail());
        Assert.True(stats.Inputs >= 1000 || stats.Connections >= 300, $"too few inputs ({stats.Inputs}) in the budget");
        Assert.True(roundTrips > 10, $"healthy client made only {roundTrips} round trips");
        await using var fresh = await RawClient.ConnectAndHandshakeAsync(server);
        await fresh.SendAsync("SUB after.fuzz 1\r\nPUB after.fuzz 2\r\nok\r\n");
        Assert.Equal("ok", (await fresh.ExpectMessageAsync()).PayloadText);
    }

    private sealed class FuzzStats
    {
        public int Connections;
        public int Inputs;
        public long Bytes;
        public int ClosedByServer;
    }

    private static async Task<int> HealthyLoopAsync(ServerProcess server, CancellationToken stop)
    {
        await using var sub = await RawClient.ConnectAndHandshakeAsync(server);
        await using var pub = await RawClient.ConnectAndHandshakeAsync(server);
        // A fuzz connection may publish to this subject too: the healthy client looks for its own payloads.
        await sub.SendAsync("SUB zz.healthy.check 1\r\n");
        await sub.PingAsync();
        var n = 0;
        while (!stop.IsCancellationRequested)
        {
            var payload = "rt-" + n.ToString(CultureInfo.InvariantCulture);
            await pub.SendAsync($"PUB zz.healthy.check {payload.Length}\r\n{payload}\r\n");
            var sw = Stopwatch.StartNew();
            while (true)
            {
                var m = await sub.ExpectMessageAsync(TimeSpan.FromSeconds(5));
                if (m.PayloadText == payload)
                {
                    break;
                }

                Assert.True(sw.Elapsed < TimeSpan.FromSeconds(5), "healthy round trip took more than 5 s");
            }

            n++;
            await Task.Delay(10, CancellationToken.None);
        }

        Assert.All(await pub.PingAsync(), l => Assert.Equal("PING", l));
        return n;
    }

    private static async Task FuzzLoopAsync(ServerProcess server, byte[][] corpus, Random rng, FuzzStats stats, CancellationToken stop)
    {
        while (!stop.IsCancellationRequested)
        {
            RawClient c;
            try
            {
                c = await RawClient.ConnectAsync(server);
            }
            catch (System.Net.Sockets.SocketException)
            {
                await Task.Delay(20, CancellationToken.None);
                continue;
            }

            Interlocked.Increment(ref stats.Connections);
            await using (c)
            {
                // Most connections start with a valid CONNECT so inputs reach the parser's later states.
                if (rng.Next(4) != 0)
                {
                    await c.TrySendAsync(Encoding.ASCII.GetBytes(rng.Next(2) == 0 ? "CONNECT {\"verbose\":false,\"headers\":true}\r\n" : "CONNECT {\"verbose\":true,\"pedantic\":true}\r\n"));
                }

                var inputs = rng.Next(1, 8);
                for (var i = 0; i < inputs && !c.IsClosed && !stop.IsCancellationRequested; i++)
                {
                    var data = Generate(rng, corpus);
                    Interlocked.Increment(ref stats.Inputs);
                    Interlocked.Add(ref stats.Bytes, data.Length);
                    bool sent;
                    if (rng.Next(3) == 0 && data.Length > 1)
                    {
                        var cuts = Enumerable.Range(0, rng.Next(1, 5)).Select(_ => rng.Next(1, data.Length)).ToArray();
                        try
                        {
                            await c.SendSplitAsync(data, cuts, TimeSpan.FromMilliseconds(rng.Next(0, 3)));
                            sent = true;
                        }
                        catch (Exception e) when (e is System.Net.Sockets.SocketException or OperationCanceledException or ObjectDisposedException)
                        {
                            sent = false;
                        }
                    }
                    else
                    {
                        sent = await c.TrySendAsync(data);
                    }

                    if (!sent)
                    {
                        break;
                    }
                }

                switch (rng.Next(3))
                {
                    case 0:
                        c.Abort();
                        break;
                    default:
                        await c.ReadUntilQuietAsync(TimeSpan.FromMilliseconds(15), TimeSpan.FromMilliseconds(300));
                        break;
                }

                if (c.IsClosed)
                {
                    Interlocked.Increment(ref stats.ClosedByServer);
                }
            }
        }
    }

    private static byte[] Generate(Random rng, byte[][] corpus)
    {
        switch (rng.Next(10))
        {
            case 0:
            {
                // Random binary.
                var b = new byte[rng.Next(1, 600)];
                rng.NextBytes(b);
                return b;
            }

            case 1 or 2 or 3:
            {
                // Random ops with random arguments.
                var sb = new StringBuilder();
                var n = rng.Next(1, 6);
                for (var i = 0; i < n; i++)
                {
                    sb.Append(Ops[rng.Next(Ops.Length)]);
                    var args = rng.Next(0, 5);
                    for (var j = 0; j < args; j++)
                    {
                        sb.Append(rng.Next(5) == 0 ? "\t" : " ").Append(Atoms[rng.Next(Atoms.Length)]);
                    }

                    sb.Append(rng.Next(8) == 0 ? "\n" : "\r\n");
                    if (rng.Next(3) == 0)
                    {
                        sb.Append(new string('x', rng.Next(0, 20))).Append("\r\n");
                    }
                }

                return Encoding.UTF8.GetBytes(sb.ToString());
            }

            default:
                return Mutate(rng, corpus[rng.Next(corpus.Length)]);
        }
    }

    private static byte[] Mutate(Random rng, byte[] seed)
    {
        var data = new List<byte>(seed);
        var mutations = rng.Next(1, 4);
        for (var m = 0; m < mutations && data.Count > 0; m++)
        {
            switch (rng.Next(7))
            {
                case 0: // byte flips
                    for (var i = 0; i < rng.Next(1, 4); i++)
                    {
                        var p = rng.Next(data.Count);
                        data[p] ^= (byte)(1 << rng.Next(8));
                    }

                    break;
                case 1: // truncation
                {
                    var keep = rng.Next(data.Count);
                    data.RemoveRange(keep, data.Count - keep);
                    break;
                }

                case 2: // duplicate a range (duplicated ops)
                {
                    var start = rng.Next(data.Count);
                    var len = Math.Min(rng.Next(1, 200), data.Count - start);
                    data.InsertRange(rng.Next(data.Count + 1), data.GetRange(start, len));
                    break;
                }

                case 3: // huge numbers in place of digits
                {
                    var idx = data.FindIndex(rng.Next(data.Count), b => b is >= (byte)'0' and <= (byte)'9');
                    if (idx >= 0)
                    {
                        var huge = new[] { "99999999999999999999999", "4294967296", "2147483647", "-1", "1048576", "000000000000000000001" }[rng.Next(6)];
                        data.InsertRange(idx, Encoding.ASCII.GetBytes(huge));
                    }

                    break;
                }

                case 4: // delete a range
                {
                    var start = rng.Next(data.Count);
                    data.RemoveRange(start, Math.Min(rng.Next(1, 30), data.Count - start));
                    break;
                }

                case 5: // insert random bytes
                {
                    var junk = new byte[rng.Next(1, 16)];
                    rng.NextBytes(junk);
                    data.InsertRange(rng.Next(data.Count + 1), junk);
                    break;
                }

                default: // strip or double CR/LF
                {
                    var idx = data.IndexOf((byte)'\r', rng.Next(data.Count));
                    if (idx >= 0)
                    {
                        if (rng.Next(2) == 0)
                        {
                            data.RemoveAt(idx);
                        }
                        else
                        {
                            data.InsertRange(idx, "\r\n"u8.ToArray());
                        }
                    }

                    break;
                }
            }
        }

        return [.. data];
    }
}
