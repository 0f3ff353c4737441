using System.Text;
using NatsBroker.Auth;
using NatsBroker.Configuration;

namespace NatsBroker.Tests.Auth;

public class ResponseTrackerTests
{
    private static byte[] B(string s) => Encoding.UTF8.GetBytes(s);

    [Fact]
    public void Defaults_are_one_response_within_two_minutes()
    {
        var t = new ResponseTracker(new ResponsePermission { MaxMsgs = 0, Expires = TimeSpan.Zero });
        Assert.Equal(1, t.MaxMsgs);
        Assert.Equal(TimeSpan.FromMinutes(2), t.Expires);
    }

    [Fact]
    public void Allows_max_responses_then_forgets()
    {
        var clock = new ManualTimeProvider();
        var t = new ResponseTracker(new ResponsePermission { MaxMsgs = 2, Expires = TimeSpan.FromSeconds(1) }, clock);
        Assert.False(t.TryConsume("_INBOX.a"u8));
        t.OnDelivered("_INBOX.a"u8);
        Assert.True(t.TryConsume("_INBOX.a"u8));
        Assert.True(t.TryConsume("_INBOX.a"u8));
        Assert.False(t.TryConsume("_INBOX.a"u8));
        Assert.Equal(0, t.Count);
        Assert.False(t.TryConsume("_INBOX.a"u8));
    }

    [Fact]
    public void Expires_after_ttl()
    {
        var clock = new ManualTimeProvider();
        var t = new ResponseTracker(new ResponsePermission { MaxMsgs = 5, Expires = TimeSpan.FromSeconds(1) }, clock);
        t.OnDelivered("r.1"u8);
        clock.Advance(TimeSpan.FromMilliseconds(1000));
        Assert.True(t.TryConsume("r.1"u8));  // not strictly older than Expires yet
        clock.Advance(TimeSpan.FromMilliseconds(1));
        Assert.False(t.TryConsume("r.1"u8));
        Assert.Equal(0, t.Count);
    }

    [Fact]
    public void Redelivery_restarts_count_and_clock()
    {
        var clock = new ManualTimeProvider();
        var t = new ResponseTracker(new ResponsePermission { MaxMsgs = 1, Expires = TimeSpan.FromSeconds(1) }, clock);
        t.OnDelivered("r"u8);
        Assert.True(t.TryConsume("r"u8));
        clock.Advance(TimeSpan.FromSeconds(5));
        t.OnDelivered("r"u8);
        Assert.True(t.TryConsume("r"u8));
        Assert.False(t.TryConsume("r"u8));
    }

    [Fact]
    public void Negative_limits_mean_unlimited()
    {
        var clock = new ManualTimeProvider();
        var t = new ResponseTracker(new ResponsePermission { MaxMsgs = -1, Expires = TimeSpan.FromSeconds(-1) }, clock);
        t.OnDelivered("r"u8);
        clock.Advance(TimeSpan.FromDays(3));
        for (int i = 0; i < 100; i++) Assert.True(t.TryConsume("r"u8));
    }

    [Fact]
    public void Prunes_spent_and_expired_and_stays_bounded()
    {
        var clock = new ManualTimeProvider();
        var t = new ResponseTracker(new ResponsePermission { MaxMsgs = 1, Expires = TimeSpan.FromSeconds(1) }, clock, maxEntries: 10_000);
        for (int i = 0; i < 5_000; i++) t.OnDelivered(B("old." + i));
        clock.Advance(TimeSpan.FromSeconds(2));
        for (int i = 0; i < 100; i++) t.OnDelivered(B("new." + i));
        t.Prune();
        Assert.Equal(100, t.Count);
        for (int i = 0; i < 50_000; i++) // all live: the hard bound applies
        {
            clock.Advance(TimeSpan.FromTicks(1));
            t.OnDelivered(B("flood." + i));
        }
        Assert.InRange(t.Count, 1, 10_000);
        Assert.True(t.TryConsume("flood.49999"u8)); // newest kept
        Assert.False(t.TryConsume("flood.0"u8));    // oldest evicted
    }

    [Fact]
    public void Permissions_with_allow_responses_deny_other_publishes()
    {
        // server/auth.go validateResponsePermissions: no publish allow list becomes an empty one (verified:
        // a user with only allow_responses, or with publish deny only, cannot publish elsewhere).
        var clock = new ManualTimeProvider();
        var p = ClientPermissions.Create(new Permissions { Response = new ResponsePermission() }, clock)!;
        Assert.NotNull(p.Responses);
        Assert.False(p.CanPublish("any"u8));
        p.Responses!.OnDelivered("rep.1"u8);
        Assert.True(p.CanPublish("rep.1"u8));
        Assert.False(p.CanPublish("rep.1"u8)); // MaxMsgs 1
        p.Responses.OnDelivered("rep.2"u8);
        clock.Advance(TimeSpan.FromMinutes(2) + TimeSpan.FromTicks(1));
        Assert.False(p.CanPublish("rep.2"u8));

        var denyOnly = ClientPermissions.Create(new Permissions
        {
            Publish = new SubjectPermission { Deny = ["z"] },
            Response = new ResponsePermission { MaxMsgs = 2 },
        }, clock)!;
        Assert.False(denyOnly.CanPublish("any"u8));

        var withAllow = ClientPermissions.Create(new Permissions
        {
            Publish = new SubjectPermission { Allow = ["pub.>"] },
            Response = new ResponsePermission(),
        }, clock)!;
        Assert.True(withAllow.CanPublish("pub.x"u8));
        withAllow.Responses!.OnDelivered("pub.x"u8);
        Assert.True(withAllow.CanPublish("pub.x"u8)); // allowed by rules, the reply is not consumed
        Assert.Equal(1, withAllow.Responses.Count);
    }
}
