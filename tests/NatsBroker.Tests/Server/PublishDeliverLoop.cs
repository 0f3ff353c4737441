using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Tests.Server;

/// <summary>
/// The allocation tests' workload: 16-byte PUBs on <c>bench.x</c> from one blocking raw socket, read back as MSGs by
/// another subscribed to <c>bench.&gt;</c> with sid 1. Raw sockets allocate nothing themselves, so the process-wide
/// allocation count around a measured run is the server's.
/// </summary>
internal static class PublishDeliverLoop
{
    private const int Batch = 1000;

    /// <summary>Warms up with two runs (JIT, pools and capacities reach their steady size), then measures one:
    /// bytes allocated per message.</summary>
    public static double AllocatedPerMessage(Socket pub, Socket sub, int batches = 200)
    {
        var sb = new StringBuilder();
        for (int i = 0; i < Batch; i++) sb.Append("PUB bench.x 16\r\n0123456789abcdef\r\n");
        var batchBytes = Encoding.ASCII.GetBytes(sb.ToString());
        int perMsg = "MSG bench.x 1 16\r\n0123456789abcdef\r\n".Length;
        var recv = new byte[1 << 20];

        void Run(int count)
        {
            // Windows of 20 batches (720 KB) in flight: a burst the outbound buffers must absorb without
            // allocating, bounded so the warm-up reaches the same pool size as the measured run.
            const int window = 20;
            for (int w = 0; w < count; w += window)
            {
                long expected = (long)window * Batch * perMsg, got = 0;
                var sender = Task.Run(() => { for (int b = 0; b < window; b++) pub.Send(batchBytes); });
                while (got < expected)
                {
                    int n = sub.Receive(recv);
                    Assert.True(n > 0, "subscriber connection closed");
                    got += n;
                }
                sender.Wait();
                Assert.Equal(expected, got);
            }
        }

        Run(batches);
        Run(batches);
        long before = GC.GetTotalAllocatedBytes(precise: true);
        Run(batches);
        long allocated = GC.GetTotalAllocatedBytes(precise: true) - before;
        return (double)allocated / ((long)batches * Batch);
    }
}
