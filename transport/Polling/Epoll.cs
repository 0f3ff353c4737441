using System.Runtime.InteropServices;

namespace NatsBroker.Transport.Polling;

/// <summary>
/// The few Linux calls <see cref="LinkPoller"/> and <see cref="LinkSocketStream"/> need (epoll(7), recv(2), send(2)).
/// <c>struct epoll_event</c> is packed on x86-64 (12 bytes: events at 0, data at 4) and naturally aligned elsewhere
/// (16 bytes: data at 8), so events are read and written through these offsets rather than one struct.
/// </summary>
internal static unsafe partial class Epoll
{
    public const uint In = 0x001, Out = 0x004, Err = 0x008, Hup = 0x010, RdHup = 0x2000, EdgeTriggered = 1u << 31;
    public const int CtlAdd = 1, CtlDel = 2, CtlMod = 3;
    public const int CloExec = 0x80000;
    public const int EAGAIN = 11, EINTR = 4;
    public const int MsgPeek = 0x02, MsgDontWait = 0x40, MsgNoSignal = 0x4000;

    public static readonly int EventSize = RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 12 : 16;
    private static readonly int DataOffset = RuntimeInformation.ProcessArchitecture == Architecture.X64 ? 4 : 8;

    public static uint EventsAt(byte* events, int i) => *(uint*)(events + (i * EventSize));
    public static ulong DataAt(byte* events, int i) => *(ulong*)(events + (i * EventSize) + DataOffset);

    /// <summary>epoll_ctl with one event; returns errno (0 on success).</summary>
    public static int Control(int epfd, int op, int fd, uint events, ulong data)
    {
        byte* ev = stackalloc byte[16];
        *(uint*)ev = events;
        *(ulong*)(ev + DataOffset) = data;
        return Ctl(epfd, op, fd, ev) == 0 ? 0 : Marshal.GetLastPInvokeError();
    }

    [LibraryImport("libc", EntryPoint = "epoll_create1", SetLastError = true)]
    public static partial int Create(int flags);

    [LibraryImport("libc", EntryPoint = "epoll_ctl", SetLastError = true)]
    private static partial int Ctl(int epfd, int op, int fd, byte* ev);

    [LibraryImport("libc", EntryPoint = "epoll_wait", SetLastError = true)]
    public static partial int Wait(int epfd, byte* events, int maxEvents, int timeoutMs);

    [LibraryImport("libc", EntryPoint = "recv", SetLastError = true)]
    public static partial nint Receive(nint fd, byte* buffer, nuint length, int flags);

    [LibraryImport("libc", EntryPoint = "send", SetLastError = true)]
    public static partial nint Send(nint fd, byte* buffer, nuint length, int flags);
}
