using System.Runtime.CompilerServices;
using System.Runtime.InteropServices;
using NatsBroker.Configuration;

namespace NatsBroker.Hosting;

/// <summary>
/// The core's executable is a Native AOT image (Directory.Build.targets), which cannot load assemblies at run time.
/// A configuration naming third-party storage engines (<c>jetstream { store_engine_path }</c>, storage/README.md)
/// is therefore served by the managed build that sits next to it (<c>NatsBroker.dll</c>, the same code): the native
/// process becomes <c>dotnet NatsBroker.dll</c> with execve(2), so the process id (systemd's main PID, the pid file),
/// the arguments, the environment and the open standard streams all stay the same.
/// </summary>
internal static partial class ManagedHandover
{
    /// <summary>Set in the managed build's environment by the hand-over: it never hands over again.</summary>
    private const string HandedOverVariable = "NATSBROKER_HANDED_OVER";

    /// <summary>True in the native image when the configuration names engine assemblies.</summary>
    public static bool IsNeeded(ServerOptions options) =>
        !RuntimeFeature.IsDynamicCodeSupported && options.StorageEnginePaths.Count > 0
        && Environment.GetEnvironmentVariable(HandedOverVariable) is null;

    /// <summary>Replaces this process with the managed build; returns only on failure, with the reason.</summary>
    public static string Exec(string[] args)
    {
        var dll = Path.Combine(AppContext.BaseDirectory, "NatsBroker.dll");
        if (!File.Exists(dll))
            return $"store_engine_path needs the managed build of the server (engine assemblies cannot be loaded by the native executable), and {dll} does not exist";
        var host = DotnetHost();
        if (host is null)
            return "store_engine_path needs the managed build of the server (engine assemblies cannot be loaded by the native executable), and no dotnet host was found (DOTNET_HOST_PATH, DOTNET_ROOT, PATH)";
        Console.Out.Flush();
        Console.Error.Flush();
        // .NET keeps its own copy of the environment on Unix (the process's environ is not updated by
        // Environment.SetEnvironmentVariable), so the new image gets an explicit one: this process's, plus the marker.
        var environment = Environment.GetEnvironmentVariables();
        environment[HandedOverVariable] = "1";
        var argv = new IntPtr[args.Length + 3];
        var envp = new IntPtr[environment.Count + 1];
        try
        {
            argv[0] = Marshal.StringToCoTaskMemUTF8(host);
            argv[1] = Marshal.StringToCoTaskMemUTF8(dll);
            for (int i = 0; i < args.Length; i++) argv[i + 2] = Marshal.StringToCoTaskMemUTF8(args[i]);
            int e = 0;
            foreach (System.Collections.DictionaryEntry entry in environment)
                envp[e++] = Marshal.StringToCoTaskMemUTF8($"{entry.Key}={entry.Value}");
            execve(host, argv, envp);
            return $"store_engine_path: cannot start the managed build ({host} {dll}): errno {Marshal.GetLastPInvokeError()}";
        }
        finally
        {
            foreach (var p in argv) if (p != IntPtr.Zero) Marshal.FreeCoTaskMem(p);
            foreach (var p in envp) if (p != IntPtr.Zero) Marshal.FreeCoTaskMem(p);
        }
    }

    private static string? DotnetHost()
    {
        if (Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") is { Length: > 0 } hostPath && File.Exists(hostPath)) return hostPath;
        if (Environment.GetEnvironmentVariable("DOTNET_ROOT") is { Length: > 0 } root && File.Exists(Path.Combine(root, "dotnet")))
            return Path.Combine(root, "dotnet");
        foreach (var dir in (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':', StringSplitOptions.RemoveEmptyEntries))
        {
            var candidate = Path.Combine(dir, "dotnet");
            if (File.Exists(candidate)) return candidate;
        }
        return File.Exists("/usr/share/dotnet/dotnet") ? "/usr/share/dotnet/dotnet" : null;
    }

    [LibraryImport("libc", SetLastError = true, StringMarshalling = StringMarshalling.Utf8)]
    private static partial int execve(string path, IntPtr[] argv, IntPtr[] envp);
}
