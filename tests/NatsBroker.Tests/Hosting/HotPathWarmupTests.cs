using System.Reflection;
using System.Runtime.CompilerServices;
using NatsBroker.Hosting;

namespace NatsBroker.Tests.Hosting;

/// <summary>The warm-up compiles every per-message (AggressiveOptimization) method of the core, and each compiles.</summary>
public sealed class HotPathWarmupTests
{
    [Fact]
    public void Every_aggressively_optimised_method_of_the_core_is_warmed_up()
    {
        const BindingFlags all = BindingFlags.DeclaredOnly | BindingFlags.Instance | BindingFlags.Static | BindingFlags.Public | BindingFlags.NonPublic;
        var warmed = HotPathWarmup.Methods().Concat(HotPathWarmup.JetStreamMethods()).Select(m => m.IsGenericMethod ? m.GetGenericMethodDefinition() : m).ToHashSet();
        var hot = HotPathWarmup.JetStreamHotAssemblies.Prepend(typeof(HotPathWarmup).Assembly).SelectMany(a => a.GetTypes())
            .SelectMany(t => t.GetMethods(all).Cast<MethodBase>().Concat(t.GetConstructors(all)))
            .Where(m => (m.MethodImplementationFlags & MethodImplAttributes.AggressiveOptimization) != 0)
            // The route/leaf parser has no connection in the core yet (issue 46 adds route connections), so there is no
            // handler to instantiate its generic methods with; it joins HotTypes with the route connection.
            .Where(m => m.DeclaringType != typeof(NatsBroker.Protocol.RouteProtocolParser))
            .ToList();
        Assert.NotEmpty(hot);
        var missed = hot.Where(m => m is not MethodInfo info || !warmed.Contains(info)).Select(m => $"{m.DeclaringType}.{m.Name}").ToList();
        Assert.True(missed.Count == 0, "not warmed up (add the declaring type to HotPathWarmup.HotTypes or JetStreamHotTypes): " + string.Join(", ", missed));
    }

    [Fact]
    public void The_JetStream_delivery_path_is_warmed_up_apart_from_the_core_one()
    {
        var core = HotPathWarmup.Methods().Select(m => $"{m.DeclaringType!.Name}.{m.Name}").ToHashSet();
        var js = HotPathWarmup.JetStreamMethods().Select(m => $"{m.DeclaringType!.Name}.{m.Name}").ToHashSet();
        // The consumer's delivery loop, the ack path and the file store's read path: what a consumer runs per message.
        foreach (var name in new[] { "JsConsumer.Deliver", "JsConsumer.Send", "JsConsumer.DrainAcks", "JsStream.OnAck", "AckTokens.TryParse", "IndexedStore.LoadNext", "FileStore.ReadMessage" })
        {
            Assert.Contains(name, js);
            Assert.DoesNotContain(name, core);
        }
    }

    [Fact]
    public void Each_warmed_up_method_compiles()
    {
        var methods = HotPathWarmup.Methods().Concat(HotPathWarmup.JetStreamMethods()).ToList();
        Assert.True(methods.Count >= 30, $"only {methods.Count} methods");
        foreach (var m in methods) RuntimeHelpers.PrepareMethod(m.MethodHandle);
    }
}
