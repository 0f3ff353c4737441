using System.Buffers;
using System.Net.Sockets;
using System.Text.Json.Nodes;
using Microsoft.Extensions.Logging;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Gateways.Link;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The hook's way to the operator's authentication service: one link to the core per gateway process (opened at
/// the first request, opened again after it ends), logged in as <c>enhanced_authentication { user, password }</c>
/// (or, without them, as the mqtt block's no_auth_user), over which each AUTH step is a NATS request to
/// <c>subject</c> with <c>timeout</c>. Requests of many clients share the link (NatsLink's inbox); the link's own
/// buffers are bounded, and each request waits at most the timeout.
/// </summary>
internal sealed class EnhancedAuthHook(MqttOptions options, GatewayEnvironment environment, ProxySigner signer, ILogger log) : IDisposable
{
    private readonly AsyncMutex _opening = new();
    private readonly CancellationTokenSource _stop = new();
    private NatsLink? _link;
    private Task _reading = Task.CompletedTask;

    /// <summary>Sends one step and waits for its reply; <see cref="TimeoutException"/> when none came in time.</summary>
    public async Task<NatsReply> RequestAsync(byte[] body, CancellationToken ct)
    {
        var link = await LinkAsync(ct).ConfigureAwait(false);
        return await link.RequestAsync(options.EnhancedAuth.Subject!, ReadOnlyMemory<byte>.Empty, new ReadOnlySequence<byte>(body),
            options.EnhancedAuth.Timeout, ct).ConfigureAwait(false);
    }

    private async Task<NatsLink> LinkAsync(CancellationToken ct)
    {
        await _opening.EnterAsync(ct).ConfigureAwait(false);
        try
        {
            // An ended link was disposed by its read loop (ReadAsync).
            if (_link is { } open && !_reading.IsCompleted) return open;
            _link = null;
            var core = await CoreLink.ConnectAsync(environment.CoreSocket, ct).ConfigureAwait(false);
            var link = new NatsLink(core);
            var fields = CoreConnectFields.Create("mqtt enhanced authentication");
            var auth = options.EnhancedAuth;
            if (auth.User is { } user)
            {
                fields["user"] = user;
                fields["pass"] = auth.Password ?? "";
            }
            var client = new ProxiedClient { Gateway = "mqtt", NoAuthUser = auth.User is null ? options.NoAuthUser : null };
            string? refused = await link.ConnectAsync(MqttSession.SignedConnect(fields, client, signer, core), ct).ConfigureAwait(false);
            if (refused is not null)
            {
                await link.DisposeAsync().ConfigureAwait(false);
                throw new IOException("the core refused the enhanced authentication link: " + refused);
            }
            _link = link;
            _reading = ReadAsync(link);
            return link;
        }
        finally
        {
            _opening.Exit();
        }
    }

    /// <summary>The link's read loop (replies); at its end the link is closed (logged), and the next request opens a new one.</summary>
    private async Task ReadAsync(NatsLink link)
    {
        await Task.Yield();
        try
        {
            await link.RunAsync(SessionSweeper.NoDeliveries.Instance, _stop.Token).ConfigureAwait(false);
        }
        catch (Exception ex) when (ex is IOException or SocketException or ObjectDisposedException or OperationCanceledException)
        {
            if (!_stop.IsCancellationRequested) log.LogWarning("mqtt enhanced authentication link ended: {Error}", ex.Message);
        }
        finally
        {
            await link.DisposeAsync().ConfigureAwait(false);
        }
    }

    /// <summary>Stops the link's read loop, which then closes the link.</summary>
    public void Dispose()
    {
        _stop.Cancel();
        _stop.Dispose();
        _opening.Dispose();
    }
}
