using NatsBroker.Auth;
using NatsBroker.Configuration;

namespace NatsBroker.Tests.Auth;

public class AllocationTests
{
    [Fact]
    public void Cached_CanPublish_allocates_nothing()
    {
        var p = ClientPermissions.Create(new Permissions
        {
            Publish = new SubjectPermission { Allow = ["orders.>", "metrics.*"], Deny = ["orders.secret"] },
        })!;
        byte[] allowedSubject = "orders.eu.new"u8.ToArray();
        byte[] deniedSubject = "orders.secret"u8.ToArray();
        // Warm up: fill the cache and JIT everything on the path.
        for (int i = 0; i < 1000; i++)
        {
            p.CanPublish(allowedSubject);
            p.CanPublish(deniedSubject);
        }

        long before = GC.GetAllocatedBytesForCurrentThread();
        bool a = true, d = false;
        for (int i = 0; i < 100_000; i++)
        {
            a &= p.CanPublish(allowedSubject);
            d |= p.CanPublish(deniedSubject);
        }
        long allocated = GC.GetAllocatedBytesForCurrentThread() - before;

        Assert.True(a);
        Assert.False(d);
        Assert.Equal(0, allocated);
    }

    [Fact]
    public void Unfiltered_delivery_check_allocates_nothing()
    {
        var p = ClientPermissions.Create(new Permissions { Subscribe = new SubjectPermission { Deny = ["a.b"] } })!;
        Assert.True(p.CanSubscribe("a.*"u8));
        byte[] subject = "a.c"u8.ToArray();
        for (int i = 0; i < 1000; i++) p.IsDeliveryDenied(subject);
        long before = GC.GetAllocatedBytesForCurrentThread();
        for (int i = 0; i < 100_000; i++) p.IsDeliveryDenied(subject);
        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
    }
}
