using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>
/// README.md "Using it from .NET (NATS.Net)": the example must be in the README word for word (so the two cannot
/// drift apart) and must do what its comments say, against our broker and against nats-server.
/// </summary>
public sealed class ReadmeExampleTests(ITestOutputHelper output)
{
    /// <summary>The README's code block, exactly (the URL is replaced by the test server's).</summary>
    private const string Example = """
        using NATS.Client.Core;

        await using var nats = new NatsConnection(new NatsOpts { Url = "nats://127.0.0.1:4222" });
        await nats.ConnectAsync();

        // A responder; SubscribeCoreAsync returns once the subscription is registered.
        await using var sub = await nats.SubscribeCoreAsync<string>("greet.*");
        var responder = Task.Run(async () =>
        {
            await foreach (var msg in sub.Msgs.ReadAllAsync())
            {
                Console.WriteLine($"{msg.Subject}: {msg.Data}");
                await msg.ReplyAsync($"hello, {msg.Data}");
            }
        });

        var reply = await nats.RequestAsync<string, string>("greet.joe", "joe");
        Console.WriteLine(reply.Data); // hello, joe
        """;

    [Fact]
    public void The_readme_shows_this_example()
    {
        var readme = File.ReadAllText(Path.Combine(TestEnvironment.RepoRoot, "README.md")).ReplaceLineEndings("\n");
        Assert.Contains("```csharp\n" + Example.ReplaceLineEndings("\n") + "\n```", readme, StringComparison.Ordinal);
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task The_readme_example_runs_as_written(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await ServerProcess.StartAsync(kind, log: output);
        var printed = new List<string>();

        // The example's statements, in order; Console.WriteLine goes to `printed`.
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();

        await using var sub = await nats.SubscribeCoreAsync<string>("greet.*");
        var responder = Task.Run(async () =>
        {
            await foreach (var msg in sub.Msgs.ReadAllAsync())
            {
                lock (printed)
                {
                    printed.Add($"{msg.Subject}: {msg.Data}");
                }

                await msg.ReplyAsync($"hello, {msg.Data}");
            }
        });

        var reply = await nats.RequestAsync<string, string>("greet.joe", "joe");
        lock (printed)
        {
            printed.Add(reply.Data!);
        }

        output.WriteLine(string.Join("\n", printed));
        Assert.Equal(["greet.joe: joe", "hello, joe"], printed);

        // Ending the subscription ends the responder loop cleanly.
        await sub.UnsubscribeAsync();
        await NatsNetKit.WithinAsync(responder.ContinueWith(t => t.Status, TaskScheduler.Default), NatsNetKit.Wait, "responder loop end");
        Assert.True(responder.IsCompletedSuccessfully, responder.Exception?.ToString());
    }
}
