using System.Text.Json;
using NatsBroker.Configuration;

namespace NatsBroker.Auth.Jwt;

/// <summary>
/// The claims common to every NATS JWT (nats-io/jwt v2 ClaimsData): <c>sub</c>, <c>iss</c>, <c>name</c>, <c>iat</c>,
/// <c>exp</c>, <c>nbf</c> (Unix seconds), and the type in <c>nats.type</c> ("operator", "account", "user").
/// Parsed from an already verified payload (<see cref="Jwt.TryDecode"/>).
/// </summary>
public abstract class JwtClaims
{
    protected JwtClaims(JsonElement payload, string token)
    {
        Token = token;
        Subject = Str(payload, "sub") ?? "";
        Issuer = Str(payload, "iss") ?? "";
        Audience = Str(payload, "aud") ?? "";
        Name = Str(payload, "name") ?? "";
        IssuedAt = Long(payload, "iat");
        Expires = Long(payload, "exp");
        NotBefore = Long(payload, "nbf");
        Nats = payload.TryGetProperty("nats", out var n) && n.ValueKind == JsonValueKind.Object ? n : default;
        // v1 claims (jwt v1compat) keep the type, and a user's issuer_account, at the top level; migrateV1 moves them.
        Type = Str(Nats, "type") ?? Str(payload, "type") ?? "";
        V1IssuerAccount = Jwt.IsV1(payload) ? Str(payload, "issuer_account") : null;
    }

    /// <summary>A v1 claim's top-level issuer_account (moved into "nats" by jwt's v1 migration); null for v2.</summary>
    protected string? V1IssuerAccount { get; }

    /// <summary>The encoded JWT these claims came from.</summary>
    public string Token { get; }
    public string Subject { get; }
    public string Issuer { get; }
    /// <summary><c>aud</c>; for a user JWT from an auth callout in config mode, the account to place the user in.</summary>
    public string Audience { get; }
    public string Name { get; }
    public long IssuedAt { get; }
    /// <summary>Unix seconds; 0 = never.</summary>
    public long Expires { get; }
    public long NotBefore { get; }
    public string Type { get; }
    protected JsonElement Nats { get; }

    /// <summary>jwt ClaimsData.Validate's blocking time checks: expired, or not valid yet.</summary>
    public bool IsExpired(DateTimeOffset now) => Expires > 0 && now.ToUnixTimeSeconds() > Expires;
    public bool IsNotYetValid(DateTimeOffset now) => NotBefore > 0 && now.ToUnixTimeSeconds() < NotBefore;

    internal static string? Str(JsonElement e, string name) =>
        e.ValueKind == JsonValueKind.Object && e.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.String ? v.GetString() : null;

    internal static long Long(JsonElement e, string name, long missing = 0) =>
        e.ValueKind == JsonValueKind.Object && e.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.Number && v.TryGetInt64(out long n) ? n : missing;

    internal static bool Bool(JsonElement e, string name) =>
        e.ValueKind == JsonValueKind.Object && e.TryGetProperty(name, out var v) && v.ValueKind == JsonValueKind.True;

    internal static List<string> Strings(JsonElement e, string name)
    {
        List<string> list = [];
        if (e.ValueKind != JsonValueKind.Object || !e.TryGetProperty(name, out var v)) return list;
        if (v.ValueKind == JsonValueKind.Array)
        {
            foreach (var item in v.EnumerateArray())
                if (item.ValueKind == JsonValueKind.String && item.GetString() is { Length: > 0 } s) list.Add(s);
        }
        else if (v.ValueKind == JsonValueKind.String && v.GetString() is { Length: > 0 } csv)
        {
            // CIDRList also accepts a comma separated string (jwt types.go CIDRList.UnmarshalJSON).
            foreach (var s in csv.Split(',')) if (s.Trim() is { Length: > 0 } t) list.Add(t.ToLowerInvariant());
        }
        return list;
    }

    /// <summary>jwt Permissions {pub:{allow,deny}, sub:{allow,deny}, resp:{max,ttl}} as the config's permissions; null when empty.</summary>
    internal static Permissions? ParsePermissions(JsonElement e)
    {
        if (e.ValueKind != JsonValueKind.Object) return null;
        var pub = ParsePermission(e, "pub");
        var sub = ParsePermission(e, "sub");
        ResponsePermission? resp = null;
        if (e.TryGetProperty("resp", out var r) && r.ValueKind == JsonValueKind.Object)
        {
            resp = new ResponsePermission
            {
                MaxMsgs = (int)Math.Clamp(Long(r, "max"), int.MinValue, int.MaxValue),
                // jwt's ttl is a Go time.Duration in nanoseconds.
                Expires = TimeSpan.FromTicks(Long(r, "ttl") / 100),
            };
        }
        if (pub is null && sub is null && resp is null) return null;
        return new Permissions { Publish = pub, Subscribe = sub, Response = resp };
    }

    private static SubjectPermission? ParsePermission(JsonElement e, string name)
    {
        if (!e.TryGetProperty(name, out var p) || p.ValueKind != JsonValueKind.Object) return null;
        var allow = Strings(p, "allow");
        var deny = Strings(p, "deny");
        if (allow.Count == 0 && deny.Count == 0) return null;
        return new SubjectPermission { Allow = allow.Count == 0 ? null : allow, Deny = deny.Count == 0 ? null : deny };
    }
}

/// <summary>An operator JWT (jwt v2 Operator): self-signed or signed by one of its signing keys; names the system account.</summary>
public sealed class OperatorClaims : JwtClaims
{
    public OperatorClaims(JsonElement payload, string token) : base(payload, token)
    {
        SigningKeys = Strings(Nats, "signing_keys");
        SystemAccount = Str(Nats, "system_account");
    }

    public List<string> SigningKeys { get; }
    public string? SystemAccount { get; }

    /// <summary>Keys whose signatures on account JWTs this operator vouches for: its identity and its signing keys.</summary>
    public bool Vouches(string issuer) => issuer == Subject || SigningKeys.Contains(issuer);
}

/// <summary>An account JWT (jwt v2 Account): limits, exports, imports, signing keys, revocations, default permissions.</summary>
public sealed class AccountClaims : JwtClaims
{
    public AccountClaims(JsonElement payload, string token) : base(payload, token)
    {
        if (Nats.ValueKind == JsonValueKind.Object && Nats.TryGetProperty("signing_keys", out var keys) && keys.ValueKind == JsonValueKind.Array)
        {
            foreach (var k in keys.EnumerateArray())
            {
                // A plain key, or a scoped key {kind:"user_scope", key, role, template} whose template replaces the user's permissions.
                if (k.ValueKind == JsonValueKind.String && k.GetString() is { } plain) SigningKeys[plain] = null;
                else if (k.ValueKind == JsonValueKind.Object && Str(k, "key") is { } scoped)
                    SigningKeys[scoped] = new ScopedSigningKey(ParsePermissions(k.TryGetProperty("template", out var t) ? t : default));
            }
        }
        if (Nats.ValueKind == JsonValueKind.Object && Nats.TryGetProperty("revocations", out var rev) && rev.ValueKind == JsonValueKind.Object)
        {
            foreach (var r in rev.EnumerateObject())
                if (r.Value.TryGetInt64(out long at)) Revocations[r.Name] = at;
        }
        var limits = Nats.ValueKind == JsonValueKind.Object && Nats.TryGetProperty("limits", out var l) ? l : default;
        MaxConnections = (int)Math.Clamp(Long(limits, "conn", -1), -1, int.MaxValue);
        MaxSubscriptions = (int)Math.Clamp(Long(limits, "subs", -1), -1, int.MaxValue);
        MaxPayload = (int)Math.Clamp(Long(limits, "payload", -1), -1, int.MaxValue);
        DisallowBearer = Bool(limits, "disallow_bearer");
        JetStream = ParseJetStreamLimits(limits);
        DefaultPermissions = ParsePermissions(Nats.ValueKind == JsonValueKind.Object && Nats.TryGetProperty("default_permissions", out var dp) ? dp : default);
        if (Nats.ValueKind == JsonValueKind.Object && Nats.TryGetProperty("authorization", out var auth) && auth.ValueKind == JsonValueKind.Object)
        {
            var users = Strings(auth, "auth_users");
            // jwt ExternalAuthorization.IsEnabled: the account delegates authentication once it names auth_users.
            if (users.Count > 0) ExternalAuth = new ExternalAuthorization(users, Strings(auth, "allowed_accounts"), Str(auth, "xkey") is { Length: > 0 } x ? x : null);
        }
        ParseExportsAndImports();
    }

    /// <summary>
    /// The account's auth callout (jwt v2 <c>nats.authorization</c>: auth_users, allowed_accounts, xkey); null when the
    /// account does not delegate authentication.
    /// </summary>
    public ExternalAuthorization? ExternalAuth { get; }

    /// <summary>Signing keys → the scope they impose (null for a plain key).</summary>
    public Dictionary<string, ScopedSigningKey?> SigningKeys { get; } = new(StringComparer.Ordinal);
    /// <summary>Revoked user keys (or "*" for all) → users issued at or before this Unix time are revoked.</summary>
    public Dictionary<string, long> Revocations { get; } = new(StringComparer.Ordinal);
    public int MaxConnections { get; }
    public int MaxSubscriptions { get; }
    public int MaxPayload { get; }
    public bool DisallowBearer { get; }
    /// <summary>The account's JetStream limits; null = JetStream not enabled (no storage in the JWT's limits).</summary>
    public JetStreamAccountLimits? JetStream { get; }
    public Permissions? DefaultPermissions { get; }
    public List<ExportConfig> Exports { get; } = [];
    public List<ImportConfig> Imports { get; } = [];

    /// <summary>Whether <paramref name="issuer"/> may sign this account's user JWTs: the account itself or one of its signing keys.</summary>
    public bool Vouches(string issuer) => issuer == Subject || SigningKeys.ContainsKey(issuer);

    /// <summary>server/accounts.go checkUserRevoked: revoked when the user's (or "*") revocation time is at or after the JWT's iat.</summary>
    public bool IsRevoked(string userKey, long issuedAt) =>
        (Revocations.TryGetValue(userKey, out long at) && issuedAt <= at) || (Revocations.TryGetValue("*", out at) && issuedAt <= at);

    private void ParseExportsAndImports()
    {
        if (Nats.ValueKind != JsonValueKind.Object) return;
        if (Nats.TryGetProperty("exports", out var exports) && exports.ValueKind == JsonValueKind.Array)
        {
            foreach (var x in exports.EnumerateArray())
            {
                if (Str(x, "subject") is not { Length: > 0 } subject) continue;
                var export = new ExportConfig { Subject = subject, IsService = Str(x, "type") == "service" };
                export.ResponseType = Str(x, "response_type") switch
                {
                    "Stream" => ServiceResponseType.Streamed,
                    "Chunked" => ServiceResponseType.Chunked,
                    _ => ServiceResponseType.Singleton,
                };
                // A token-required (private) export is importable only with an activation token (Account.Authorizes checks it).
                export.TokenRequired = Bool(x, "token_req");
                if (x.TryGetProperty("revocations", out var rev) && rev.ValueKind == JsonValueKind.Object)
                {
                    export.ActivationRevocations = new Dictionary<string, long>(StringComparer.Ordinal);
                    foreach (var r in rev.EnumerateObject())
                        if (r.Value.TryGetInt64(out long at)) export.ActivationRevocations[r.Name] = at;
                }
                if (export.IsService) export.Latency = ParseServiceLatency(x);
                Exports.Add(export);
            }
        }
        if (Nats.TryGetProperty("imports", out var imports) && imports.ValueKind == JsonValueKind.Array)
        {
            foreach (var i in imports.EnumerateArray())
            {
                if (Str(i, "subject") is not { Length: > 0 } subject || Str(i, "account") is not { Length: > 0 } account) continue;
                bool service = Str(i, "type") == "service";
                // v2: local_subject is where the import lands; the older "to" is a prefix for streams and the local subject for services.
                string? local = Str(i, "local_subject");
                string? to = Str(i, "to");
                var import = new ImportConfig { IsService = service, Account = account, Subject = subject, Share = Bool(i, "share") };
                if (Str(i, "token") is { Length: > 0 } token)
                {
                    import.Token = token;
                    import.Activation = ActivationClaims.TryRead(token);
                }
                if (!string.IsNullOrEmpty(local)) import.To = local;
                else if (!string.IsNullOrEmpty(to))
                {
                    if (service) import.To = to;
                    else import.Prefix = to;
                }
                Imports.Add(import);
            }
        }
    }

    /// <summary>
    /// jwt v2 Export.Latency (<c>service_latency: {sampling: 1-100 | "headers", results: subject}</c>) as nats-server
    /// applies it (TrackServiceExportWithSampling): an invalid one is left out (nats-server logs it and tracks nothing).
    /// </summary>
    private static ServiceLatencyConfig? ParseServiceLatency(JsonElement export)
    {
        if (export.ValueKind != JsonValueKind.Object || !export.TryGetProperty("service_latency", out var l) || l.ValueKind != JsonValueKind.Object)
            return null;
        int sampling;
        if (!l.TryGetProperty("sampling", out var s)) sampling = ServiceLatencyConfig.Headers; // jwt's zero value is Headers
        else if (s.ValueKind == JsonValueKind.String && string.Equals(s.GetString(), "headers", StringComparison.OrdinalIgnoreCase)) sampling = ServiceLatencyConfig.Headers;
        else if (s.ValueKind == JsonValueKind.Number && s.TryGetInt32(out int n) && n is >= 0 and <= 100) sampling = n;
        else return null;
        if (Str(l, "results") is not { Length: > 0 } results || !Subjects.Subject.IsValidLiteral(results)) return null;
        return new ServiceLatencyConfig(sampling, results);
    }

    /// <summary>
    /// jwt Import.Validate's blocking checks of the imports' activation tokens (nats-server refuses an account JWT
    /// failing them: verifyAccountClaims, claimValidate): the token decodes with a valid signature, was issued by the
    /// exporting account or names it as issuer_account, is for this account, of the import's kind, and covers the
    /// imported subject. Expiry is not checked here (it only makes the import inactive). Null when all pass.
    /// </summary>
    public string? ImportTokenError()
    {
        foreach (var i in Imports)
        {
            if (i.Token is null) continue;
            if (i.Activation is not { } act) return $"import \"{i.Subject}\" contains an invalid activation token";
            if (!(act.Issuer == i.Account || act.IssuerAccount == i.Account)) return $"activation token doesn't match account for import \"{i.Subject}\"";
            if (act.Subject != Subject) return $"activation token doesn't match account it is being included in, \"{i.Subject}\"";
            string kind = i.IsService ? "service" : "stream";
            if (act.ImportType != kind) return $"mismatch between token import type {act.ImportType} and type of import {kind}";
            if (!NatsBroker.Accounts.SubjectSubset.IsSubsetOf(i.Subject, act.ImportSubject))
                return $"activation token import subject \"{act.ImportSubject}\" doesn't match import \"{i.Subject}\"";
        }
        return null;
    }

    /// <summary>This account as the registry configures accounts (name = public key).</summary>
    public AccountConfig ToAccountConfig() => new()
    {
        Name = Subject,
        MaxConnections = MaxConnections,
        MaxSubscriptions = MaxSubscriptions,
        MaxPayload = MaxPayload,
        Exports = Exports,
        Imports = Imports,
        SigningKeys = SigningKeys.Keys,
        JetStream = JetStream,
    };

    /// <summary>
    /// JetStream from the account JWT's limits (server/accounts.go UpdateAccountClaims): enabled when mem_storage or
    /// disk_storage is not 0, or when tiered_limits are given; of the tiers only "R1" applies here (no clustering).
    /// </summary>
    private static JetStreamAccountLimits? ParseJetStreamLimits(JsonElement limits)
    {
        if (limits.ValueKind != JsonValueKind.Object) return null;
        if (Long(limits, "mem_storage") != 0 || Long(limits, "disk_storage") != 0) return JetStreamLimitsOf(limits);
        if (limits.TryGetProperty("tiered_limits", out var tiers) && tiers.ValueKind == JsonValueKind.Object
            && tiers.TryGetProperty("R1", out var r1) && r1.ValueKind == JsonValueKind.Object) return JetStreamLimitsOf(r1);
        return null;
    }

    private static JetStreamAccountLimits JetStreamLimitsOf(JsonElement l)
    {
        // accounts.go toUnlimited: per-stream maxima and max_ack_pending of 0 mean unlimited.
        static long Unlimited(long v) => v > 0 ? v : -1;
        return new JetStreamAccountLimits
        {
            MaxMemory = Long(l, "mem_storage"),
            MaxStore = Long(l, "disk_storage"),
            MaxStreams = (int)Math.Clamp(Long(l, "streams"), int.MinValue, int.MaxValue),
            MaxConsumers = (int)Math.Clamp(Long(l, "consumer"), int.MinValue, int.MaxValue),
            MaxAckPending = (int)Math.Clamp(Unlimited(Long(l, "max_ack_pending")), -1, int.MaxValue),
            MemoryMaxStreamBytes = Unlimited(Long(l, "mem_max_stream_bytes")),
            StoreMaxStreamBytes = Unlimited(Long(l, "disk_max_stream_bytes")),
            MaxBytesRequired = Bool(l, "max_bytes_required"),
        };
    }
}

/// <summary>
/// An activation JWT (jwt v2 ActivationClaims): the exporting account (or its signing key, then naming the account
/// in <c>issuer_account</c>) lets the account in <c>sub</c> import <c>nats.subject</c> of kind <c>nats.kind</c> from
/// a token-required export. Only the signature is checked here; who may issue it, for whom and until when is checked
/// against the exporter when the import is wired (server/accounts.go checkActivation).
/// </summary>
public sealed class ActivationClaims : JwtClaims
{
    public ActivationClaims(JsonElement payload, string token) : base(payload, token)
    {
        ImportSubject = Str(Nats, "subject") ?? "";
        ImportType = Str(Nats, "kind") ?? "";
        IssuerAccount = Str(Nats, "issuer_account") ?? V1IssuerAccount;
    }

    /// <summary>The subject the activation allows importing (the import's subject must be within it).</summary>
    public string ImportSubject { get; }
    /// <summary>"service" or "stream".</summary>
    public string ImportType { get; }
    /// <summary>Set when a signing key issued the token: the exporting account it belongs to.</summary>
    public string? IssuerAccount { get; }

    /// <summary>The claims of a well-formed, correctly signed activation JWT; null otherwise (jwt.DecodeActivationClaims).</summary>
    public static ActivationClaims? TryRead(string token)
    {
        if (Jwt.TryDecode(token, out _) is not { } payload) return null;
        var claims = new ActivationClaims(payload, token);
        return claims.Type == "activation" ? claims : null;
    }
}

/// <summary>A scoped signing key's template: users it signs get these permissions, not their own.</summary>
public sealed record ScopedSigningKey(Permissions? Permissions);

/// <summary>
/// jwt v2 ExternalAuthorization: users of the account other than <see cref="AuthUsers"/> are decided by a callout
/// service subscribed in the account; its answers may place users in <see cref="AllowedAccounts"/> ("*" = any);
/// requests are sealed for <see cref="XKey"/> when set.
/// </summary>
public sealed record ExternalAuthorization(List<string> AuthUsers, List<string> AllowedAccounts, string? XKey)
{
    /// <summary>accounts.go isAllowedAcount.</summary>
    public bool AllowsAccount(string account) => AllowedAccounts.Contains(account, StringComparer.Ordinal) || AllowedAccounts.Contains("*", StringComparer.Ordinal);
}

/// <summary>A user JWT (jwt v2 User): permissions, limits, bearer token, issuer account, connection types, source CIDRs, times.</summary>
public sealed class UserClaims : JwtClaims
{
    public UserClaims(JsonElement payload, string token) : base(payload, token)
    {
        Permissions = ParsePermissions(Nats);
        BearerToken = Bool(Nats, "bearer_token");
        IssuerAccount = Str(Nats, "issuer_account") ?? V1IssuerAccount;
        AllowedConnectionTypes = Strings(Nats, "allowed_connection_types");
        Src = Strings(Nats, "src");
        TimesLocation = Str(Nats, "times_location");
        if (Nats.ValueKind == JsonValueKind.Object && Nats.TryGetProperty("times", out var times) && times.ValueKind == JsonValueKind.Array)
        {
            foreach (var t in times.EnumerateArray())
                if (Str(t, "start") is { } s && Str(t, "end") is { } e) Times.Add((s, e));
        }
        MaxSubscriptions = Long(Nats, "subs", -1);
        MaxPayload = Long(Nats, "payload", -1);
    }

    public Permissions? Permissions { get; }
    public bool BearerToken { get; }
    /// <summary>Set when a signing key issued the JWT: the account the key belongs to.</summary>
    public string? IssuerAccount { get; }
    public List<string> AllowedConnectionTypes { get; }
    public List<string> Src { get; }
    public List<(string Start, string End)> Times { get; } = [];
    public string? TimesLocation { get; }
    /// <summary>-1 = unlimited (jwt NoLimit).</summary>
    public long MaxSubscriptions { get; }
    public long MaxPayload { get; }

    /// <summary>The account the user belongs to: issuer_account when a signing key issued it, else the issuer.</summary>
    public string AccountKey => string.IsNullOrEmpty(IssuerAccount) ? Issuer : IssuerAccount;
}
