using System.Buffers.Binary;
using System.Diagnostics;
using System.Threading.Channels;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;
using static NatsBroker.Tests.Clients.NatsNet.NatsNetKit;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>
/// "Buffers don't clobber" (nats.node's test of the same name; NATS.Net's suite has the same shape): one connection
/// subscribes to a subject and publishes 256K x 1 KB messages (256 MB) to it as fast as it can, reading only when
/// its publishing is done or blocked. The connection is both the publisher and a destination falling behind by more
/// than max_pending (64 MB); nats-server 2.9.10 pauses that connection's reads while its own outbound drains (here
/// after ~40-55K messages), so every message arrives, in order, and the client is never cut off as a slow consumer.
/// Bounded: the test ends within ~25 s whatever the server does (at once when the client is disconnected).
/// </summary>
[Collection(ClobberCollection.Name)]
public sealed class ClobberTests(ITestOutputHelper output)
{
    private const int Count = 256 * 1024;
    private const int PayloadSize = 1024;
    private static readonly TimeSpan Budget = TimeSpan.FromSeconds(20);

    /// <summary>Publishing that made no progress this long is blocked by the server's back-pressure.</summary>
    private const int StalledPublishMs = 300;

    /// <summary>
    /// <paramref name="readLate"/>: the client reads only once its publishing is done or blocked (the nats.node
    /// shape, the hard case); otherwise it reads concurrently from the start (the usual NATS.Net shape).
    /// </summary>
    [SkippableTheory]
    [InlineData(ServerKind.Ours, true)]
    [InlineData(ServerKind.Go, true)]
    [InlineData(ServerKind.Ours, false)]
    [InlineData(ServerKind.Go, false)]
    public async Task Publishing_to_its_own_subscription_flat_out_delivers_everything_in_order(ServerKind kind, bool readLate)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await ServerProcess.StartAsync(kind, log: output);

        // Declared before the connection so it outlives it: the disconnect handler below cancels it.
        using var budget = new CancellationTokenSource(Budget);
        await using var nats = await ConnectAsync(server, "clobber", o => o with
        {
            // Client-side back-pressure instead of client-side drops: the test is about the server.
            SubPendingChannelCapacity = 1024,
            SubPendingChannelFullMode = BoundedChannelFullMode.Wait,
        });
        var disconnects = 0;
        var serverErrors = new List<string>();
        var dropped = 0;
        nats.ConnectionDisconnected += (_, args) =>
        {
            // Cut off (e.g. as a slow consumer): the outcome is known, stop early instead of spending the budget.
            Interlocked.Increment(ref disconnects);
            budget.Cancel();
            return default;
        };
        nats.ServerError += (_, args) =>
        {
            lock (serverErrors)
            {
                serverErrors.Add(args.Error);
            }

            return default;
        };
        nats.MessageDropped += (_, _) =>
        {
            Interlocked.Increment(ref dropped);
            return default;
        };

        await using var sub = await nats.SubscribeCoreAsync<byte[]>("clobber");
        await nats.PingAsync(budget.Token);

        var received = 0;
        var outOfOrder = -1;
        var published = 0;

        // readLate: the client reads only once its publishing is done or blocked by the server (as nats.node's single event
        // loop does: its publish loop runs to the end before the first read). The server must therefore absorb a
        // publisher that is its own destination falling behind: by pausing that connection's reads (back-pressure
        // through TCP) rather than by buffering without bound or cutting it off as a slow consumer.
        var gateOpenedAt = -1;
        var gate = Task.Run(async () =>
        {
            var last = -1;
            var unchangedSince = Stopwatch.StartNew();
            while (!budget.IsCancellationRequested)
            {
                var now = Volatile.Read(ref published);
                if (!readLate || now == Count || unchangedSince.ElapsedMilliseconds >= StalledPublishMs)
                {
                    gateOpenedAt = now;
                    return;
                }

                if (now != last)
                {
                    last = now;
                    unchangedSince.Restart();
                }

                await Task.Delay(20);
            }
        });
        var consumer = Task.Run(async () =>
        {
            try
            {
                await gate;
                while (received < Count && await sub.Msgs.WaitToReadAsync(budget.Token))
                {
                    while (received < Count && sub.Msgs.TryRead(out var m))
                    {
                        var seq = m.Data is { Length: PayloadSize } d ? BinaryPrimitives.ReadInt32LittleEndian(d) : -1;
                        if (seq != received && outOfOrder < 0)
                        {
                            outOfOrder = received;
                        }

                        received++;
                    }
                }
            }
            catch (OperationCanceledException)
            {
                // Budget spent: reported below with the count reached.
            }
        });

        var clock = Stopwatch.StartNew();
        var payload = new byte[PayloadSize];
        try
        {
            while (published < Count)
            {
                BinaryPrimitives.WriteInt32LittleEndian(payload, published);
                await nats.PublishAsync("clobber", payload, cancellationToken: budget.Token);
                Volatile.Write(ref published, published + 1);
            }
        }
        catch (OperationCanceledException)
        {
            // Budget spent while publishing: reported below.
        }
        catch (NatsException e)
        {
            output.WriteLine($"publish failed after {published}: {e.Message}");
        }

        await Task.WhenAny(consumer, Task.Delay(Timeout.InfiniteTimeSpan, budget.Token).ContinueWith(_ => { }, TaskScheduler.Default));
        await budget.CancelAsync();
        await consumer;
        clock.Stop();

        string errorsText;
        lock (serverErrors)
        {
            errorsText = string.Join("; ", serverErrors);
        }

        var summary = $"{kind}: published {published}, received {received} of {Count} in {clock.Elapsed.TotalSeconds:0.0} s " +
                      $"(reading started after {gateOpenedAt} published); " +
                      $"disconnects {disconnects}; client drops {dropped}; server errors [{errorsText}]; first out of order at {outOfOrder}";
        output.WriteLine(summary);
        if (received < Count || disconnects > 0)
        {
            output.WriteLine(server.OutputTail(2000));
        }

        Assert.True(published == Count, summary);
        Assert.True(received == Count, summary);
        Assert.True(outOfOrder < 0, summary);
        Assert.True(disconnects == 0, summary);
        Assert.True(serverErrors.Count == 0, summary);
        Assert.True(dropped == 0, summary);
    }
}

/// <summary>The clobber test moves ~256 MB through one connection per server: it runs alone.</summary>
[CollectionDefinition(Name, DisableParallelization = true)]
public sealed class ClobberCollection
{
    public const string Name = "NATS.Net clobber";
}
