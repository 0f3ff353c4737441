namespace NatsBroker.Subscriptions;

public sealed partial class SubList
{
    /// <summary>
    /// One level of the trie: the distinct tokens at one position. Literal tokens live in a dictionary keyed by
    /// token bytes (probed with a span, so matching never allocates); '*' and '>' get dedicated slots because every
    /// match has to visit them anyway. Only touched under the SubList's lock (read lock for walks, write lock for
    /// mutation).
    /// </summary>
    private sealed class Level
    {
        private readonly Dictionary<byte[], Node> _literals = new(ByteArrayComparer.Instance);
        private readonly Dictionary<byte[], Node>.AlternateLookup<ReadOnlySpan<byte>> _bySpan;

        public Level() => _bySpan = _literals.GetAlternateLookup<ReadOnlySpan<byte>>();

        /// <summary>Node for the '*' token at this position.</summary>
        public Node? Partial;

        /// <summary>Node for the '>' token at this position (always a leaf: '>' must be the last token).</summary>
        public Node? Full;

        public bool IsEmpty => _literals.Count == 0 && Partial is null && Full is null;

        public Dictionary<byte[], Node>.ValueCollection Literals => _literals.Values;

        public Node? Find(ReadOnlySpan<byte> token) => _bySpan.TryGetValue(token, out var node) ? node : null;

        /// <summary>Node for a token of a SUB subject (wildcards go to their slots), created when missing.</summary>
        public Node GetOrAdd(ReadOnlySpan<byte> token)
        {
            if (IsPartialToken(token)) return Partial ??= new Node();
            if (IsFullToken(token)) return Full ??= new Node();
            if (!_bySpan.TryGetValue(token, out var node))
            {
                node = new Node();
                _bySpan[token] = node;
            }
            return node;
        }

        /// <summary>Node for a token of a SUB subject, or null; used by removal.</summary>
        public Node? Get(ReadOnlySpan<byte> token)
        {
            if (IsPartialToken(token)) return Partial;
            if (IsFullToken(token)) return Full;
            return Find(token);
        }

        public void Prune(ReadOnlySpan<byte> token)
        {
            if (IsPartialToken(token)) Partial = null;
            else if (IsFullToken(token)) Full = null;
            else _bySpan.Remove(token);
        }
    }

    /// <summary>
    /// A trie node: the subscriptions whose subject ends at this token, plus the next level for longer subjects.
    /// Sets (not lists) so removing one of many subs on the same subject is O(1); Subscription has reference
    /// equality, so two SUBs with the same subject are distinct members.
    /// </summary>
    private sealed class Node
    {
        public Level? Next;

        public readonly HashSet<Subscription> Plain = [];

        /// <summary>Queue group name to members; created on the first queue sub since most nodes have none.</summary>
        public Dictionary<byte[], HashSet<Subscription>>? Queues;

        public bool HasSubscriptions => Plain.Count > 0 || Queues is { Count: > 0 };

        public bool IsEmpty => !HasSubscriptions && Next is null;

        public bool Add(Subscription sub)
        {
            if (sub.Queue is null) return Plain.Add(sub);
            Queues ??= new Dictionary<byte[], HashSet<Subscription>>(ByteArrayComparer.Instance);
            if (!Queues.TryGetValue(sub.Queue, out var members))
            {
                members = [];
                Queues[sub.Queue] = members;
            }
            return members.Add(sub);
        }

        public bool Remove(Subscription sub)
        {
            if (sub.Queue is null) return Plain.Remove(sub);
            if (Queues is null || !Queues.TryGetValue(sub.Queue, out var members) || !members.Remove(sub)) return false;
            if (members.Count == 0) Queues.Remove(sub.Queue);
            return true;
        }
    }

    private static bool IsPartialToken(ReadOnlySpan<byte> token) => token.Length == 1 && token[0] == (byte)'*';

    private static bool IsFullToken(ReadOnlySpan<byte> token) => token.Length == 1 && token[0] == (byte)'>';
}
