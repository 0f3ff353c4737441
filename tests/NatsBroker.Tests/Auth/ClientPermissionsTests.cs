using System.Text;
using NatsBroker.Auth;
using NatsBroker.Configuration;

namespace NatsBroker.Tests.Auth;

public class ClientPermissionsTests
{
    private static ClientPermissions Perms(
        string[]? pubAllow = null, string[]? pubDeny = null, string[]? subAllow = null, string[]? subDeny = null,
        ResponsePermission? responses = null, TimeProvider? time = null) =>
        ClientPermissions.Create(new Permissions
        {
            Publish = pubAllow is null && pubDeny is null ? null : new SubjectPermission { Allow = pubAllow?.ToList(), Deny = pubDeny?.ToList() },
            Subscribe = subAllow is null && subDeny is null ? null : new SubjectPermission { Allow = subAllow?.ToList(), Deny = subDeny?.ToList() },
            Response = responses,
        }, time)!;

    private static byte[] B(string s) => Encoding.UTF8.GetBytes(s);

    [Fact]
    public void Null_permissions_mean_no_restrictions()
    {
        Assert.Null(ClientPermissions.Create(null));
        Assert.True(ClientPermissions.IsSubscribeAllowed(null, "any.>"u8));
        Assert.False(ClientPermissions.IsSubscribeAllowed(null, "foo"u8, "_sys_"u8)); // reserved queue group
        var p = Perms(subAllow: ["x"]);
        Assert.False(p.HasPublishRules);
        Assert.True(p.CanPublish("anything"u8));
    }

    [Theory]
    [InlineData("foo.bar", true)]
    [InlineData("foo.bar.baz", true)]
    [InlineData("foo", false)]
    [InlineData("x", true)]
    [InlineData("x.y", false)]
    [InlineData("foo.secret", false)]  // deny overrides allow
    [InlineData("foo.secret.more", true)]
    [InlineData("bar", false)]
    [InlineData("foo..bar", false)]    // empty token matches no allow entry
    public void Publish_allow_then_deny(string subject, bool allowed)
    {
        var p = Perms(pubAllow: ["foo.>", "x"], pubDeny: ["foo.secret"]);
        Assert.Equal(allowed, p.CanPublish(B(subject)));
        Assert.Equal(allowed, p.CanPublish(B(subject))); // cached answer is the same
    }

    [Fact]
    public void Publish_deny_only_and_empty_allow()
    {
        var denyOnly = Perms(pubDeny: ["*.secret", "admin.>"]);
        Assert.True(denyOnly.CanPublish("foo"u8));
        Assert.False(denyOnly.CanPublish("a.secret"u8));
        Assert.False(denyOnly.CanPublish("admin.x.y"u8));
        Assert.True(denyOnly.CanPublish("admin"u8));

        var none = Perms(pubAllow: []);
        Assert.True(none.HasPublishRules);
        Assert.False(none.CanPublish("foo"u8));
    }

    [Theory]
    // allow foo.* : literal and same-shape wildcard, and (nats quirk, verified) foo.> whose '>' is one token.
    [InlineData("foo.bar", null, true)]
    [InlineData("foo.*", null, true)]
    [InlineData("foo.>", null, true)]
    [InlineData("foo.bar.baz", null, false)]
    [InlineData("foo", null, false)]
    [InlineData("*.*", null, false)]
    [InlineData(">", null, false)]
    [InlineData("bar.*", null, true)]
    [InlineData("bar.>", null, true)]
    // deny foo.bad literal; *.hid denies foo.hid
    [InlineData("foo.bad", null, false)]
    [InlineData("foo.hid", null, false)]
    // plain allow also allows any queue unless queue entries match
    [InlineData("foo.*", "g", true)]
    // q.* only with queue v1
    [InlineData("q.x", null, false)]
    [InlineData("q.x", "v1", true)]
    [InlineData("q.x", "v2", false)]
    // wildcard queue names: g.* allows g.a, not g.a.b or g
    [InlineData("w.x", "g.a", true)]
    [InlineData("w.x", "g.a.b", false)]
    [InlineData("w.x", "g", false)]
    // both plain and queue entry: plain SUB ok, queue limited to v1
    [InlineData("both", null, true)]
    [InlineData("both", "v1", true)]
    [InlineData("both", "v2", false)]
    public void Subscribe_matrix_matches_nats_server(string subject, string? queue, bool allowed)
    {
        // The same rules were run against nats-server 2.9.10 (see NatsServerDifferentialTests).
        var p = Perms(subAllow: ["foo.*", "bar.>", "q.* v1", "w.* g.*", "both", "both v1"], subDeny: ["foo.bad", "*.hid"]);
        Assert.Equal(allowed, p.CanSubscribe(B(subject), queue is null ? default : B(queue)));
    }

    [Fact]
    public void Queue_scoped_deny_applies_only_when_no_plain_deny_matched()
    {
        // nats-server 2.14.5 canSubscribeInternal: a plain deny wins; a queue-scoped one then refuses that queue only.
        // (2.9 let SUB dq q2 through here: the queue entries overrode the plain one.)
        var p = Perms(subDeny: ["dq", "dq q1"]);
        Assert.False(p.CanSubscribe("dq"u8));
        Assert.False(p.CanSubscribe("dq"u8, "q1"u8));
        Assert.False(p.CanSubscribe("dq"u8, "q2"u8));
        // a queue-only deny does not stop plain subscribers
        var q = Perms(subDeny: ["only q1"]);
        Assert.True(q.CanSubscribe("only"u8));
        Assert.False(q.CanSubscribe("only"u8, "q1"u8));
        Assert.True(q.CanSubscribe("only"u8, "q2"u8));
    }

    [Fact]
    public void Deny_wildcards_against_wildcard_subscriptions()
    {
        var p = Perms(subDeny: ["foo.*"]);
        Assert.False(p.CanSubscribe("foo.bar"u8));
        Assert.False(p.CanSubscribe("foo.*"u8));
        Assert.False(p.CanSubscribe("foo.>"u8)); // '*' pattern matches the literal '>' token
        Assert.True(p.CanSubscribe("foo.bar.baz"u8, default, out bool filter));
        Assert.False(filter);                     // literal
        Assert.True(p.CanSubscribe(">"u8, default, out filter)); // broader: allowed, deliveries filtered instead
        Assert.True(filter);
        Assert.True(p.IsDeliveryDenied("foo.x"u8));
        Assert.False(p.IsDeliveryDenied("foo.x.y"u8));
    }

    [Theory]
    // Issue 38: a deny narrower than the SUB but not inside it token for token (2.9's subset test missed these).
    [InlineData("pub.*.x", null, "pub.secret.x")]
    [InlineData("*.*.x", null, "pub.secret.x")]
    [InlineData("pub.*.*.x", null, "pub.secret.deep.x")]
    [InlineData("pub.>", null, "pub.secret.x")]
    [InlineData(">", null, "pub.secret.y.z")]
    [InlineData("pub.*.x", "g", "pub.secret.x")]
    [InlineData("*.*.x", "g", "pub.secret.x")]
    [InlineData("pub.*.*.x", "g", "pub.secret.deep.x")]
    public void Wildcard_sub_overlapping_a_deny_is_filtered_on_delivery(string sub, string? queue, string denied)
    {
        foreach (var allow in new string[]?[] { null, [">"], [sub], queue is null ? [sub] : [sub + " " + queue] })
        {
            var p = Perms(subAllow: allow, subDeny: ["pub.secret.>"]);
            byte[] q = queue is null ? [] : B(queue);
            Assert.True(p.CanSubscribe(B(sub), q, out bool filter), sub);
            Assert.True(filter, sub);
            Assert.True(p.IsDeliveryDenied(B(denied), q), denied);
            Assert.False(p.IsDeliveryDenied("pub.public.x"u8, q));
            Assert.False(p.IsDeliveryDenied("pub.secret"u8, q)); // pub.secret.> needs a token after secret
        }
    }

    [Fact]
    public void Only_subscriptions_colliding_with_a_deny_are_flagged()
    {
        var p = Perms(subDeny: ["foo.bad", "*.hid"]);
        Assert.True(p.CanSubscribe("bar.>"u8, default, out bool filter)); // collides with *.hid (2.9 did not filter)
        Assert.True(filter);
        Assert.True(p.IsDeliveryDenied("bar.hid"u8));
        Assert.True(p.CanSubscribe("foo.ok"u8, default, out filter));     // literal, not denied: nothing to filter
        Assert.False(filter);
        Assert.True(p.CanSubscribe("baz.*.z"u8, default, out filter));    // collides with nothing
        Assert.False(filter);
        Assert.True(p.CanSubscribe("foo.*"u8, default, out filter));
        Assert.True(filter);
        Assert.True(p.IsDeliveryDenied("foo.bad"u8));
        Assert.True(p.IsDeliveryDenied("foo.hid"u8));
        Assert.False(p.IsDeliveryDenied("foo.ok"u8));
        Assert.True(p.IsDeliveryDenied("foo.bad"u8));    // cached
    }

    [Fact]
    public void Queue_scoped_deny_filters_queue_deliveries_of_that_queue_only()
    {
        // client.go checkDenySub(subject, queue): queue entries deny the queue they name (wildcard queue names too).
        var p = Perms(subDeny: ["s.secret q1", "s.hidden g.*"]);
        Assert.True(p.CanSubscribe("s.*"u8, "q1"u8, out bool filter));
        Assert.True(filter);
        Assert.True(p.IsDeliveryDenied("s.secret"u8, "q1"u8));
        Assert.False(p.IsDeliveryDenied("s.secret"u8, "q2"u8));
        Assert.False(p.IsDeliveryDenied("s.secret"u8));
        Assert.True(p.IsDeliveryDenied("s.hidden"u8, "g.a"u8));
        Assert.False(p.IsDeliveryDenied("s.hidden"u8, "g.a.b"u8));
        Assert.True(p.CanSubscribe("s.*"u8, default, out filter)); // plain SUB still flagged (the subjects collide),
        Assert.True(filter);                                         // but only plain entries deny it
        Assert.True(p.CanSubscribe("s.secret"u8, "q2"u8, out filter)); // queue SUB, literal: flagged as in 2.14.5
        Assert.True(filter);
        Assert.False(p.CanSubscribe("s.secret"u8, "q1"u8));
    }

    [Theory]
    [InlineData("a.b", "a.b", true)]
    [InlineData("a.b", "a.c", false)]
    [InlineData("a.*", "a.b", true)]
    [InlineData("a.*", "b.*", false)]
    [InlineData("pub.secret.>", "pub.*.x", true)]
    [InlineData("pub.secret.>", "*.*.x", true)]
    [InlineData("pub.secret.>", "pub.*", false)]
    [InlineData("a.*", "*.b.>", false)]
    [InlineData("*.b.c", "a.>", true)]
    [InlineData(">", "a.*.c", true)]
    [InlineData("a.>", "a", false)]
    [InlineData("*.b", "a.*", true)]
    [InlineData("a.*.c", "a.b.*.d", false)]
    public void SubjectsCollide_matches_sublist_go(string a, string b, bool collide)
    {
        Assert.Equal(collide, PermissionMatching.SubjectsCollide(B(a), B(b)));
        Assert.Equal(collide, PermissionMatching.SubjectsCollide(B(b), B(a)));
    }

    [Fact]
    public void Publish_cache_is_bounded()
    {
        var p = Perms(pubAllow: ["a.>"]);
        for (int i = 0; i < 10_000; i++) Assert.True(p.CanPublish(B("a." + i)));
        Assert.InRange(p.PublishCacheCount, 1, ClientPermissions.MaxPublishCacheSize);
        Assert.False(p.CanPublish("b"u8));
    }

    [Fact]
    public void Deny_cache_is_bounded()
    {
        var p = Perms(subDeny: ["a.x"]);
        Assert.True(p.CanSubscribe("a.*"u8));
        for (int i = 0; i < 5_000; i++) Assert.False(p.IsDeliveryDenied(B("a." + i)));
        Assert.InRange(p.DenyCacheCount, 1, ClientPermissions.MaxDenyCacheSize);
        Assert.True(p.IsDeliveryDenied("a.x"u8));
    }

    [Fact]
    public void Invalid_entries_are_ignored_like_sublist_insert_errors()
    {
        var p = Perms(pubAllow: ["foo..bar", "a.>.b", "ok"], subAllow: ["x y z", "s"]);
        Assert.False(p.CanPublish("foo..bar"u8));
        Assert.False(p.CanPublish("a.x.b"u8));
        Assert.True(p.CanPublish("ok"u8));
        Assert.False(p.CanSubscribe("x"u8));
        Assert.True(p.CanSubscribe("s"u8));
    }

    [Fact]
    public void Concurrent_use_is_safe()
    {
        var p = Perms(pubAllow: ["a.*"], subDeny: ["a.1"]);
        Assert.True(p.CanSubscribe("a.*"u8));
        Parallel.For(0, 8, t =>
        {
            for (int i = 0; i < 5_000; i++)
            {
                var s = B("a." + (i % 300));
                Assert.True(p.CanPublish(s));
                Assert.Equal(i % 300 == 1, p.IsDeliveryDenied(s));
            }
        });
    }

    [Theory]
    // 2.14 setPermissions: a publish deny entry that is not a valid subject but splits as "subject queue" denies its
    // subject (the queue part is logged as meaningless and dropped); more fields, or an invalid part, skip the entry.
    [InlineData("foo q", "foo", true)]
    [InlineData("foo q", "foo.bar", false)]
    [InlineData("  foo\tq ", "foo", true)]
    [InlineData("foo.* q", "foo.x", true)]
    [InlineData("foo.> q.*", "foo.x.y", true)]
    [InlineData("foo ", "foo", true)]
    [InlineData("foo q r", "foo", false)]
    [InlineData("foo q..r", "foo", false)]
    [InlineData("foo..bar q", "foo..bar", false)]
    [InlineData("foo.>.bar q", "foo.x.bar", false)]
    public void A_publish_deny_with_a_queue_part_denies_its_subject(string entry, string subject, bool denied)
    {
        var p = Perms(pubDeny: [entry]);
        Assert.Equal(!denied, p.CanPublish(B(subject)));
        Assert.True(p.CanPublish("other"u8));
        // A publish allow entry with a queue part stays invalid and skipped (setPermissions: "invalid publish subject").
        Assert.False(Perms(pubAllow: ["foo q"]).CanPublish("foo"u8));
    }
}
