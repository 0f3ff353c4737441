using System.Buffers;
using System.Net;
using System.Security.Cryptography;
using System.Text.Json;
using NatsBroker.Protocol;

namespace NatsBroker.Auth.Callout;

/// <summary>What the server says about itself in an authorization request (jwt v2 ServerID).</summary>
public sealed record CalloutServerInfo(string Name, string Host, string Id, string Version, IReadOnlyList<string> Tags);

/// <summary>
/// The authorization request JWT (jwt v2 AuthorizationRequestClaims, server/auth_callout.go): signed by the server
/// nkey, <c>sub</c> = the callout issuer, <c>aud</c> = <c>nats-authorization-request</c>, <c>exp</c> = now + auth
/// timeout, and under <c>nats</c>: <c>server_id</c>, <c>user_nkey</c> (the key the answer's user JWT must be
/// about), <c>client_info</c>, <c>connect_opts</c> (the client's credentials included, as nats-server sends them),
/// <c>client_tls</c> when the client presented a certificate, <c>type</c> <c>authorization_request</c>, <c>version</c> 2.
/// </summary>
public static class AuthorizationRequest
{
    /// <summary>Where requests are published, in the callout account (AuthCalloutSubject).</summary>
    public const string Subject = "$SYS.REQ.USER.AUTH";
    /// <summary>The request's <c>aud</c> (AuthRequestSubject).</summary>
    public const string Audience = "nats-authorization-request";
    /// <summary>Header carrying the server's public xkey when the request is sealed (AuthRequestXKeyHeader).</summary>
    public const string XKeyHeader = "Nats-Server-Xkey";
    public const string ClaimType = "authorization_request";

    /// <summary>The claims JSON (unsigned); <paramref name="xkey"/> is the server's public curve key when sealing.</summary>
    public static byte[] Claims(CalloutServerInfo server, string issuerPublicKey, string subject, string userNkey, DateTimeOffset now,
        TimeSpan timeout, ConnectOptions connect, ClientAuthContext ctx, string? xkey)
    {
        ArgumentNullException.ThrowIfNull(server);
        ArgumentNullException.ThrowIfNull(connect);
        ArgumentNullException.ThrowIfNull(ctx);
        var buffer = new ArrayBufferWriter<byte>(1024);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteString("aud", Audience);
            w.WriteNumber("exp", (now + timeout).ToUnixTimeSeconds());
            w.WriteString("jti", Convert.ToHexString(RandomNumberGenerator.GetBytes(16)));
            w.WriteNumber("iat", now.ToUnixTimeSeconds());
            w.WriteString("iss", issuerPublicKey);
            w.WriteString("sub", subject);
            w.WriteStartObject("nats");

            w.WriteStartObject("server_id");
            w.WriteString("name", server.Name);
            w.WriteString("host", server.Host);
            w.WriteString("id", server.Id);
            if (server.Version.Length > 0) w.WriteString("version", server.Version);
            if (server.Tags.Count > 0)
            {
                w.WriteStartArray("tags");
                foreach (var t in server.Tags) w.WriteStringValue(t);
                w.WriteEndArray();
            }
            if (xkey is not null) w.WriteString("xkey", xkey);
            w.WriteEndObject();

            w.WriteString("user_nkey", userNkey);

            // client.go fillClientInfo (omitempty fields left out when empty).
            w.WriteStartObject("client_info");
            if (ctx.RemoteEndPoint is IPEndPoint ip)
                w.WriteString("host", (ip.Address.IsIPv4MappedToIPv6 ? ip.Address.MapToIPv4() : ip.Address).ToString());
            if (ctx.ClientId != 0) w.WriteNumber("id", ctx.ClientId);
            if (RawUser(connect) is { Length: > 0 } user) w.WriteString("user", user);
            if (!string.IsNullOrEmpty(connect.Name)) w.WriteString("name", connect.Name);
            w.WriteString("kind", "Client");
            w.WriteString("type", ctx.Override is not null ? "websocket" : "nats");
            if (!string.IsNullOrEmpty(connect.Sig) && ctx.Nonce is { Length: > 0 } nonce) w.WriteString("nonce", nonce);
            w.WriteEndObject();

            // client.go fillConnectOpts.
            w.WriteStartObject("connect_opts");
            WriteIfSet(w, "jwt", connect.Jwt);
            WriteIfSet(w, "nkey", connect.Nkey);
            WriteIfSet(w, "sig", connect.Sig);
            WriteIfSet(w, "auth_token", connect.AuthToken);
            WriteIfSet(w, "user", connect.User);
            WriteIfSet(w, "pass", connect.Pass);
            WriteIfSet(w, "name", connect.Name);
            WriteIfSet(w, "lang", connect.Lang);
            WriteIfSet(w, "version", connect.Version);
            w.WriteNumber("protocol", connect.Protocol);
            w.WriteEndObject();

            if (ctx.ClientCertificate is { } cert)
            {
                // The certificate the TLS gateway verified: nats-server puts verified chains (leaf first) here.
                w.WriteStartObject("client_tls");
                w.WriteStartArray("verified_chains");
                w.WriteStartArray();
                w.WriteStringValue(cert.ExportCertificatePem() + "\n");
                w.WriteEndArray();
                w.WriteEndArray();
                w.WriteEndObject();
            }

            w.WriteString("type", ClaimType);
            w.WriteNumber("version", 2);
            w.WriteEndObject();
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>client.go getRawAuthUser: the nkey, else the user name, else the token (what auth_users are matched on).</summary>
    public static string RawUser(ConnectOptions connect)
    {
        ArgumentNullException.ThrowIfNull(connect);
        if (!string.IsNullOrEmpty(connect.Nkey)) return connect.Nkey;
        if (!string.IsNullOrEmpty(connect.User)) return connect.User;
        if (!string.IsNullOrEmpty(connect.AuthToken)) return connect.AuthToken;
        return "";
    }

    private static void WriteIfSet(Utf8JsonWriter w, string name, string? value)
    {
        if (!string.IsNullOrEmpty(value)) w.WriteString(name, value);
    }
}
