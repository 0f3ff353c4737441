using System.Runtime.InteropServices;

namespace NatsBroker.Transport.Runtime;

/// <summary>
/// Registers a handler for a POSIX signal; SIGHUP is handled even when the process inherited it ignored, as a Go
/// program's <c>signal.Notify</c> does.
/// <para>
/// Why: <c>nohup</c> starts a program with SIGHUP ignored. nats-server, run as <c>nohup nats-server -c f.conf &amp;</c>,
/// still reloads on <c>kill -HUP</c> (observed with 2.9.10); .NET's <see cref="PosixSignalRegistration"/> keeps an
/// inherited SIG_IGN, so our broker ignored the reload (and a test run under nohup failed every reload test).
/// </para>
/// <para>
/// Not SIGINT or SIGQUIT (a script's background job inherits them ignored): the runtime decides at start-up whether it
/// handles those, and un-ignoring them afterwards left their default action, an immediate exit without the drain
/// (observed: no handler was installed). They stay ignored, as the process inherited them.
/// </para>
/// </summary>
public static partial class Signals
{
    private const nint SigIgn = 1;
    private const nint SigDfl = 0;

    /// <summary>
    /// <see cref="PosixSignalRegistration.Create"/>; for SIGHUP, an inherited SIG_IGN is first turned back into the
    /// default disposition so that the runtime installs its handler.
    /// </summary>
    public static PosixSignalRegistration Register(PosixSignal signal, Action<PosixSignalContext> handler)
    {
        UnignoreInherited(signal);
        return PosixSignalRegistration.Create(signal, handler);
    }

    private static void UnignoreInherited(PosixSignal signal)
    {
        if (signal != PosixSignal.SIGHUP || (!OperatingSystem.IsLinux() && !OperatingSystem.IsMacOS())) return;
        const int sighup = 1; // the same number on Linux and Darwin
        // struct sigaction starts with the handler (sa_handler / __sigaction_handler) on glibc, musl and Darwin; the
        // buffer is larger than the struct on each. Reading it does not change the disposition.
        Span<byte> old = stackalloc byte[256];
        if (SigAction(sighup, IntPtr.Zero, ref MemoryMarshal.GetReference(old)) != 0) return;
        if (MemoryMarshal.Read<nint>(old) != SigIgn) return;
        // Only an ignored signal is changed, so no handler the runtime installed is replaced. Between this and the
        // registration the default action applies, as it does for any signal before a program registers for it.
        _ = Signal(sighup, SigDfl);
    }

    [LibraryImport("libc", EntryPoint = "sigaction")]
    private static partial int SigAction(int signo, IntPtr act, ref byte oldact);

    [LibraryImport("libc", EntryPoint = "signal")]
    private static partial nint Signal(int signo, nint handler);
}
