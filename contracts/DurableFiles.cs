using System.Runtime.InteropServices;

namespace NatsBroker.Contracts;

/// <summary>
/// Durable directory and small-file operations on the real file system, for the host (stream and consumer metadata)
/// and for engines (the file engine's own file-system layer calls <see cref="SyncDirectory"/>). POSIX rules: data
/// written to a file is durable only after that file's fsync; a create, rename or delete is durable only after an
/// fsync of the directory holding the entry. Every failure throws <see cref="IOException"/>: the caller must not
/// acknowledge what depended on it.
/// </summary>
public static partial class DurableFiles
{
    /// <summary>fsync(2) of a directory, so the entries created, renamed or deleted in it survive a power cut.</summary>
    public static void SyncDirectory(string path)
    {
        // Windows has no directory fsync (NTFS journals its metadata); every Unix has open(2)+fsync(2).
        if (OperatingSystem.IsWindows()) return;
        // O_RDONLY is 0 on every Unix; O_DIRECTORY is not needed (fsync works on any descriptor) and its value
        // differs between architectures, so it is not used.
        int fd = Open(path, 0);
        if (fd < 0) throw new IOException($"cannot open directory '{path}' to fsync it: {Marshal.GetPInvokeErrorMessage(Marshal.GetLastPInvokeError())}");
        try
        {
            if (Fsync(fd) != 0)
                throw new IOException($"fsync of directory '{path}' failed: {Marshal.GetPInvokeErrorMessage(Marshal.GetLastPInvokeError())}");
        }
        finally
        {
            _ = Close(fd);
        }
    }

    /// <summary>
    /// Creates <paramref name="path"/> and its missing ancestors, each made durable in its parent: a directory
    /// entry survives a power cut only after its parent's fsync, and a lost directory loses everything under it.
    /// </summary>
    public static void CreateDirectory(string path)
    {
        var missing = new List<string>();
        for (string? d = Path.GetFullPath(path); d is not null && Path.GetDirectoryName(d) is not null && !Directory.Exists(d); d = Path.GetDirectoryName(d))
            missing.Add(d);
        if (missing.Count == 0) return;
        Directory.CreateDirectory(path);
        foreach (var d in missing) SyncDirectory(Path.GetDirectoryName(d)!);
    }

    /// <summary>
    /// Replaces a small file so that a crash or power cut leaves either the old or the new content, whole: writes
    /// <paramref name="path"/>.tmp, fsyncs it, renames it over <paramref name="path"/>, fsyncs the directory.
    /// </summary>
    public static void Replace(string path, ReadOnlySpan<byte> content)
    {
        string tmp = path + ".tmp";
        using (var f = new FileStream(tmp, FileMode.Create, FileAccess.Write, FileShare.None, bufferSize: 0))
        {
            f.Write(content);
            f.Flush(flushToDisk: true);
        }
        File.Move(tmp, path, overwrite: true);
        SyncDirectory(Path.GetDirectoryName(Path.GetFullPath(path))!);
    }

    [LibraryImport("libc", EntryPoint = "open", StringMarshalling = StringMarshalling.Utf8, SetLastError = true)]
    private static partial int Open(string path, int flags);

    [LibraryImport("libc", EntryPoint = "fsync", SetLastError = true)]
    private static partial int Fsync(int fd);

    [LibraryImport("libc", EntryPoint = "close")]
    private static partial int Close(int fd);
}
