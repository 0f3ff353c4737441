using System.Diagnostics;
using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// The issue 7 scenario: several clients keep retrying a wrong password for a bcrypt user while another client
/// does request/reply (as a plain-password user) against a responder. Measures the request/reply round trips
/// taken while the flood runs. Blocking sockets on dedicated threads, so the driver adds little noise of its own.
/// </summary>
internal static class BcryptFlood
{
    public const string FloodUser = "admin";
    public const string AppUser = "app";
    public const string AppPassword = "app-pw";

    /// <summary>Server config: a bcrypt user (cost as <c>nats server passwd</c> writes) and a plain one.</summary>
    public static string Config(string bcryptHash) => $$"""
        authorization {
          users = [
            {user: {{FloodUser}}, password: "{{bcryptHash}}"}
            {user: {{AppUser}}, password: "{{AppPassword}}"}
          ]
        }
        """;

    public sealed record Result(double[] RoundTripsMs, long FloodAttempts)
    {
        public double Percentile(double p) => BcryptFlood.Percentile(RoundTripsMs, p);
        public double TimeWeightedPercentile(double p) => BcryptFlood.TimeWeightedPercentile(RoundTripsMs, p);
    }

    /// <summary>Warms up, then runs <paramref name="flooders"/> bad-password loops for <paramref name="duration"/>
    /// while <paramref name="requesters"/> clients each do back-to-back requests (several, so that a server slowed
    /// to tens of milliseconds per round trip still yields enough samples); returns every round trip and the
    /// number of CONNECTs the server rejected (counted once the flooders' last attempts are answered).</summary>
    public static Result Run(int port, int flooders, int requesters, TimeSpan duration)
    {
        using var responder = LineClient.Open(port, AppUser, AppPassword);
        responder.Send("SUB flood.svc 1\r\nPING\r\n");
        responder.ReadUntil("PONG");
        var clients = new List<LineClient>();
        for (int i = 0; i < requesters; i++)
        {
            var c = LineClient.Open(port, AppUser, AppPassword);
            clients.Add(c);
            c.Send($"SUB flood.inbox.{i} 1\r\nPING\r\n");
            c.ReadUntil("PONG");
        }
        var stop = new CancellationTokenSource();
        var serve = new Thread(() => Serve(responder, stop.Token)) { IsBackground = true, Name = "flood-responder" };
        serve.Start();
        try
        {
            for (int i = 0; i < 300; i++) Request(clients[i % requesters], i % requesters); // JIT warm-up, no flood yet

            long attempts = 0;
            var floods = Enumerable.Range(0, flooders).Select(i => new Thread(() =>
            {
                while (!stop.IsCancellationRequested)
                {
                    if (TryBadLogin(port)) Interlocked.Increment(ref attempts);
                }
            }) { IsBackground = true, Name = "flood-" + i }).ToList();
            floods.ForEach(t => t.Start());
            Thread.Sleep(300); // let the flood reach steady state
            var end = Stopwatch.GetTimestamp() + (long)(duration.TotalSeconds * Stopwatch.Frequency);
            var perClient = new List<double>[requesters];
            Exception? failure = null;
            var loops = Enumerable.Range(0, requesters).Select(i => new Thread(() =>
            {
                var mine = perClient[i] = new List<double>(20_000);
                try
                {
                    while (Stopwatch.GetTimestamp() < end) mine.Add(Request(clients[i], i));
                }
                catch (Exception ex) when (ex is IOException or SocketException)
                {
                    failure = ex;
                }
            }) { IsBackground = true, Name = "flood-requester-" + i }).ToList();
            loops.ForEach(t => t.Start());
            foreach (var t in loops) Assert.True(t.Join(duration + TimeSpan.FromSeconds(20)), "a requester got no reply");
            if (failure is not null) throw new IOException("a requester failed: " + failure.Message, failure);
            stop.Cancel();
            // Each flooder finishes the attempt it has in flight: a server that never answers them shows up here.
            foreach (var t in floods) t.Join(TimeSpan.FromSeconds(10));
            return new Result([.. perClient.SelectMany(l => l)], Interlocked.Read(ref attempts));
        }
        finally
        {
            stop.Cancel();
            clients.ForEach(c => c.Dispose());
            responder.Dispose();
            serve.Join(TimeSpan.FromSeconds(5));
        }
    }

    private static double Request(LineClient requester, int index)
    {
        long t0 = Stopwatch.GetTimestamp();
        requester.Send($"PUB flood.svc flood.inbox.{index} 4\r\nping\r\n");
        requester.ReadMessage();
        return Stopwatch.GetElapsedTime(t0).TotalMilliseconds;
    }

    private static void Serve(LineClient responder, CancellationToken stop)
    {
        try
        {
            while (!stop.IsCancellationRequested)
            {
                var (reply, payload) = responder.ReadMessage();
                responder.Send($"PUB {reply} {payload.Length}\r\n{payload}\r\n");
            }
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException)
        {
            // closed at the end of the run
        }
    }

    /// <summary>One attacker attempt: connect, CONNECT with a wrong password, wait for the server to hang up.</summary>
    private static bool TryBadLogin(int port)
    {
        try
        {
            using var c = LineClient.Open(port, FloodUser, "wrong-password", expectPong: false);
            return c.ReadToClose().Contains("Authorization Violation", StringComparison.Ordinal);
        }
        catch (Exception ex) when (ex is IOException or SocketException)
        {
            return false;
        }
    }

    /// <summary>
    /// The latency a request sent at a random moment would be stuck behind: each round trip weighted by how long it
    /// lasted. A closed-loop client that is stalled for a second records one slow sample but thousands of fast ones
    /// around it, so the plain per-sample p99 hides stalls (coordinated omission); this one does not.
    /// </summary>
    public static double TimeWeightedPercentile(double[] values, double p)
    {
        if (values.Length == 0) return double.NaN;
        var sorted = values.Order().ToArray();
        double target = sorted.Sum() * p / 100, sum = 0;
        foreach (var v in sorted)
        {
            sum += v;
            if (sum >= target) return v;
        }
        return sorted[^1];
    }

    public static double Percentile(double[] values, double p)
    {
        if (values.Length == 0) return double.NaN;
        var sorted = values.Order().ToArray();
        int i = (int)Math.Ceiling(p / 100 * sorted.Length) - 1;
        return sorted[Math.Clamp(i, 0, sorted.Length - 1)];
    }

    /// <summary>A minimal blocking protocol client: CONNECT, send text, read lines and MSGs (answers PING).</summary>
    private sealed class LineClient : IDisposable
    {
        private readonly Socket _socket;
        private readonly NetworkStream _stream;
        private readonly byte[] _buf = new byte[64 * 1024];
        private int _start, _end;

        private LineClient(Socket socket)
        {
            _socket = socket;
            _stream = new NetworkStream(socket, ownsSocket: true);
        }

        public static LineClient Open(int port, string user, string pass, bool expectPong = true)
        {
            var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 10_000 };
            try
            {
                s.Connect("127.0.0.1", port);
            }
            catch
            {
                s.Dispose();
                throw;
            }
            var c = new LineClient(s);
            try
            {
                if (!c.ReadLine().StartsWith("INFO ", StringComparison.Ordinal)) throw new IOException("no INFO");
                c.Send($"CONNECT {{\"verbose\":false,\"pedantic\":false,\"user\":\"{user}\",\"pass\":\"{pass}\"}}\r\n" + (expectPong ? "PING\r\n" : ""));
                if (expectPong) c.ReadUntil("PONG");
                return c;
            }
            catch
            {
                c.Dispose();
                throw;
            }
        }

        public void Send(string text) => _stream.Write(Encoding.ASCII.GetBytes(text));

        public void ReadUntil(string line)
        {
            string got;
            while ((got = ReadLine()) != line)
            {
                if (got.StartsWith("-ERR", StringComparison.Ordinal)) throw new IOException("server error: " + got);
            }
        }

        public (string Reply, string Payload) ReadMessage()
        {
            while (true)
            {
                var line = ReadLine();
                if (line == "PING")
                {
                    Send("PONG\r\n");
                    continue;
                }
                if (!line.StartsWith("MSG ", StringComparison.Ordinal))
                {
                    if (line.StartsWith("-ERR", StringComparison.Ordinal)) throw new IOException("server error: " + line);
                    continue;
                }
                var parts = line.Split(' ');
                int size = int.Parse(parts[^1], System.Globalization.CultureInfo.InvariantCulture);
                string reply = parts.Length == 5 ? parts[3] : "";
                Fill(size + 2);
                var payload = Encoding.ASCII.GetString(_buf, _start, size);
                _start += size + 2;
                return (reply, payload);
            }
        }

        public string ReadToClose()
        {
            var sb = new StringBuilder();
            try
            {
                while (true)
                {
                    if (_start == _end && !Receive()) break;
                    sb.Append(Encoding.ASCII.GetString(_buf, _start, _end - _start));
                    _start = _end;
                }
            }
            catch (Exception ex) when (ex is IOException or SocketException)
            {
                // reset after the close
            }
            return sb.ToString();
        }

        private string ReadLine()
        {
            while (true)
            {
                int nl = Array.IndexOf(_buf, (byte)'\n', _start, _end - _start);
                if (nl >= 0)
                {
                    var line = Encoding.ASCII.GetString(_buf, _start, nl - _start).TrimEnd('\r');
                    _start = nl + 1;
                    return line;
                }
                if (!Receive()) throw new IOException("connection closed");
            }
        }

        private void Fill(int n)
        {
            while (_end - _start < n)
            {
                if (!Receive()) throw new IOException("connection closed");
            }
        }

        private bool Receive()
        {
            if (_start > 0)
            {
                Buffer.BlockCopy(_buf, _start, _buf, 0, _end - _start);
                _end -= _start;
                _start = 0;
            }
            int n = _stream.Read(_buf, _end, _buf.Length - _end);
            _end += n;
            return n > 0;
        }

        public void Dispose() => _stream.Dispose();
    }
}
