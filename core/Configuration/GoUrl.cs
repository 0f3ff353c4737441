using System.Globalization;
using System.Text;

namespace NatsBroker.Configuration;

/// <summary>
/// A URL as Go's <c>net/url.Parse</c> splits it, and Go's <c>net.SplitHostPort</c>: what nats-server does with a route
/// URL (opts.go parseURL, RoutesFromStr), the <c>-cluster</c> flag (opts.go overrideCluster) and a cluster advertise
/// address (util.go parseHostPort). <see cref="Uri"/> cannot stand in for them: it accepts what Go refuses (spaces in a
/// host, a bare <c>127.0.0.1:6222</c>), keeps user info escaped, and its equality ignores user info, while reload.go
/// diffRoutes compares every part (util.go urlsAreEqual is <c>reflect.DeepEqual</c>). The error texts are Go's, since
/// nats-server prints them as they are (<c>parse "127.0.0.1:6222": first path segment in URL cannot contain colon</c>).
/// </summary>
/// <param name="Scheme">Lower-cased, as url.Parse stores it.</param>
/// <param name="Opaque">What follows <c>scheme:</c> when it does not start with '/' (<c>localhost:6222</c> has scheme
/// "localhost" and opaque "6222", so no host).</param>
/// <param name="User">Unescaped user name; null when the URL has no user info.</param>
/// <param name="Password">Unescaped password; null when there is none (<see cref="HasPassword"/> tells "" from none).</param>
/// <param name="HasPassword">The user info had a ':' (Go Userinfo.Password's second result).</param>
/// <param name="Host">Unescaped host[:port], as url.URL.Host.</param>
/// <param name="Path">The path as written (escapes checked, not decoded).</param>
/// <param name="RawQuery">After '?', without it.</param>
/// <param name="ForceQuery">The URL ended with a lone '?'.</param>
/// <param name="Fragment">After '#', as written; null when there is no '#'.</param>
internal sealed record GoUrl(string Scheme, string Opaque, string? User, string? Password, bool HasPassword,
    string Host, string Path, string RawQuery, bool ForceQuery, string? Fragment)
{
    /// <summary>
    /// net/url.Parse. Returns null with <paramref name="error"/> set to Go's text, url.Error included
    /// (<c>parse "x": reason</c>).
    /// </summary>
    public static GoUrl? Parse(string raw, out string? error)
    {
        int hash = raw.IndexOf('#', StringComparison.Ordinal);
        string u = hash < 0 ? raw : raw[..hash];
        string? frag = hash < 0 ? null : raw[(hash + 1)..];
        var url = ParseNoFragment(u, out string? reason);
        if (url is not null && frag is not null)
        {
            reason = Unescape(frag, Mode.Fragment, out _);
            url = reason is null ? url with { Fragment = frag } : null;
            u = raw;
        }
        error = reason is null ? null : $"parse {Quote(u)}: {reason}";
        return url;
    }

    private static GoUrl? ParseNoFragment(string raw, out string? error)
    {
        error = null;
        foreach (char ch in raw)
        {
            if (ch < 0x20 || ch == 0x7f)
            {
                error = "net/url: invalid control character in URL";
                return null;
            }
        }
        var url = new GoUrl("", "", null, null, false, "", "", "", false, null);
        if (raw == "*") return url with { Path = "*" };
        if (GetScheme(raw, out string scheme, out string rest) is { } schemeError)
        {
            error = schemeError;
            return null;
        }
        url = url with { Scheme = scheme.ToLowerInvariant() };
        int q = rest.IndexOf('?', StringComparison.Ordinal);
        if (rest.EndsWith('?') && q == rest.Length - 1)
        {
            url = url with { ForceQuery = true };
            rest = rest[..^1];
        }
        else if (q >= 0)
        {
            url = url with { RawQuery = rest[(q + 1)..] };
            rest = rest[..q];
        }
        if (!rest.StartsWith('/'))
        {
            if (url.Scheme.Length > 0) return url with { Opaque = rest };
            int slash = rest.IndexOf('/', StringComparison.Ordinal);
            if ((slash < 0 ? rest : rest[..slash]).Contains(':', StringComparison.Ordinal))
            {
                error = "first path segment in URL cannot contain colon";
                return null;
            }
        }
        if (rest.StartsWith("//", StringComparison.Ordinal) && (url.Scheme.Length > 0 || !rest.StartsWith("///", StringComparison.Ordinal)))
        {
            string authority = rest[2..];
            rest = "";
            int slash = authority.IndexOf('/', StringComparison.Ordinal);
            if (slash >= 0)
            {
                rest = authority[slash..];
                authority = authority[..slash];
            }
            if (ParseAuthority(authority, url, out url!) is { } authorityError)
            {
                error = authorityError;
                return null;
            }
        }
        if (Unescape(rest, Mode.Path, out _) is { } pathError)
        {
            error = pathError;
            return null;
        }
        return url with { Path = rest };
    }

    /// <summary>url.go getScheme.</summary>
    private static string? GetScheme(string raw, out string scheme, out string rest)
    {
        scheme = "";
        rest = raw;
        for (int i = 0; i < raw.Length; i++)
        {
            char c = raw[i];
            if (c is (>= 'a' and <= 'z') or (>= 'A' and <= 'Z'))
                continue;
            if (c is (>= '0' and <= '9') or '+' or '-' or '.')
            {
                if (i == 0) return null;
                continue;
            }
            if (c == ':')
            {
                if (i == 0) return "missing protocol scheme";
                scheme = raw[..i];
                rest = raw[(i + 1)..];
            }
            return null;
        }
        return null;
    }

    /// <summary>url.go parseAuthority: user info up to the last '@', then the host.</summary>
    private static string? ParseAuthority(string authority, GoUrl url, out GoUrl result)
    {
        result = url;
        int at = authority.LastIndexOf('@');
        if (ParseHost(at < 0 ? authority : authority[(at + 1)..], out string host) is { } hostError)
            return hostError;
        result = url with { Host = host };
        if (at < 0) return null;
        string userinfo = authority[..at];
        foreach (char ch in userinfo)
        {
            if (!(char.IsAsciiLetterOrDigit(ch) || "-._:~!$&'()*+,;=%@".Contains(ch, StringComparison.Ordinal)))
                return "net/url: invalid userinfo";
        }
        int colon = userinfo.IndexOf(':', StringComparison.Ordinal);
        string? err = Unescape(colon < 0 ? userinfo : userinfo[..colon], Mode.UserPassword, out string user);
        if (err is not null) return err;
        if (colon < 0)
        {
            result = result with { User = user };
            return null;
        }
        err = Unescape(userinfo[(colon + 1)..], Mode.UserPassword, out string password);
        if (err is not null) return err;
        result = result with { User = user, Password = password, HasPassword = true };
        return null;
    }

    /// <summary>url.go parseHost: an optional all-digit port after the last ':' (or after "]"), then host unescaping.</summary>
    private static string? ParseHost(string host, out string unescaped)
    {
        unescaped = "";
        string colonPort = "";
        if (host.StartsWith('['))
        {
            int close = host.LastIndexOf(']');
            if (close < 0) return "missing ']' in host";
            colonPort = host[(close + 1)..];
        }
        else if (host.LastIndexOf(':') is var colon and >= 0)
        {
            colonPort = host[colon..];
        }
        if (colonPort.Length > 0 && (colonPort[0] != ':' || colonPort.AsSpan(1).ContainsAnyExceptInRange('0', '9')))
            return $"invalid port {Quote(colonPort)} after host";
        return Unescape(host, Mode.Host, out unescaped);
    }

    private enum Mode { Host, UserPassword, Path, Fragment }

    /// <summary>url.go unescape: '%' must start a two-digit hex escape; a host allows only %25 below %80 and refuses
    /// the characters shouldEscape(encodeHost) names.</summary>
    private static string? Unescape(string s, Mode mode, out string result)
    {
        result = s;
        var bytes = new List<byte>(s.Length);
        for (int i = 0; i < s.Length; i++)
        {
            char c = s[i];
            if (c == '%')
            {
                if (i + 2 >= s.Length || !char.IsAsciiHexDigit(s[i + 1]) || !char.IsAsciiHexDigit(s[i + 2]))
                {
                    string bad = s[i..];
                    return $"invalid URL escape {Quote(bad.Length > 3 ? bad[..3] : bad)}";
                }
                int value = Convert.ToInt32(s.Substring(i + 1, 2), 16);
                if (mode == Mode.Host && value < 0x80 && s.Substring(i, 3) != "%25")
                    return $"invalid URL escape {Quote(s.Substring(i, 3))}";
                bytes.Add((byte)value);
                i += 2;
                continue;
            }
            if (mode == Mode.Host && c < 0x80 && !char.IsAsciiLetterOrDigit(c) && !"!$&'()*+,;=:[]<>\"-_.~".Contains(c, StringComparison.Ordinal))
                return $"invalid character {Quote(c.ToString())} in host name";
            int n = char.IsHighSurrogate(c) && i + 1 < s.Length && char.IsLowSurrogate(s[i + 1]) ? 2 : 1;
            bytes.AddRange(Encoding.UTF8.GetBytes(s.Substring(i, n)));
            i += n - 1;
        }
        result = Encoding.UTF8.GetString([.. bytes]);
        return null;
    }

    /// <summary>
    /// net.SplitHostPort. Returns null, or Go's AddrError text (<c>address a:b:c: too many colons in address</c>;
    /// just <c>missing port in address</c> for an empty address).
    /// </summary>
    public static string? SplitHostPort(string hostport, out string host, out string port)
    {
        host = port = "";
        string Fail(string why) => hostport.Length == 0 ? why : $"address {hostport}: {why}";
        int i = hostport.LastIndexOf(':');
        if (i < 0) return Fail("missing port in address");
        int j = 0, k = 0;
        if (hostport[0] == '[')
        {
            int end = hostport.IndexOf(']', StringComparison.Ordinal);
            if (end < 0) return Fail("missing ']' in address");
            if (end + 1 == hostport.Length) return Fail("missing port in address");
            if (end + 1 != i) return Fail(hostport[end + 1] == ':' ? "too many colons in address" : "missing port in address");
            host = hostport[1..end];
            j = 1;
            k = end + 1;
        }
        else
        {
            host = hostport[..i];
            if (host.Contains(':', StringComparison.Ordinal)) return Fail("too many colons in address");
        }
        if (hostport.AsSpan(j).Contains('[')) return Fail("unexpected '[' in address");
        if (hostport.AsSpan(k).Contains(']')) return Fail("unexpected ']' in address");
        port = hostport[(i + 1)..];
        return null;
    }

    /// <summary>
    /// util.go parseHostPort, as route.go setRouteInfoHostPortAndIP and reload.go validateClusterOpts read a cluster
    /// advertise value: a missing port takes <paramref name="defaultPort"/>, a port of 0 or -1 too. Returns null or
    /// Go's error text (<c>strconv.Atoi: parsing "x": invalid syntax</c>).
    /// </summary>
    public static string? ParseHostPort(string hostPort, int defaultPort, out string host, out int port)
    {
        port = -1;
        host = "";
        if (hostPort.Length == 0) return "no hostport specified";
        string? err = SplitHostPort(hostPort, out host, out string sPort);
        if (err is not null && err.EndsWith("missing port in address", StringComparison.Ordinal))
            err = SplitHostPort(string.Create(CultureInfo.InvariantCulture, $"{hostPort}:{defaultPort}"), out host, out sPort);
        if (err is not null) return err;
        string trimmed = sPort.Trim();
        if (!int.TryParse(trimmed, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out port))
        {
            bool digits = trimmed.Length > 0 && trimmed.TrimStart('+', '-').Length > 0 && !trimmed.TrimStart('+', '-').AsSpan().ContainsAnyExceptInRange('0', '9');
            port = -1;
            return $"strconv.Atoi: parsing {Quote(trimmed)}: {(digits ? "value out of range" : "invalid syntax")}";
        }
        if (port is 0 or -1) port = defaultPort;
        host = host.Trim();
        return null;
    }

    /// <summary>
    /// The route URL as a <see cref="System.Uri"/> (what <see cref="ClusterOptions.Routes"/> holds), or null when it
    /// names no host:port to dial. nats-server accepts such a URL and then fails every dial of it; we refuse it
    /// at load instead.
    /// </summary>
    public static Uri? ToRouteUri(string trimmed, GoUrl url)
    {
        if (url.Opaque.Length > 0 || SplitHostPort(url.Host, out _, out string port) is not null || port.Length == 0)
            return null;
        return Uri.TryCreate(trimmed, UriKind.Absolute, out var uri) && uri.Host.Length > 0 ? uri : null;
    }

    /// <summary>The user and password of a route URL, unescaped as Go does (Uri.UserInfo keeps the escapes).</summary>
    public static (string? User, string? Password) Credentials(Uri route)
    {
        ArgumentNullException.ThrowIfNull(route);
        var u = Parse(route.OriginalString.Trim(), out _);
        return (u?.User, u?.Password);
    }

    /// <summary>Go's %q for the strings met here (printable ASCII and UTF-8): quotes, with '"' and '\' escaped.</summary>
    internal static string Quote(string s)
    {
        var sb = new StringBuilder(s.Length + 2).Append('"');
        foreach (char c in s)
        {
            switch (c)
            {
                case '"': sb.Append("\\\""); break;
                case '\\': sb.Append("\\\\"); break;
                case '\n': sb.Append("\\n"); break;
                case '\t': sb.Append("\\t"); break;
                case '\r': sb.Append("\\r"); break;
                default:
                    if (c < 0x20 || c == 0x7f) sb.Append(CultureInfo.InvariantCulture, $"\\x{(int)c:x2}");
                    else sb.Append(c);
                    break;
            }
        }
        return sb.Append('"').ToString();
    }
}
