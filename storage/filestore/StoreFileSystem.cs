using Microsoft.Win32.SafeHandles;

namespace NatsBroker.Storage.File;

/// <summary>
/// Every file-system call the file engine makes goes through this interface, so that tests can put a
/// fault-injecting, power-cut-simulating file system under the engine (tests/NatsBroker.Storage.Tests,
/// <c>FaultFileSystem</c>). Every method throws <see cref="IOException"/> (or
/// <see cref="UnauthorizedAccessException"/>) on failure; the engine decides what is fatal.
/// Durability rules the engine relies on (POSIX): data written to a file is durable only after that file's
/// <see cref="IStoreFile.Sync"/>; a create, rename or delete is durable only after
/// <see cref="SyncDirectory"/> of the directory holding the entry.
/// </summary>
internal interface IStoreFileSystem
{
    bool FileExists(string path);
    bool DirectoryExists(string path);
    bool DirectoryHasEntries(string path);
    /// <summary>Creates the directory and its missing parents (not durable until the parent is synced).</summary>
    void CreateDirectory(string path);
    /// <summary>Names (not paths) of the regular files in <paramref name="directory"/>.</summary>
    IReadOnlyList<string> ListFiles(string directory);
    /// <summary>Opens an existing file, or creates (truncating) one when <paramref name="create"/>; reserves <paramref name="preallocate"/> bytes.</summary>
    IStoreFile OpenFile(string path, bool create, long preallocate = 0);
    byte[] ReadAllBytes(string path);
    /// <summary>Atomically renames <paramref name="from"/> to <paramref name="to"/>, replacing it.</summary>
    void Rename(string from, string to);
    void DeleteFile(string path);
    void DeleteDirectory(string path);
    /// <summary>fsync of a directory: makes its creates, renames and deletes durable.</summary>
    void SyncDirectory(string path);
}

/// <summary>An open file: positional reads and writes, truncation, fsync.</summary>
internal interface IStoreFile : IDisposable
{
    long Length { get; }
    int Read(Span<byte> into, long offset);
    void Write(ReadOnlySpan<byte> data, long offset);
    void SetLength(long length);
    /// <summary>fsync: the file's data and size are durable when it returns.</summary>
    void Sync();
}

/// <summary>The real file system (FileStream, RandomAccess, and fsync(2) of directories on Unix).</summary>
internal sealed class OsFileSystem : IStoreFileSystem
{
    public static readonly OsFileSystem Instance = new();

    public bool FileExists(string path) => System.IO.File.Exists(path);
    public bool DirectoryExists(string path) => Directory.Exists(path);
    public bool DirectoryHasEntries(string path) => Directory.Exists(path) && Directory.EnumerateFileSystemEntries(path).Any();
    public void CreateDirectory(string path) => Directory.CreateDirectory(path);

    public IReadOnlyList<string> ListFiles(string directory)
        => [.. Directory.EnumerateFiles(directory).Select(f => Path.GetFileName(f))];

    public IStoreFile OpenFile(string path, bool create, long preallocate = 0)
        => new OsFile(new FileStream(path, new FileStreamOptions
        {
            Mode = create ? FileMode.Create : FileMode.Open,
            Access = FileAccess.ReadWrite,
            Share = FileShare.Read,
            BufferSize = 0,
            // fallocate: a full disk shows up here, when a block is created, never as a failed write later.
            PreallocationSize = create ? preallocate : 0,
        }));

    public byte[] ReadAllBytes(string path) => System.IO.File.ReadAllBytes(path);
    public void Rename(string from, string to) => System.IO.File.Move(from, to, overwrite: true);
    public void DeleteFile(string path) => System.IO.File.Delete(path);
    public void DeleteDirectory(string path) => Directory.Delete(path, recursive: true);

    public void SyncDirectory(string path) => NatsBroker.Contracts.DurableFiles.SyncDirectory(path);

    private sealed class OsFile(FileStream file) : IStoreFile
    {
        // Taken once: FileStream.SafeFileHandle seeks the descriptor to the stream's position on every get (an lseek
        // system call per read and write; the engine's I/O is positional and never uses that position).
        private readonly SafeFileHandle _handle = file.SafeFileHandle;

        public long Length => file.Length;
        public int Read(Span<byte> into, long offset) => RandomAccess.Read(_handle, into, offset);
        public void Write(ReadOnlySpan<byte> data, long offset) => RandomAccess.Write(_handle, data, offset);
        public void SetLength(long length) => file.SetLength(length);
        public void Sync() => file.Flush(flushToDisk: true);
        public void Dispose() => file.Dispose();
    }
}

/// <summary>Writes a small file so that a crash or power cut leaves either the old or the new content, never a torn one.</summary>
internal static class DurableFile
{
    /// <summary>
    /// Writes <paramref name="path"/>.tmp, fsyncs it, renames it over <paramref name="path"/>. When
    /// <paramref name="syncDirectory"/>, fsyncs the directory too, so the new content itself is durable on return;
    /// otherwise the caller syncs the directory later (the old or the new file survives meanwhile, both whole).
    /// </summary>
    public static void Replace(IStoreFileSystem fs, string path, ReadOnlySpan<byte> content, bool syncDirectory)
    {
        var tmp = path + ".tmp";
        WriteSynced(fs, tmp, content);
        fs.Rename(tmp, path);
        if (syncDirectory) fs.SyncDirectory(Path.GetDirectoryName(path)!);
    }

    /// <summary>Creates (or truncates) <paramref name="path"/>, writes <paramref name="content"/> and fsyncs it: the first half of a replace.</summary>
    public static void WriteSynced(IStoreFileSystem fs, string path, ReadOnlySpan<byte> content)
    {
        using var f = fs.OpenFile(path, create: true);
        f.Write(content, 0);
        f.Sync();
    }
}
