using System.Globalization;
using System.Net;
using System.Security.Cryptography;
using System.Text;

namespace NatsBroker.WebSocketGateway;

/// <summary>What the connection is for, from the request path (server/websocket.go wsUpgrade).</summary>
public enum UpgradeKind
{
    Nats,
    /// <summary>Path starting with <c>/mqtt</c>: MQTT over WebSocket (the <c>mqtt</c> subprotocol).</summary>
    Mqtt,
    /// <summary>Path starting with <c>/leafnode</c>: not served here (no leaf nodes).</summary>
    Leaf,
}

/// <summary>
/// An accepted upgrade: what the session needs from the HTTP request. The cookie values are those of the cookies the
/// block names (<c>jwt_cookie</c>, <c>user_cookie</c>, <c>pass_cookie</c>, <c>token_cookie</c>), null when absent.
/// </summary>
public sealed record AcceptedUpgrade(string Key, UpgradeKind Kind, bool Compress, bool NoMasking, string? ForwardedFor,
    string? Origin, bool Browser, string? CookieJwt, string? UserAgent, string? CookieUser = null, string? CookiePass = null,
    string? CookieToken = null);

/// <summary>
/// The HTTP/1.1 upgrade request (RFC 6455 section 4.2.1) checked in nats-server's order with its answers
/// (server/websocket.go wsUpgrade and wsReturnHTTPError, checked against nats-server 2.9.10): the status line's
/// reason as the body, <c>Sec-Websocket-Version: 13</c>, Go's net/http error headers; the connection stays open
/// for another request as Go's HTTP server keeps it.
/// </summary>
public static class UpgradeRequest
{
    private static readonly byte[] Guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"u8.ToArray();

    /// <summary>Outcome of one request: an upgrade, or the bytes to answer with (and whether to close after).</summary>
    public readonly record struct Outcome(AcceptedUpgrade? Upgrade, byte[]? Response, bool Close, string? Reason);

    /// <summary>
    /// Checks one request head (up to and including the blank line). <paramref name="trailing"/>: bytes the client
    /// sent after the head before our answer (nats-server refuses that).
    /// </summary>
    public static Outcome Check(ReadOnlySpan<byte> head, bool trailing, WebSocketOptions options, bool tls)
    {
        ArgumentNullException.ThrowIfNull(options);
        string text = Encoding.Latin1.GetString(head);
        var lines = text.Split("\r\n");
        var requestLine = lines[0].Split(' ');
        if (requestLine.Length != 3 || !requestLine[2].StartsWith("HTTP/1.", StringComparison.Ordinal))
            return new Outcome(null, Encoding.ASCII.GetBytes("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"), true, "malformed request");
        string method = requestLine[0], target = requestLine[1], version = requestLine[2];
        var headers = new List<KeyValuePair<string, string>>();
        for (int i = 1; i < lines.Length; i++)
        {
            if (lines[i].Length == 0) continue;
            int colon = lines[i].IndexOf(':', StringComparison.Ordinal);
            if (colon <= 0)
                return new Outcome(null, Encoding.ASCII.GetBytes("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request: malformed MIME header line"), true, "malformed header");
            headers.Add(new(lines[i][..colon].Trim(), lines[i][(colon + 1)..].Trim(' ', '\t')));
        }
        string? Get(string name) => headers.FirstOrDefault(h => h.Key.Equals(name, StringComparison.OrdinalIgnoreCase)).Value;
        bool Contains(string name, string value) => headers.Where(h => h.Key.Equals(name, StringComparison.OrdinalIgnoreCase))
            .Any(h => h.Value.Split(',').Any(t => t.Trim(' ', '\t').Equals(value, StringComparison.OrdinalIgnoreCase)));
        bool http10 = version == "HTTP/1.0";
        string? host = Get("Host");
        // Go's HTTP server answers a 1.1 request without Host itself, before the handler runs.
        if (!http10 && host is null)
            return new Outcome(null, Encoding.ASCII.GetBytes("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request: missing required Host header"), true, "'Host' missing in request");
        bool close = http10 || Contains("Connection", "close");
        Outcome Refuse(HttpStatusCode status, string reason) => new(null, ErrorResponse(version, status), close, reason);

        string path = target.StartsWith('/') ? target : (Uri.TryCreate(target, UriKind.Absolute, out var u) ? u.AbsolutePath : target);
        var kind = path.StartsWith("/leafnode", StringComparison.Ordinal) ? UpgradeKind.Leaf
            : path.StartsWith("/mqtt", StringComparison.Ordinal) ? UpgradeKind.Mqtt : UpgradeKind.Nats;
        if (method != "GET") return Refuse(HttpStatusCode.MethodNotAllowed, "request method must be GET");
        if (string.IsNullOrEmpty(host)) return Refuse(HttpStatusCode.BadRequest, "'Host' missing in request");
        if (!Contains("Upgrade", "websocket")) return Refuse(HttpStatusCode.BadRequest, "invalid value for header 'Upgrade'");
        if (!Contains("Connection", "Upgrade")) return Refuse(HttpStatusCode.BadRequest, "invalid value for header 'Connection'");
        string? key = Get("Sec-WebSocket-Key");
        if (string.IsNullOrEmpty(key)) return Refuse(HttpStatusCode.BadRequest, "key missing");
        if (!Contains("Sec-WebSocket-Version", "13")) return Refuse(HttpStatusCode.BadRequest, "invalid version");
        string? origin = Get("Origin") is { Length: > 0 } o1 ? o1 : Get("Sec-WebSocket-Origin");
        if (OriginError(origin, host, tls, options) is { } originError)
            return Refuse(HttpStatusCode.Forbidden, "origin not allowed: " + originError);
        bool compress = options.Compression && headers.Where(h => h.Key.Equals("Sec-WebSocket-Extensions", StringComparison.OrdinalIgnoreCase))
            .Any(h => h.Value.Split(',').Any(ext => ext.Split(';').Any(p => p.Trim(' ', '\t').Equals("permessage-deflate", StringComparison.OrdinalIgnoreCase))));
        if (trailing) return Refuse(HttpStatusCode.BadRequest, "client sent data before handshake is complete");
        string? forwarded = headers.FirstOrDefault(h => h.Key.Equals("X-Forwarded-For", StringComparison.OrdinalIgnoreCase)).Value;
        if (forwarded is not null && !IPAddress.TryParse(forwarded, out _)) forwarded = null;
        string? ua = Get("User-Agent");
        // server/websocket.go wsUpgrade: the named cookies, read for clients (not leaf nodes).
        string? CookieNamed(string? name) => name is { Length: > 0 } && kind != UpgradeKind.Leaf ? Cookie(headers, name) : null;
        return new Outcome(new AcceptedUpgrade(key, kind, compress, Get("Nats-No-Masking") == "true", forwarded, origin,
            ua is not null && ua.StartsWith("Mozilla/", StringComparison.Ordinal), CookieNamed(options.JwtCookie), ua,
            CookieNamed(options.UserCookie), CookieNamed(options.PassCookie), CookieNamed(options.TokenCookie)), null, false, null);
    }

    /// <summary>The 101 answer (server/websocket.go wsUpgrade, in its header order).</summary>
    public static byte[] SwitchingProtocols(AcceptedUpgrade upgrade)
    {
        ArgumentNullException.ThrowIfNull(upgrade);
        var sb = new StringBuilder("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ");
        sb.Append(AcceptKey(upgrade.Key)).Append("\r\n");
        if (upgrade.Compress) sb.Append("Sec-WebSocket-Extensions: permessage-deflate; server_no_context_takeover; client_no_context_takeover\r\n");
        if (upgrade.NoMasking) sb.Append("Nats-No-Masking: true\r\n");
        if (upgrade.Kind == UpgradeKind.Mqtt) sb.Append("Sec-Websocket-Protocol: mqtt\r\n");
        sb.Append("\r\n");
        return Encoding.ASCII.GetBytes(sb.ToString());
    }

    /// <summary>RFC 6455 section 4.2.2: base64(SHA-1(key + GUID)).</summary>
    public static string AcceptKey(string key)
    {
        ArgumentNullException.ThrowIfNull(key);
        var bytes = new byte[Encoding.ASCII.GetByteCount(key) + Guid.Length];
        int n = Encoding.ASCII.GetBytes(key, bytes);
        Guid.CopyTo(bytes, n);
#pragma warning disable CA5350 // SHA-1 is what RFC 6455 specifies for the accept key; not a security use.
        return Convert.ToBase64String(SHA1.HashData(bytes));
#pragma warning restore CA5350
    }

    /// <summary>Go's http.Error(w, http.StatusText(status), status) after Sec-Websocket-Version is set.</summary>
    public static byte[] ErrorResponse(string version, HttpStatusCode status)
    {
        string reason = status switch
        {
            HttpStatusCode.MethodNotAllowed => "Method Not Allowed",
            HttpStatusCode.Forbidden => "Forbidden",
            HttpStatusCode.ServiceUnavailable => "Service Unavailable",
            HttpStatusCode.NotImplemented => "Not Implemented",
            _ => "Bad Request",
        };
        string body = reason + "\n";
        return Encoding.ASCII.GetBytes(string.Create(CultureInfo.InvariantCulture,
            $"{version} {(int)status} {reason}\r\nContent-Type: text/plain; charset=utf-8\r\nSec-Websocket-Version: 13\r\nX-Content-Type-Options: nosniff\r\nDate: {DateTime.UtcNow:R}\r\nContent-Length: {body.Length}\r\n\r\n{body}"));
    }

    /// <summary>server/websocket.go checkOrigin: null when allowed. No Origin header is allowed (RFC 6455 section 1.6).</summary>
    internal static string? OriginError(string? origin, string host, bool tls, WebSocketOptions options)
    {
        if (!options.SameOrigin && options.AllowedOrigins.Count == 0) return null;
        if (string.IsNullOrEmpty(origin)) return null;
        if (SplitOrigin(origin) is not var (scheme, authority)) return $"parse \"{origin}\": invalid URI for request";
        var (oh, op) = HostAndPort(scheme == "https", authority);
        if (options.SameOrigin)
        {
            var (rh, rp) = HostAndPort(tls, host);
            if (oh != rh || op != rp) return "not same origin";
        }
        if (options.AllowedOrigins.Count > 0)
        {
            bool found = false;
            foreach (var allowed in options.AllowedOrigins)
            {
                if (SplitOrigin(allowed) is not var (aScheme, aAuthority)) continue;
                var (ah, ap) = HostAndPort(aScheme == "https", aAuthority);
                // A Go map keyed by host: the last entry for a host wins.
                if (ah == oh) found = scheme == aScheme && op == ap;
            }
            if (!found) return "not in the allowed list";
        }
        return null;
    }

    /// <summary><c>scheme://authority[/path]</c> → (scheme, authority); null when it is not that shape.</summary>
    private static (string Scheme, string Authority)? SplitOrigin(string url)
    {
        int sep = url.IndexOf("://", StringComparison.Ordinal);
        if (sep <= 0) return null;
        string rest = url[(sep + 3)..];
        int slash = rest.IndexOfAny(['/', '?', '#']);
        if (slash >= 0) rest = rest[..slash];
        return rest.Length == 0 ? null : (url[..sep].ToLowerInvariant(), rest);
    }

    /// <summary>server/websocket.go wsGetHostAndPort: a missing port is the scheme's default.</summary>
    private static (string Host, string Port) HostAndPort(bool tls, string hostport)
    {
        int colon = hostport.LastIndexOf(':');
        int bracket = hostport.LastIndexOf(']');
        if (colon > bracket && colon >= 0) return (hostport[..colon].Trim('[', ']').ToLowerInvariant(), hostport[(colon + 1)..]);
        return (hostport.Trim('[', ']').ToLowerInvariant(), tls ? "443" : "80");
    }

    private static string? Cookie(List<KeyValuePair<string, string>> headers, string name)
    {
        foreach (var h in headers)
        {
            if (!h.Key.Equals("Cookie", StringComparison.OrdinalIgnoreCase)) continue;
            foreach (var part in h.Value.Split(';'))
            {
                var kv = part.Trim();
                int eq = kv.IndexOf('=', StringComparison.Ordinal);
                if (eq > 0 && kv[..eq] == name) return kv[(eq + 1)..].Trim('"');
            }
        }
        return null;
    }
}
