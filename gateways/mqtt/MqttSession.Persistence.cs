using System.Buffers;
using MQTTnet.Packets;
using MQTTnet.Protocol;

namespace NatsBroker.MqttGateway;

/// <summary>State kept in JetStream (sessions, retained messages, QoS 1/2 messages). Not yet implemented.</summary>
internal sealed partial class MqttSession
{
    private Task<bool> RestoreSessionAsync(MqttConnectPacket connect, CancellationToken ct) => Task.FromResult(false);

    private Task AfterConnAckAsync(CancellationToken ct)
    {
        OpenSendWindow();
        return Task.CompletedTask;
    }

    private Task StoreRetainedAsync(MqttPublishPacket p, string subject, CancellationToken ct) => Task.CompletedTask;

    private Task StoreQoSMessageAsync(string subject, byte[] headers, ReadOnlySequence<byte> payload, CancellationToken ct) => Task.CompletedTask;

    private Task SendRetainedAsync(Subscription sub, MqttRetainHandling handling, CancellationToken ct) => Task.CompletedTask;

    private Task OnSubscribedAsync(Subscription sub, CancellationToken ct) => Task.CompletedTask;

    private Task OnUnsubscribedAsync(Subscription sub, CancellationToken ct) => Task.CompletedTask;

    private ValueTask<bool> DeliverFromStreamAsync(NatsMessage m) => ValueTask.FromResult(false);

    private static bool HasDurableConsumer(Subscription sub) => false;

    private void AckStreamMessage(string ack) { }
}
