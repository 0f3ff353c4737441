using System.Runtime.InteropServices;

namespace NatsBroker.Storage.File;

/// <summary>
/// fsync of a directory, so that a created, renamed or deleted block file survives a power loss (the file's
/// own fsync does not cover its directory entry). Linux only; elsewhere a no-op.
/// </summary>
internal static partial class DirectorySync
{
    private const int O_RDONLY = 0;
    private const int O_DIRECTORY = 0x10000;

    public static void Sync(string directory)
    {
        if (!OperatingSystem.IsLinux()) return;
        int fd = Open(directory, O_RDONLY | O_DIRECTORY);
        if (fd < 0) return;
        _ = Fsync(fd);
        _ = Close(fd);
    }

    [LibraryImport("libc", EntryPoint = "open", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static partial int Open(string path, int flags);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int Fsync(int fd);

    [LibraryImport("libc", EntryPoint = "close")]
    private static partial int Close(int fd);
}
