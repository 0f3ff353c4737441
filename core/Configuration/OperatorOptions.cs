using NatsBroker.Auth.Jwt;

namespace NatsBroker.Configuration;

/// <summary>
/// Operator (JWT) mode and the system account, from the top-level keys <c>operator</c>, <c>resolver</c>,
/// <c>resolver_preload</c>, <c>system_account</c> and <c>no_system_account</c> (server/opts.go).
/// </summary>
public sealed class OperatorOptions
{
    /// <summary>Verified operator JWTs; non-empty = operator mode (every client authenticates with a user JWT).</summary>
    public List<OperatorClaims> Operators { get; set; } = [];
    public ResolverKind? Resolver { get; set; }
    /// <summary>The directory of the full/cache resolver.</summary>
    public string? ResolverDir { get; set; }
    /// <summary>The cache resolver's maximum number of accounts (nats-server default 1000).</summary>
    public int ResolverLimit { get; set; } = 1000;
    /// <summary>Whether $SYS.REQ.CLAIMS.DELETE may remove accounts (allow_delete).</summary>
    public bool AllowDelete { get; set; }
    /// <summary>resolver_preload: account public key → account JWT.</summary>
    public Dictionary<string, string> Preload { get; set; } = new(StringComparer.Ordinal);
    /// <summary>system_account (an account name, or a public key in operator mode); null = the operator's, else <c>$SYS</c>.</summary>
    public string? SystemAccount { get; set; }
    public bool NoSystemAccount { get; set; }

    public bool Enabled => Operators.Count > 0;

    /// <summary>The system account's name: configured, else the operator JWT's, else <c>$SYS</c>; null when disabled.</summary>
    public string? EffectiveSystemAccount =>
        NoSystemAccount ? null : SystemAccount ?? Operators.Select(o => o.SystemAccount).FirstOrDefault(s => !string.IsNullOrEmpty(s)) ?? "$SYS";
}
