using System.Text;
using NATS.Client.Core;
using NATS.Client.JetStream;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>kill -9 while an atomic batch of 1,000 is being committed, under sync_interval: always: after restart, all or none.</summary>
public sealed class BatchKillTests(ITestOutputHelper output)
{
    [Fact]
    public async Task A_batch_of_1000_is_all_or_none_after_kill_9()
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        try
        {
            var config = $"jetstream {{ store_dir: \"{dir}\", sync_interval: always }}\n";
            await using var server = await ServerProcess.StartAsync(ServerKind.Ours, config, output);
            await using (var nats = new NatsConnection(new NatsOpts { Url = server.Url }))
            {
                var r = await nats.RequestAsync<byte[], byte[]>("$JS.API.STREAM.CREATE.KB",
                    Encoding.UTF8.GetBytes("""{"name":"KB","subjects":["kb.>"],"storage":"file","allow_atomic":true}"""));
                Assert.DoesNotContain("error", Encoding.UTF8.GetString(r.Data!), StringComparison.Ordinal);
            }
            long acknowledged = 0;
            // Kill at different points: while the batch is still arriving, around its commit, and after its PubAck.
            int[] killAfterMs = [0, 1, 3, 8, -1];
            for (int round = 0; round < killAfterMs.Length; round++)
            {
                await using (var c = await RawClient.ConnectAsync(server))
                {
                    await c.HandshakeAsync("""{"verbose":false,"pedantic":false,"headers":true}""");
                    await c.SendAsync("SUB _R.> 1\r\n");
                    await c.PingAsync();
                    await c.SendBytesAsync(BatchBytes($"k{round}", 1000));
                    if (killAfterMs[round] < 0)
                    {
                        var ack = await c.ExpectMessageAsync(TimeSpan.FromSeconds(20), skipPongs: true);
                        Assert.Contains("\"count\":1000", ack.PayloadText, StringComparison.Ordinal);
                        acknowledged += 1000;
                    }
                    else if (killAfterMs[round] > 0)
                    {
                        await Task.Delay(killAfterMs[round]);
                    }
                    await server.RestartAsync(hard: true);
                }
                await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
                var js = new NatsJSContext(nats);
                var s = await js.GetStreamAsync("KB");
                long msgs = s.Info.State.Messages;
                output.WriteLine($"round {round} (kill after {killAfterMs[round]} ms): {msgs} messages");
                Assert.True(msgs % 1000 == 0, $"round {round}: {msgs} messages: part of a batch survived");
                Assert.Equal((ulong)msgs, s.Info.State.LastSeq);
                Assert.True(msgs >= acknowledged, $"round {round}: {msgs} messages, {acknowledged} acknowledged");
                acknowledged = msgs;
            }
        }
        finally
        {
            try { Directory.Delete(dir, recursive: true); } catch (IOException) { }
        }
    }

    /// <summary>999 staged messages of 256 bytes and the commit (with a reply), as one buffer.</summary>
    private static byte[] BatchBytes(string id, int count)
    {
        var sb = new StringBuilder();
        string payload = new('p', 256);
        for (int i = 1; i <= count; i++)
        {
            string hdr = $"NATS/1.0\r\nNats-Batch-Id: {id}\r\nNats-Batch-Sequence: {i}\r\n" + (i == count ? "Nats-Batch-Commit: 1\r\n" : "") + "\r\n";
            string reply = i == count ? "_R.commit " : "";
            sb.Append($"HPUB kb.{i % 10} {reply}{hdr.Length} {hdr.Length + payload.Length}\r\n{hdr}{payload}\r\n");
        }
        return Encoding.ASCII.GetBytes(sb.ToString());
    }
}
