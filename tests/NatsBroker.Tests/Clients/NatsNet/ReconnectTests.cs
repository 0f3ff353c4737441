using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;
using static NatsBroker.Tests.Clients.NatsNet.NatsNetKit;

namespace NatsBroker.Tests.Clients.NatsNet;

/// <summary>NATS.Net reconnects after the server restarts on the same port and restores its subscriptions.</summary>
public sealed class ReconnectTests(ITestOutputHelper output)
{
    [SkippableTheory]
    [InlineData(ServerKind.Ours, false)]
    [InlineData(ServerKind.Go, false)]
    [InlineData(ServerKind.Ours, true)]
    [InlineData(ServerKind.Go, true)]
    public async Task Client_reconnects_after_a_restart_and_its_subscription_works_again(ServerKind kind, bool hardKill)
    {
        Prerequisites.RequireServer(kind, output);
        await using var server = await ServerProcess.StartAsync(kind, log: output);
        await using var client = await ConnectAsync(server, "survivor", o => o with
        {
            MaxReconnectRetry = -1,
            ReconnectWaitMin = TimeSpan.FromMilliseconds(100),
            ReconnectWaitMax = TimeSpan.FromMilliseconds(500),
        });
        var disconnected = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var reopened = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        client.ConnectionDisconnected += (_, _) =>
        {
            disconnected.TrySetResult();
            return default;
        };
        client.ConnectionOpened += (_, _) =>
        {
            // Opened fires again after a reconnect; the first connect happened before the handler was added.
            if (disconnected.Task.IsCompleted)
            {
                reopened.TrySetResult();
            }

            return default;
        };

        await using var sub = await client.SubscribeCoreAsync<string>("rc.x");
        await client.PingAsync();

        await server.RestartAsync(hard: hardKill);
        await WithinAsync(disconnected.Task.ContinueWith(_ => true, TaskScheduler.Default), TimeSpan.FromSeconds(15), "ConnectionDisconnected");
        await WithinAsync(reopened.Task.ContinueWith(_ => true, TaskScheduler.Default), TimeSpan.FromSeconds(20), "reconnect (ConnectionOpened)");
        await client.PingAsync(); // the replayed SUB has reached the new server

        // The subscription was re-sent to the new process: another connection's publish reaches it.
        await using var publisher = await ConnectAsync(server, "publisher");
        await publisher.PublishAsync("rc.x", "after restart");
        Assert.Equal("after restart", (await NextAsync(sub, "rc.x after restart")).Data);

        // And the survivor can publish and request again.
        await using var echo = await publisher.SubscribeCoreAsync<string>("rc.back");
        await publisher.PingAsync();
        await client.PublishAsync("rc.back", "from survivor");
        Assert.Equal("from survivor", (await NextAsync(echo, "rc.back")).Data);
        Assert.Equal(NatsConnectionState.Open, client.ConnectionState);
    }
}
