using NATS.NKeys;

namespace NatsBroker.Auth.Jwt;

/// <summary>Which resolver the config names (server/opts.go parseResolver / accounts.go).</summary>
public enum ResolverKind
{
    /// <summary><c>resolver: MEMORY</c>: the accounts of <c>resolver_preload</c>, kept in memory.</summary>
    Memory,
    /// <summary><c>resolver: {type: full, dir: ...}</c>: every account JWT pushed to the server, persisted in dir.</summary>
    Full,
    /// <summary><c>resolver: {type: cache, dir: ...}</c>: like full, bounded (<c>limit</c>); this single server has nowhere to fetch from.</summary>
    Cache,
}

/// <summary>
/// The account JWTs this server knows (server/accounts.go MemAccResolver and DirAccResolver): verified against the
/// trusted operators on every store, newest issue time wins, persisted as <c>&lt;dir&gt;/&lt;account key&gt;.jwt</c>
/// for the directory resolvers (nats-server's DirJWTStore layout without sharding). Thread-safe; readers see a
/// snapshot dictionary (copy on write: stores are rare, lookups happen on every JWT connect).
/// </summary>
public sealed class AccountResolver
{
    private readonly Lock _lock = new();
    private readonly IReadOnlyList<OperatorClaims> _operators;
    private readonly string? _dir;
    private readonly int _limit;
    private volatile Dictionary<string, AccountClaims> _accounts = new(StringComparer.Ordinal);

    public AccountResolver(ResolverKind kind, IReadOnlyList<OperatorClaims> operators, string? dir = null, int limit = 0)
    {
        Kind = kind;
        _operators = operators;
        _dir = dir;
        _limit = limit;
        if (dir is not null)
        {
            Directory.CreateDirectory(dir);
            foreach (var file in Directory.EnumerateFiles(dir, "*.jwt"))
            {
                string jwt;
                try
                {
                    jwt = File.ReadAllText(file).Trim();
                }
                catch (IOException)
                {
                    continue;
                }
                // Files that no longer verify (operator changed) are skipped, not deleted.
                Store(jwt, persist: false);
            }
        }
    }

    public ResolverKind Kind { get; }

    /// <summary>Raised after an account JWT was stored (new or newer): the server reconfigures the account and re-checks its clients.</summary>
    public event Action<AccountClaims>? Updated;

    public IReadOnlyCollection<AccountClaims> All => _accounts.Values;

    public AccountClaims? Find(string accountKey) => _accounts.TryGetValue(accountKey, out var c) ? c : null;

    /// <summary>
    /// Verifies and stores an account JWT (resolver_preload, <c>$SYS.REQ.CLAIMS.UPDATE</c>). Returns the stored claims,
    /// or null with <paramref name="error"/> when refused; an older or identical JWT is refused without being an error
    /// for the caller's reply text.
    /// </summary>
    public AccountClaims? Store(string jwt, out string error, bool persist = true)
    {
        var claims = Validate(jwt, out error);
        if (claims is null) return null;
        lock (_lock)
        {
            if (_accounts.TryGetValue(claims.Subject, out var existing))
            {
                if (existing.Token == jwt) return existing;
                if (existing.IssuedAt > claims.IssuedAt)
                {
                    error = "jwt is older than the one stored";
                    return null;
                }
            }
            else if (Kind == ResolverKind.Cache && _limit > 0 && _accounts.Count >= _limit)
            {
                error = "resolver cache is full";
                return null;
            }
            if (persist && _dir is not null)
            {
                string path = Path.Combine(_dir, claims.Subject + ".jwt");
                string tmp = path + ".tmp";
                File.WriteAllText(tmp, jwt);
                File.Move(tmp, path, overwrite: true);
            }
            _accounts = new Dictionary<string, AccountClaims>(_accounts, StringComparer.Ordinal) { [claims.Subject] = claims };
        }
        Updated?.Invoke(claims);
        return claims;
    }

    private void Store(string jwt, bool persist) => Store(jwt, out _, persist);

    /// <summary>An account JWT this server may use: well formed, signed, of type account, issued by a trusted operator or its signing key.</summary>
    public AccountClaims? Validate(string jwt, out string error)
    {
        var payload = Jwt.TryDecode(jwt, out error);
        if (payload is not { } p) return null;
        var claims = new AccountClaims(p, jwt);
        if (claims.Type != "account" || !Jwt.IsPublicKey(claims.Subject, PrefixByte.Account))
        {
            error = "not an account jwt";
            return null;
        }
        if (!_operators.Any(o => o.Vouches(claims.Issuer)))
        {
            error = "account not trusted by any operator";
            return null;
        }
        if (claims.ImportTokenError() is { } invalid)
        {
            error = $"validation errors: [{invalid}]";
            return null;
        }
        return claims;
    }

    /// <summary>Reads a verified operator JWT (the <c>operator</c> option): self-signed or by its own signing key.</summary>
    public static OperatorClaims? ReadOperator(string jwt, out string error)
    {
        var payload = Jwt.TryDecode(jwt, out error);
        if (payload is not { } p) return null;
        var claims = new OperatorClaims(p, jwt);
        if (claims.Type != "operator" || !Jwt.IsPublicKey(claims.Subject, PrefixByte.Operator))
        {
            error = "not an operator jwt";
            return null;
        }
        if (!claims.Vouches(claims.Issuer))
        {
            error = "operator jwt is not signed by the operator";
            return null;
        }
        return claims;
    }
}
