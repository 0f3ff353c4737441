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

        /// <summary>
        /// The result last built by <see cref="BuildOneShot"/> on this thread. It holds at most one result's
        /// subscriptions past their removal, until this thread's next one-shot match replaces it.
        /// </summary>
        private SubListResult? _lastOneShot;

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

        /// <summary>
        /// <see cref="Build"/> for a subject no cache keeps: when the walk found exactly the subscriptions of the
        /// previous one-shot result (in the same order), that immutable result is returned again instead of a copy.
        /// The same subscriptions make the same result whatever the generation, so reuse cannot be stale.
        /// </summary>
        public SubListResult BuildOneShot()
        {
            if (_lastOneShot is { } last && Holds(last))
            {
                Reset();
                return last;
            }
            var result = Build();
            _lastOneShot = result.IsEmpty ? null : result;
            return result;
        }

        private bool Holds(SubListResult r)
        {
            if (r.Plain.Length != _plain.Count || r.Queues.Length != _groupCount) return false;
            for (int i = 0; i < _plain.Count; i++)
            {
                if (!ReferenceEquals(r.Plain[i], _plain[i])) return false;
            }
            for (int g = 0; g < _groupCount; g++)
            {
                var members = r.Queues[g];
                var group = _groups[g];
                if (members.Length != group.Count) return false;
                for (int i = 0; i < group.Count; i++)
                {
                    if (!ReferenceEquals(members[i], group[i])) return false;
                }
            }
            return true;
        }

        private void Reset()
        {
            for (int i = 0; i < _groupCount; i++) _groups[i].Clear();
            _plain.Clear();
            _groupCount = 0;
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
