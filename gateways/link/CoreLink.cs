using System.Buffers;
using System.Net.Sockets;
using System.Text;
using System.Text.Json;
using System.Text.Json.Nodes;
using NatsBroker.Contracts.Gateways;
using NatsBroker.Transport.Polling;
using NatsBroker.Transport.Text;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// One end user's connection to the core over its Unix socket. One link per end user (not multiplexed): the
/// core then keeps each user's own read loop, auth, permissions, slow-consumer handling and /connz entry with no
/// demultiplexing layer, a slow user's backpressure stays on that user's socket, and it is the shape of nats-server's
/// own trusted proxies (ADR-55). The cost is one Unix socket per user (gateways/README.md has the figures).
/// Handshake: read the core's INFO (its nonce), let the gateway show the user an INFO of its own, then pass on the
/// user's CONNECT with <c>proxy_sig</c> and <c>proxy_client</c> added.
/// </summary>
public sealed class CoreLink : IAsyncDisposable
{
    /// <summary>Longest INFO we accept from the core.</summary>
    private const int MaxInfoLine = 64 * 1024;

    private readonly Socket _socket;

    private CoreLink(Socket socket, Stream stream, byte[] infoJson, string? nonce, byte[] leftover)
    {
        _socket = socket;
        Stream = stream;
        _infoJson = infoJson;
        Leftover = leftover;
        Nonce = nonce;
    }

    /// <summary>
    /// The link: polled by <see cref="LinkPoller"/> (registered for input only), or with
    /// <c>NATSBROKER_LINK_POLLING=0</c> a NetworkStream on the runtime's socket engine.
    /// </summary>
    public Stream Stream { get; }

    /// <summary>
    /// Cancelled when the core hangs up this link (it closed the user: a slow consumer, an -ERR and close, shutdown),
    /// even while bytes it sent before are still unread; <see cref="CoreHangupWatch"/> uses it. Never cancelled with
    /// <c>NATSBROKER_LINK_POLLING=0</c> (the runtime's socket engine reports no hang-up to a socket nobody reads).
    /// </summary>
    public CancellationToken Closed => Stream is LinkSocketStream polled ? polled.PeerClosed : CancellationToken.None;
    // The INFO's JSON, parsed into Info only when a session asks (the MQTT gateway never does: it needs the nonce
    // alone). A parsed tree is about 2 KiB per connection, garbage or, kept, held for the link's lifetime (heap dumps
    // of 8,000 idle MQTT sessions).
    private byte[]? _infoJson;
    private JsonObject? _info;

    /// <summary>The core's INFO for this connection, until <see cref="ReleaseInfo"/>.</summary>
    public JsonObject Info => _info ??= JsonNode.Parse(_infoJson ?? throw new InvalidOperationException("the core's INFO was released after the handshake")) as JsonObject
        ?? throw new IOException("the core's INFO is not a JSON object");

    /// <summary>Drops the INFO once the session's handshake no longer needs it.</summary>
    public void ReleaseInfo()
    {
        _info = null;
        _infoJson = null;
    }
    /// <summary>What the core sent after its INFO line before we looked (relayed to the user after the gateway's INFO).</summary>
    public byte[] Leftover { get; }
    /// <summary>The nonce to sign; null when the core trusts no proxies (then it ignores proxy fields).</summary>
    public string? Nonce { get; }

    /// <summary>Connects to the core and reads its INFO.</summary>
    public static async Task<CoreLink> ConnectAsync(string socketPath, CancellationToken ct)
    {
        var socket = new Socket(AddressFamily.Unix, SocketType.Stream, ProtocolType.Unspecified);
        Stream? stream = null;
        try
        {
            if (LinkPoller.Enabled)
            {
                // A synchronous connect: ConnectAsync would register the socket with the runtime's socket engine
                // (LinkSocketStream polls it itself). A local Unix socket connects at once unless the core's accept
                // backlog is full, when this waits for room as the asynchronous connect did.
                socket.Connect(new UnixDomainSocketEndPoint(socketPath));
                stream = new LinkSocketStream(socket);
            }
            else
            {
                await socket.ConnectAsync(new UnixDomainSocketEndPoint(socketPath), ct).ConfigureAwait(false);
                stream = new NetworkStream(socket, ownsSocket: true);
            }
            // Pooled: one buffer per connect would be 4 KiB of garbage per session in a connect storm.
            var buffer = ArrayPool<byte>.Shared.Rent(4096);
            try
            {
                int filled = 0;
                while (true)
                {
                    int eol = buffer.AsSpan(0, filled).IndexOf("\r\n"u8);
                    if (eol >= 0)
                    {
                        var line = buffer.AsSpan(0, eol);
                        if (!line.StartsWith("INFO "u8)) throw new IOException("the core did not start with INFO");
                        var json = line[5..];
                        var link = new CoreLink(socket, stream, json.ToArray(), ReadNonce(json), buffer.AsSpan(eol + 2, filled - eol - 2).ToArray());
                        // The read above may have resumed on the poller's thread: the session's handshake work goes on
                        // on the thread pool.
                        await Task.Yield();
                        return link;
                    }
                    if (filled == buffer.Length)
                    {
                        if (buffer.Length >= MaxInfoLine) throw new IOException("the core's INFO is too long");
                        var bigger = ArrayPool<byte>.Shared.Rent(buffer.Length * 2);
                        buffer.AsSpan(0, filled).CopyTo(bigger);
                        ArrayPool<byte>.Shared.Return(buffer);
                        buffer = bigger;
                    }
                    int n = await stream.ReadAsync(buffer.AsMemory(filled), ct).ConfigureAwait(false);
                    if (n == 0) throw new IOException("the core closed the link before INFO");
                    filled += n;
                }
            }
            finally
            {
                ArrayPool<byte>.Shared.Return(buffer);
            }
        }
        catch
        {
            if (stream is not null) await stream.DisposeAsync().ConfigureAwait(false);
            else socket.Dispose();
            throw;
        }
    }

    /// <summary>The top-level "nonce" of the INFO's JSON, or null; throws <see cref="IOException"/> when the INFO is not a JSON object.</summary>
    private static string? ReadNonce(ReadOnlySpan<byte> json)
    {
        try
        {
            var reader = new Utf8JsonReader(json);
            if (!reader.Read() || reader.TokenType != JsonTokenType.StartObject) throw new IOException("the core's INFO is not a JSON object");
            string? nonce = null;
            while (reader.Read() && reader.TokenType == JsonTokenType.PropertyName)
            {
                bool isNonce = reader.ValueTextEquals("nonce"u8);
                if (!reader.Read()) break;
                if (isNonce && reader.TokenType == JsonTokenType.String) nonce = reader.GetString();
                else reader.Skip();
            }
            return nonce;
        }
        catch (JsonException ex)
        {
            throw new IOException("the core's INFO is not valid JSON: " + ex.Message, ex);
        }
    }

    /// <summary>An INFO line as the core writes it: <c>INFO {json}\r\n</c>.</summary>
    public static byte[] FormatInfo(JsonObject info)
    {
        ArgumentNullException.ThrowIfNull(info);
        return Encoding.UTF8.GetBytes("INFO " + info.ToJsonString() + "\r\n");
    }

    /// <summary>
    /// The user's CONNECT line (without CRLF) with the proxy fields added; any the user sent are replaced. Returns
    /// null when the line is not a CONNECT with a JSON object (the caller then passes the bytes on unchanged and the
    /// core answers them as it answers anyone).
    /// </summary>
    public static byte[]? RewriteConnect(ReadOnlySpan<byte> line, ProxySigner signer, string? nonce, ProxiedClient client)
    {
        ArgumentNullException.ThrowIfNull(signer);
        if (nonce is null || !IsConnect(line)) return null;
        JsonObject? obj;
        try
        {
            // Invalid UTF-8 read as Go reads it (U+FFFD), as the core will read the line (GoUtf8).
            obj = JsonNode.Parse(GoUtf8.RepairCopy(line[8..].Trim(" \t"u8))) as JsonObject;
        }
        catch (JsonException)
        {
            return null;
        }
        catch (ArgumentException)
        {
            return null; // duplicate keys
        }
        if (obj is null) return null;
        obj[ProxyConnectFields.Signature] = signer.SignNonce(nonce);
        obj[ProxyConnectFields.Client] = JsonSerializer.SerializeToNode(client, GatewayJsonContext.Default.ProxiedClient);
        return Encoding.UTF8.GetBytes("CONNECT " + obj.ToJsonString() + "\r\n");
    }

    /// <summary>CONNECT (any case) followed by a space or tab, as the core's parser accepts it.</summary>
    public static bool IsConnect(ReadOnlySpan<byte> line) =>
        line.Length > 8 && System.Text.Ascii.EqualsIgnoreCase(line[..7], "CONNECT"u8) && line[7] is (byte)' ' or (byte)'\t';

    /// <summary>Half-close toward the core: it sees the user's end of input.</summary>
    public void ShutdownSend()
    {
        try { _socket.Shutdown(SocketShutdown.Send); }
        catch (Exception ex) when (ex is SocketException or ObjectDisposedException) { }
    }

    public ValueTask DisposeAsync() => Stream.DisposeAsync();
}
