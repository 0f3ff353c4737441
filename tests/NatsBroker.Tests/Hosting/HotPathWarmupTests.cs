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
        var warmed = HotPathWarmup.Methods().Select(m => m.IsGenericMethod ? m.GetGenericMethodDefinition() : m).ToHashSet();
        var hot = typeof(HotPathWarmup).Assembly.GetTypes()
            .SelectMany(t => t.GetMethods(all).Cast<MethodBase>().Concat(t.GetConstructors(all)))
            .Where(m => (m.MethodImplementationFlags & MethodImplAttributes.AggressiveOptimization) != 0)
            .ToList();
        Assert.NotEmpty(hot);
        var missed = hot.Where(m => m is not MethodInfo info || !warmed.Contains(info)).Select(m => $"{m.DeclaringType}.{m.Name}").ToList();
        Assert.True(missed.Count == 0, "not warmed up (add the declaring type to HotPathWarmup.HotTypes): " + string.Join(", ", missed));
    }

    [Fact]
    public void Each_warmed_up_method_compiles()
    {
        var methods = HotPathWarmup.Methods().ToList();
        Assert.True(methods.Count >= 30, $"only {methods.Count} methods");
        foreach (var m in methods) RuntimeHelpers.PrepareMethod(m.MethodHandle);
    }
}
