namespace NatsBroker.Subscriptions;

public sealed partial class SubList
{
    /// <summary>
    /// Scratch space for computing one match on a cache miss. One per thread (matches run concurrently under the
    /// read lock) and reused, so the only allocations of a miss are the final result arrays.
    /// </summary>
    private sealed class ResultBuilder
    {
        [ThreadStatic]
        private static ResultBuilder? t_instance;

        private readonly List<Subscription> _plain = [];

        // Group lists are kept across matches and reused; only the first _groupCount are live.
        private readonly List<List<Subscription>> _groups = [];
        private int _groupCount;

        public static ResultBuilder ForCurrentThread() => t_instance ??= new ResultBuilder();

        public void AddNode(Node node)
        {
            foreach (var sub in node.Plain) _plain.Add(sub);
            if (node.Queues is not { Count: > 0 } queues) return;
            foreach (var (name, members) in queues)
            {
                var group = GroupFor(name);
                foreach (var sub in members) group.Add(sub);
            }
        }

        /// <summary>
        /// Queue members of the same group can sit on different nodes ("foo.*" and "foo.bar" in group q); they must
        /// land in one group so the group receives the message once. Linear search: groups per subject are few.
        /// </summary>
        private List<Subscription> GroupFor(byte[] name)
        {
            for (int i = 0; i < _groupCount; i++)
            {
                var group = _groups[i];
                if (group[0].Queue.AsSpan().SequenceEqual(name)) return group;
            }
            if (_groupCount == _groups.Count) _groups.Add([]);
            return _groups[_groupCount++];
        }

        /// <summary>Builds the immutable result and clears the scratch state (so it does not pin subscriptions).</summary>
        public SubListResult Build()
        {
            if (_plain.Count == 0 && _groupCount == 0) return SubListResult.Empty;
            Subscription[] plain = _plain.Count == 0 ? [] : [.. _plain];
            var queues = _groupCount == 0 ? [] : new Subscription[_groupCount][];
            for (int i = 0; i < _groupCount; i++)
            {
                queues[i] = [.. _groups[i]];
                _groups[i].Clear();
            }
            _plain.Clear();
            _groupCount = 0;
            return new SubListResult(plain, queues);
        }
    }
}
