using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using NatsBroker.Bench.Infra;
using NatsBroker.Bench.Raw;

namespace NatsBroker.Bench.Scenarios.Core;

/// <summary>
/// Issue 7's "a client can stall others": F clients keep retrying a wrong password for a bcrypt user (cost 11, what
/// <c>nats server passwd</c> writes) while one client does back-to-back request/reply with the right password
/// against an echo service. Reports that client's round-trip latency while the flood runs.
/// <para>The count is the measuring window in milliseconds (quick mode 5 s): under the flood a nats-server round
/// trip takes tens of milliseconds, so a fixed request count would make the run length depend on the server.
/// The note gives the time-weighted p99 (each round trip weighted by its duration: a closed-loop client stalled
/// for a second records one slow sample among thousands of fast ones, which the plain p99 hides) and how many bad
/// logins each server rejected in the window.</para>
/// </summary>
internal sealed class AuthFloodScenario : IScenario
{
    private const string User = "bench";
    private const string Password = "right-password";
    // crypt("right-password", "$2a$11$Q9pJ1qgzL0Uo8cU8nW2r3e") from libxcrypt.
    private const string PasswordHash = "$2a$11$Q9pJ1qgzL0Uo8cU8nW2r3eITa3fQyw3CPVBv6OfvEQm3HdEZfQe/u";

    private readonly int _flooders;

    public AuthFloodScenario(string name, int flooders, int payload, int defaultSeconds)
    {
        Name = name;
        _flooders = flooders;
        PayloadBytes = payload;
        DefaultCount = defaultSeconds * 1000L;
        Title = $"request/reply while {flooders} clients flood wrong bcrypt passwords";
    }

    public string Name { get; }

    public string Title { get; }

    public string Generator => "raw";

    public int PayloadBytes { get; }

    public bool NeedsJetStream => false;

    public bool ReportsLatency => true;

    public long DefaultCount { get; }

    public IReadOnlyList<string> ServerArgs => ["--user", User, "--pass", PasswordHash];

    public ScenarioResult Run(ScenarioContext ctx)
    {
        string svcSubject = "bench.af." + ctx.RunId;
        string inbox = "bench.afrep." + ctx.RunId;
        var svc = ctx.Connect("svc", user: User, pass: Password);
        svc.Send($"SUB {svcSubject} 1\r\n");
        svc.Flush();
        ctx.StartWorker("service", () => RequestReplyScenario.Serve(svc, PayloadBytes));
        var client = ctx.Connect("client", user: User, pass: Password);
        client.Send($"SUB {inbox} 1\r\n");
        client.Flush();
        var frame = Frames.Pub(svcSubject, inbox, PayloadBytes);
        var warm = new Histogram();
        for (int i = 0; i < 300; i++)
        {
            RoundTrip(client, frame, warm);
        }

        long rejected = 0;
        var flooding = new CancellationTokenSource();
        ctx.Track(flooding);
        for (int i = 0; i < _flooders; i++)
        {
            ctx.StartWorker("flooder", () =>
            {
                while (!flooding.IsCancellationRequested && !ctx.Stopping)
                {
                    if (BadLogin(ctx.Endpoint))
                    {
                        Interlocked.Increment(ref rejected);
                    }
                }
            });
        }

        Thread.Sleep(300); // the flood reaches steady state
        long rejectedBefore = Interlocked.Read(ref rejected);
        var hist = new Histogram();
        var samples = new List<long>(100_000);
        ctx.MarkStart();
        long end = Stopwatch.GetTimestamp() + ctx.Count * Stopwatch.Frequency / 1000;
        while (Stopwatch.GetTimestamp() < end)
        {
            samples.Add(RoundTrip(client, frame, hist));
        }

        ctx.MarkEnd();
        long rejectedInWindow = Interlocked.Read(ref rejected) - rejectedBefore;
        flooding.Cancel();

        var r = ctx.Result;
        r.Messages = hist.Count;
        r.Deliveries = hist.Count;
        r.P50Us = hist.PercentileMicros(50);
        r.P95Us = hist.PercentileMicros(95);
        r.P99Us = hist.PercentileMicros(99);
        r.Note = $"time-weighted p99 {TimeWeightedPercentile(samples, 99) * 1e3 / Stopwatch.Frequency:0.0} ms, max {hist.MaxNs / 1e6:0.0} ms, {rejectedInWindow} bad logins rejected in the window";
        return r;
    }

    /// <summary>The round trip a request sent at a random moment would wait behind (samples weighted by duration).</summary>
    private static long TimeWeightedPercentile(List<long> ticks, double p)
    {
        if (ticks.Count == 0)
        {
            return 0;
        }

        ticks.Sort();
        double target = ticks.Sum(t => (double)t) * p / 100, sum = 0;
        foreach (var t in ticks)
        {
            sum += t;
            if (sum >= target)
            {
                return t;
            }
        }

        return ticks[^1];
    }

    private long RoundTrip(RawConnection c, byte[] frame, Histogram h)
    {
        long t0 = Stopwatch.GetTimestamp();
        c.Send(frame);
        var r = c.Reader;
        while (true)
        {
            var k = r.Next();
            if (k is FrameKind.Msg or FrameKind.HMsg)
            {
                if (r.PayloadLength != PayloadBytes)
                {
                    throw new InvalidDataException($"reply payload {r.PayloadLength} B, expected {PayloadBytes} B");
                }

                break;
            }

            if (k == FrameKind.Err)
            {
                throw new InvalidOperationException("server error: " + r.LineText);
            }
        }

        long elapsed = Stopwatch.GetTimestamp() - t0;
        h.RecordTicks(elapsed);
        return elapsed;
    }

    /// <summary>One attempt: connect, CONNECT with a wrong password, read until the server hangs up.</summary>
    private static bool BadLogin(IPEndPoint ep)
    {
        try
        {
            using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 10_000 };
            s.Connect(ep);
            s.Send(Encoding.ASCII.GetBytes($"CONNECT {{\"verbose\":false,\"pedantic\":false,\"user\":\"{User}\",\"pass\":\"wrong\"}}\r\nPING\r\n"));
            var got = new StringBuilder();
            var buf = new byte[4096];
            int n;
            while ((n = s.Receive(buf)) > 0)
            {
                got.Append(Encoding.ASCII.GetString(buf, 0, n));
            }

            return got.ToString().Contains("Authorization Violation", StringComparison.Ordinal);
        }
        catch (Exception ex) when (ex is IOException or SocketException)
        {
            return false;
        }
    }
}
