using System.Text;
using Microsoft.Extensions.Logging.Abstractions;
using NatsBroker.Configuration;
using NatsBroker.Transport;

namespace NatsBroker.Server;

public sealed partial class NatsServer
{
    /// <summary>
    /// Runs one scripted session (CONNECT, SUB, PUB, HPUB, request with no responders, UNSUB, PING) over the
    /// in-memory transport of a throwaway server, on a background thread, so the first real client does not pay
    /// for JIT compilation and first-use initialisation of the protocol paths. The throwaway server has its own
    /// routing table, client ids and statistics, so the session is invisible to the real server and can overlap
    /// its start-up and its first clients instead of delaying "listening" (it ran before binding: ~65 ms of a
    /// ~180 ms start-up on the 2-core bench VM).
    /// </summary>
    public static Thread StartWarmUp()
    {
        var thread = new Thread(static () =>
        {
            // A throwaway server with a scratch account, so the warm-up leaves no trace in any real statistics.
            var scratch = new NatsServer(new ServerOptions(), NullLogger.Instance);
            scratch.RunWarmUpSession(new Accounts.Account("$warmup", scratch.NewRouter()));
        })
        {
            IsBackground = true,
            Name = "warm-up",
            Priority = ThreadPriority.BelowNormal,
        };
        thread.Start();
        return thread;
    }

    private void RunWarmUpSession(Accounts.Account scratch)
    {
        var (serverEnd, clientEnd) = InMemoryTransport.CreatePair();
        ulong id = (ulong)Interlocked.Increment(ref _nextClientId);
        var client = new ClientConnection(this, id, serverEnd, ConnectionKind.InMemory, "", 0, account: scratch) { IsInternal = true };
        var run = Task.Run(client.RunAsync);
        var script = Encoding.ASCII.GetBytes(
            "CONNECT {\"verbose\":false,\"pedantic\":false,\"headers\":true,\"no_responders\":true,\"name\":\"warmup\"}\r\n" +
            "SUB _warmup.> 1\r\nSUB _warmup.q q 2\r\nPUB _warmup.q 2\r\nhi\r\nHPUB _warmup.h r 12 14\r\nNATS/1.0\r\n\r\nhi\r\n" +
            "SUB _warmup_inbox 3\r\nPUB _nobody _warmup_inbox 0\r\n\r\nUNSUB 1\r\nUNSUB 2 5\r\nPING\r\n");
        clientEnd.Write(script);
        clientEnd.Flush();
        var buf = new byte[8192];
        var seen = new StringBuilder();
        var deadline = Environment.TickCount64 + 5000;
        while (!seen.ToString().Contains("PONG", StringComparison.Ordinal) && Environment.TickCount64 < deadline)
        {
            var read = clientEnd.ReadAsync(buf).AsTask();
            if (!read.Wait(TimeSpan.FromSeconds(5)) || read.Result == 0) break;
            seen.Append(Encoding.ASCII.GetString(buf, 0, read.Result));
        }
        clientEnd.Dispose();
        client.CloseNow(CloseReason.ClientClosed);
        run.Wait(TimeSpan.FromSeconds(5));
    }
}
