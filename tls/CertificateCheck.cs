using System.Security.Cryptography;
using NatsBroker.Configuration;

namespace NatsBroker.Tls;

/// <summary>
/// A gateway's <c>-t</c> check of a <c>tls {}</c> block's files (gateways/link GatewayProgram; the core runs it before
/// it binds anything): reads them as the start does (<see cref="CertificateSet"/>) and refuses as nats-server does,
/// at the block's key (server/opts.go parseTLS, GenTLSConfig: "error parsing X509 certificate/key pair: open FILE:
/// no such file or directory", Go's os.Open error).
/// </summary>
public static class CertificateCheck
{
    public static void Run(TlsOptions options, SourcePosition? at)
    {
        ArgumentNullException.ThrowIfNull(options);
        try
        {
            _ = new CertificateSet(options);
        }
        catch (FileNotFoundException e)
        {
            throw new ConfigException(at, $"error parsing X509 certificate/key pair: open {e.FileName}: no such file or directory");
        }
        catch (DirectoryNotFoundException)
        {
            throw new ConfigException(at, $"error parsing X509 certificate/key pair: open {Missing(options)}: no such file or directory");
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or CryptographicException)
        {
            throw new ConfigException(at, $"error parsing X509 certificate/key pair: {e.Message}");
        }
    }

    private static string Missing(TlsOptions o) =>
        new[] { o.CaFile ?? "", o.CertFile, o.KeyFile }.FirstOrDefault(f => f.Length > 0 && !File.Exists(f)) ?? o.CertFile;

    /// <summary>Where a key sits in the file (<c>tls</c>, or <c>websocket</c> then <c>tls</c>), for the error's position.</summary>
    public static SourcePosition? KeyPosition(ConfigTree tree, params string[] path)
    {
        ArgumentNullException.ThrowIfNull(tree);
        ArgumentNullException.ThrowIfNull(path);
        ConfigMap? map = tree.Root;
        SourcePosition? at = null;
        foreach (var key in path)
        {
            var entry = map?.LastOrDefault(e => e.Key.Equals(key, StringComparison.OrdinalIgnoreCase));
            if (entry is null) return at;
            at = entry.KeyPosition;
            map = entry.Value.Kind == ConfigValueKind.Map ? entry.Value.AsMap() : null;
        }
        return at;
    }
}
