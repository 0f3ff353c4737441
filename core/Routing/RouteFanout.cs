namespace NatsBroker.Routing;

/// <summary>
/// The routes one publish goes to, collected while its match result is walked: each route once, with the queue
/// groups whose member was picked there (client.go processMsgResults <c>c.rrTracking</c>/<c>rt.qs</c>). Per thread
/// and nesting depth, reused: a publish allocates nothing (a route or queue list larger than any seen before grows
/// the scratch once).
/// </summary>
internal sealed class RouteFanout
{
    [ThreadStatic] private static RouteFanout?[]? t_levels;

    private IRouteTarget?[] _targets = new IRouteTarget?[4];
    private byte[][] _queues = [new byte[64], new byte[64], new byte[64], new byte[64]];
    private int[] _queueLengths = new int[4];
    private int _count;

    /// <summary>The empty fan-out of nesting level <paramref name="depth"/> (1-based) on this thread.</summary>
    public static RouteFanout For(int depth)
    {
        var levels = t_levels ??= new RouteFanout?[Router.MaxNesting + 1];
        var f = levels[depth] ??= new RouteFanout();
        f._count = 0;
        return f;
    }

    public int Count => _count;

    /// <summary>The message goes to <paramref name="target"/> (a plain remote subscription matched).</summary>
    public void Add(IRouteTarget target) => IndexOf(target);

    /// <summary>The member of <paramref name="queue"/> picked is on <paramref name="target"/>'s node.</summary>
    public void AddQueue(IRouteTarget target, ReadOnlySpan<byte> queue)
    {
        int i = IndexOf(target);
        int len = _queueLengths[i];
        int need = len + (len > 0 ? 1 : 0) + queue.Length;
        if (need > _queues[i].Length) Array.Resize(ref _queues[i], Math.Max(need, _queues[i].Length * 2));
        var buf = _queues[i];
        if (len > 0) buf[len++] = (byte)' ';
        queue.CopyTo(buf.AsSpan(len));
        _queueLengths[i] = len + queue.Length;
    }

    /// <summary>Sends the message once to every collected route and forgets them.</summary>
    public void Send(ref RoutedMessage msg, ReadOnlySpan<byte> account, DeliveryBatch batch)
    {
        for (int i = 0; i < _count; i++)
        {
            var target = _targets[i]!;
            _targets[i] = null;
            if (target.SendRouted(ref msg, account, _queues[i].AsSpan(0, _queueLengths[i]), batch)) batch.Add((IFlushTarget)target);
        }
        _count = 0;
    }

    private int IndexOf(IRouteTarget target)
    {
        for (int i = 0; i < _count; i++)
        {
            if (ReferenceEquals(_targets[i], target)) return i;
        }
        if (_count == _targets.Length)
        {
            int n = _count * 2;
            Array.Resize(ref _targets, n);
            Array.Resize(ref _queueLengths, n);
            var queues = _queues;
            Array.Resize(ref queues, n);
            for (int j = _count; j < n; j++) queues[j] = new byte[64];
            _queues = queues;
        }
        _targets[_count] = target;
        _queueLengths[_count] = 0;
        return _count++;
    }
}
