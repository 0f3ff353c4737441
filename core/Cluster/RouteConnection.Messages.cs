using System.Buffers;
using System.Runtime.CompilerServices;
using NatsBroker.Protocol;
using NatsBroker.Routing;
using NatsBroker.Subscriptions;

namespace NatsBroker.Cluster;

public sealed partial class RouteConnection : IRouteTarget, IFlushTarget
{
    private bool _peerHeaders;

    // The accounts messages arrive in, each with this connection's L1 match cache over its SubList. Read-loop
    // thread only. A linear scan: a route carries few accounts, and a hit costs no allocation.
    private AccountSlot[] _accounts = [];

    private sealed class AccountSlot(byte[] name, Accounts.Account account)
    {
        public readonly byte[] Name = name;
        public readonly Accounts.Account Account = account;
        public readonly SubjectResultCache L1 = new();
    }

    /// <summary>RMSG/HMSG from the peer (route.go processInboundRoutedMsg): into the account, one hop.</summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    void IRouteProtocolHandler.OnMessage(in RouteMessageArgs message, in ReadOnlySequence<byte> payload)
    {
        _conn.CountInbound(payload.Length);
        // Leaf-origin messages (LMSG) and PUB on a route need leaf nodes (stage 1 has none); nats-server would
        // deliver them to its local subscribers too, so do that.
        var slot = SlotFor(message.Account);
        if (slot is null)
        {
            Log.UnknownAccountForMessage(Id, System.Text.Encoding.UTF8.GetString(message.Account));
            return;
        }
        slot.Account.Router.PublishFromRoute(this, message.Subject, message.Reply, message.HeaderSize, payload, message.Queues, slot.L1, _conn.Batch);
    }

    private AccountSlot? SlotFor(ReadOnlySpan<byte> account)
    {
        var slots = _accounts;
        for (int i = 0; i < slots.Length; i++)
        {
            if (slots[i].Name.AsSpan().SequenceEqual(account)) return slots[i];
        }
        var found = _manager.FindAccount(account);
        if (found is null) return null;
        var slot = new AccountSlot(account.ToArray(), found);
        _accounts = [.. slots, slot];
        return slot;
    }

    /// <summary>
    /// A message for this route's peer (client.go msgHeaderForRouteOrLeaf): <c>RMSG acc subject [reply|+ reply
    /// queues|| queues] size</c>, or HMSG with the header size. A peer without header support gets the body only.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveOptimization)]
    bool IRouteTarget.SendRouted(ref RoutedMessage msg, ReadOnlySpan<byte> account, ReadOnlySpan<byte> queues, DeliveryBatch batch)
    {
        if (_pinnedBytes.Length > 0) account = default;
        bool headers = msg.HeaderSize >= 0 && _peerHeaders;
        var body = headers || msg.HeaderSize < 0 ? msg.Payload : msg.Body;
        int headerSize = headers ? msg.HeaderSize : -1;
        int totalSize = (int)body.Length;
        // The subject the peer's subscriptions matched (a redirected delivery is routed on its route subject).
        var subject = msg.RouteSubject;
        int lineLength = RouteProtocolWriter.MessageHeaderLength(ConnectionKind.Route, default, account, subject, msg.Reply, queues, headerSize, totalSize);
        int total = lineLength + totalSize + 2;
        lock (_conn.OutboundLock)
        {
            if (_conn.IsClosing || _conn.IsReleasedLocked) return false;
            if (_conn.TryReserveLocked(total, out var span))
            {
                int o = RouteProtocolWriter.WriteMessageHeader(span, ConnectionKind.Route, default, account, subject, msg.Reply, queues, headerSize, totalSize);
                body.CopyTo(span[o..]);
                o += totalSize;
                span[o] = (byte)'\r';
                span[o + 1] = (byte)'\n';
            }
            else
            {
                byte[] rented = ArrayPool<byte>.Shared.Rent(lineLength);
                try
                {
                    int n = RouteProtocolWriter.WriteMessageHeader(rented, ConnectionKind.Route, default, account, subject, msg.Reply, queues, headerSize, totalSize);
                    _conn.WriteLocked(rented.AsSpan(0, n));
                }
                finally
                {
                    ArrayPool<byte>.Shared.Return(rented);
                }
                _conn.WriteLocked(body);
                _conn.WriteLocked("\r\n"u8);
            }
            if (!_conn.AfterAppendLocked(false, batch)) return false;
            _conn.CountOutboundLocked(totalSize);
        }
        return true;
    }

    void IFlushTarget.Flush(bool inline) => _conn.Flush(inline);
}
