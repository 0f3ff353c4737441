using System.Diagnostics;
using System.Net.Sockets;
using System.Text;
using MQTTnet;
using MQTTnet.Formatter;
using MQTTnet.Protocol;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// Issue 40: a bounded fuzz run of MQTT packets against the gateway. Seeded (the same inputs every run), a few
/// thousand connections each sending a mutated sequence of valid MQTT 3.1.1 / 5 packets (bytes flipped, lengths
/// changed, packets cut short or spliced, random fixed headers, random CONNECT flags). The gateway must close or answer each one (never
/// hang after the client's end of stream), must not crash (one well-formed MQTTnet client stays connected the whole
/// run, its session on the same gateway process), and must keep serving it: a round trip through it after every
/// batch of inputs, and at the end.
/// </summary>
[Collection("Gateways")]
public sealed class MqttFuzzTests(ITestOutputHelper output)
{
    private const int Inputs = 3000;
    private const int Parallel = 24;
    private const int Seed = 40;

    [SkippableFact]
    public async Task Mutated_packets_never_crash_or_stall_the_gateway()
    {
        await using var s = await MqttOracle.StartAsync("ours", output, """
            authorization { users = [ { user: alice, password: secret } ] }
            """, "no_auth_user: alice");
        var factory = new MqttClientFactory();
        using var keeper = factory.CreateMqttClient();
        int disconnects = 0;
        keeper.DisconnectedAsync += _ =>
        {
            Interlocked.Increment(ref disconnects);
            return Task.CompletedTask;
        };
        var received = new Received(keeper);
        await keeper.ConnectAsync(new MqttClientOptionsBuilder().WithTcpServer("127.0.0.1", s.MqttPort).WithClientId("fuzz-keeper")
            .WithProtocolVersion(MqttProtocolVersion.V500).WithKeepAlivePeriod(TimeSpan.FromSeconds(30)).WithTimeout(TimeSpan.FromSeconds(15)).Build());
        await keeper.SubscribeAsync("fuzz/keeper", MqttQualityOfServiceLevel.AtLeastOnce);

        var random = new Random(Seed);
        var inputs = new byte[Inputs][];
        for (int i = 0; i < Inputs; i++) inputs[i] = Mutate(random, WithClientId(Seeds[random.Next(Seeds.Length)], i));

        var slow = new List<string>();
        var watch = Stopwatch.StartNew();
        const int Batch = 500;
        for (int from = 0; from < Inputs; from += Batch)
        {
            await System.Threading.Tasks.Parallel.ForEachAsync(Enumerable.Range(from, Math.Min(Batch, Inputs - from)),
                new ParallelOptions { MaxDegreeOfParallelism = Parallel }, async (i, _) =>
                {
                    var took = await SendAsync(s.MqttPort, inputs[i]);
                    if (took > TimeSpan.FromSeconds(5))
                    {
                        lock (slow) slow.Add($"input {i} ({Convert.ToHexString(inputs[i].AsSpan(0, Math.Min(48, inputs[i].Length)))}): {took.TotalSeconds:F1} s");
                    }
                });
            await RoundTripAsync(keeper, received, $"after input {from + Batch}");
        }
        output.WriteLine($"{Inputs} inputs in {watch.Elapsed.TotalSeconds:F1} s; keeper disconnects: {disconnects}");
        foreach (var line in slow) output.WriteLine("slow: " + line);
        Assert.Empty(slow);
        // An exception escaping a session (SessionSet logs "Client session failed"), such as the
        // IndexOutOfRangeException a will of QoS 3 caused at the disconnect, is a bug even when the process survives.
        var failures = s.Output.Split('\n').Where(l => l.Contains("Client session failed", StringComparison.Ordinal) || l.Contains("Unhandled", StringComparison.Ordinal)).ToList();
        foreach (var line in failures.Take(20)) output.WriteLine("failure: " + line);
        Assert.Empty(failures);
        Assert.Equal(0, disconnects);
        Assert.True(keeper.IsConnected);

        // A new well-formed client still connects and works.
        using var after = await ConnectAsync(factory, s.MqttPort, "fuzz-after");
        var afterReceived = new Received(after);
        await after.SubscribeAsync("fuzz/after");
        await after.PublishStringAsync("fuzz/after", "ok");
        Assert.Equal("ok", (await afterReceived.NextAsync()).ConvertPayloadToString());
    }

    private static async Task<IMqttClient> ConnectAsync(MqttClientFactory factory, int port, string id)
    {
        var client = factory.CreateMqttClient();
        await client.ConnectAsync(new MqttClientOptionsBuilder().WithTcpServer("127.0.0.1", port).WithClientId(id)
            .WithProtocolVersion(MqttProtocolVersion.V311).WithTimeout(TimeSpan.FromSeconds(15)).Build());
        return client;
    }

    private static async Task RoundTripAsync(IMqttClient keeper, Received received, string when)
    {
        string payload = "alive " + when;
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        await keeper.PublishAsync(new MqttApplicationMessageBuilder().WithTopic("fuzz/keeper").WithPayload(payload)
            .WithQualityOfServiceLevel(MqttQualityOfServiceLevel.AtLeastOnce).Build(), cts.Token);
        MqttApplicationMessage m;
        do m = await received.NextAsync(10); while (m.ConvertPayloadToString() != payload);
    }

    /// <summary>Sends one input, ends the send side, and reads until the server closes; how long that took.</summary>
    private static async Task<TimeSpan> SendAsync(int port, byte[] input)
    {
        var watch = Stopwatch.StartNew();
        using var tcp = new TcpClient();
        await tcp.ConnectAsync("127.0.0.1", port);
        var stream = tcp.GetStream();
        var buf = new byte[4096];
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        try
        {
            await stream.WriteAsync(input, cts.Token);
            tcp.Client.Shutdown(SocketShutdown.Send);
            while (await stream.ReadAsync(buf, cts.Token) > 0) { }
        }
        catch (Exception ex) when (ex is IOException or SocketException)
        {
            // reset by the server: closed
        }
        catch (OperationCanceledException)
        {
            // still open after 10 s: reported as slow
        }
        return watch.Elapsed;
    }

    private static byte[] Str(string s) => RawMqtt.Str(s);

    private static byte[] P(byte header, params byte[][] parts) => RawMqtt.Packet(header, [.. parts.SelectMany(p => p)]);

    private static readonly byte[] Id = Str("fuzz-client");

    /// <summary>Valid sequences the mutations start from: CONNECT (3.1.1 and 5, with will and credentials) and the packets after it.</summary>
    private static readonly byte[][] Seeds = BuildSeeds();

    private static byte[][] BuildSeeds()
    {
        byte[] connect311 = P(0x10, Str("MQTT"), [4, 0xC6, 0, 30], Id, Str("w/t"), Str("will"), Str("alice"), Str("secret"));
        byte[] connect5 = P(0x10, Str("MQTT"), [5, 0xC6, 0, 30, 5, 0x11, 0, 0, 0, 10], Id, [0], Str("w/t"), Str("will"), Str("alice"), Str("secret"));
        byte[] Body311(params byte[][] packets) => [.. connect311, .. packets.SelectMany(p => p)];
        byte[] Body5(params byte[][] packets) => [.. connect5, .. packets.SelectMany(p => p)];
        return
        [
            connect311,
            Body311(P(0x82, [0, 1], Str("f/+"), [1], Str("f/#"), [2]), P(0x30, Str("f/a"), Encoding.ASCII.GetBytes("x")), P(0xE0)),
            Body311(P(0x32, Str("f/b"), [0, 2], Encoding.ASCII.GetBytes("q1")), P(0x34, Str("f/c"), [0, 3], Encoding.ASCII.GetBytes("q2")), P(0x62, [0, 3])),
            Body311(P(0x31, Str("f/r"), Encoding.ASCII.GetBytes("retained")), P(0xA2, [0, 4], Str("f/+")), P(0xC0), P(0xE0)),
            Body311(P(0x40, [0, 9]), P(0x50, [0, 9]), P(0x70, [0, 9]), P(0xC0)),
            connect5,
            Body5(P(0x82, [0, 1, 2, 0x0B, 7], Str("f/+"), [0x2D]), P(0x30, Str("f/a"), [3, 0x23, 0, 1], Encoding.ASCII.GetBytes("alias")),
                P(0x30, [0, 0, 3, 0x23, 0, 1], Encoding.ASCII.GetBytes("via alias")), P(0xE0, [0x04, 0])),
            Body5(P(0x32, Str("f/b"), [0, 2, 8, 0x26], Str("k"), Str("v"), [0x01, 1], Encoding.ASCII.GetBytes("props")), P(0xF0, [0x19, 0])),
            Body5(P(0x82, [0, 5, 0], Str("$share/g/f/x"), [1]), P(0xA2, [0, 6, 0], Str("$share/g/f/x")), P(0xE0, [0, 5, 0x11, 0, 0, 0, 0])),
        ];
    }

    /// <summary>The seed with a client ID of its own for input <paramref name="i"/> (same length), so inputs do not take each other over.</summary>
    private static byte[] WithClientId(byte[] seed, int i)
    {
        var copy = (byte[])seed.Clone();
        int at = copy.AsSpan().IndexOf("fuzz-client"u8);
        if (at >= 0) Encoding.ASCII.GetBytes($"fuzz-{i:D6}").CopyTo(copy, at);
        return copy;
    }

    /// <summary>One to four mutations of a seed.</summary>
    private static byte[] Mutate(Random random, byte[] seed)
    {
        var data = new List<byte>(seed);
        int n = random.Next(1, 5);
        for (int k = 0; k < n; k++)
        {
            if (data.Count == 0) data.Add((byte)random.Next(256));
            int at = random.Next(data.Count);
            switch (random.Next(9))
            {
                case 8 when data.Count > 9 && data[0] == 0x10: data[9] = (byte)random.Next(256); break; // any CONNECT flags (will QoS 3, reserved...)
                case 0: data[at] = (byte)random.Next(256); break; // a random byte
                case 1: data[at] ^= (byte)(1 << random.Next(8)); break; // a flipped bit
                case 2: data.RemoveRange(at, data.Count - at); break; // cut short
                case 3: data.InsertRange(at, RandomBytes(random, random.Next(1, 16))); break; // garbage spliced in
                case 4: data.RemoveRange(at, Math.Min(random.Next(1, 8), data.Count - at)); break; // bytes dropped
                case 5: data[at] = (byte)(random.Next(16) << 4 | random.Next(16)); break; // a random fixed header somewhere
                case 6: data.InsertRange(at, [0xFF, 0xFF, 0xFF, 0x7F]); break; // a huge remaining length
                default: data.InsertRange(at, data.GetRange(at, Math.Min(random.Next(1, 32), data.Count - at))); break; // repeated bytes
            }
        }
        return [.. data];
    }

    private static byte[] RandomBytes(Random random, int count)
    {
        var bytes = new byte[count];
        random.NextBytes(bytes);
        return bytes;
    }
}
