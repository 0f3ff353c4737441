namespace NatsBroker.Configuration;

/// <summary>
/// <c>authorization { auth_callout { ... } }</c> (server/opts.go AuthCallout, ADR-26): clients other than
/// <see cref="AuthUsers"/> are authorized by a service that answers <c>$SYS.REQ.USER.AUTH</c> in <see cref="Account"/>.
/// </summary>
public sealed class AuthCalloutOptions
{
    /// <summary>Public account nkey that signs the service's responses and the user JWTs in them.</summary>
    public string Issuer { get; set; } = "";
    /// <summary>Account the requests are published in (default <c>$G</c>).</summary>
    public string Account { get; set; } = "$G";
    /// <summary>Users (names or nkeys) authenticated by the configuration, never called out: the service itself.</summary>
    public List<string> AuthUsers { get; set; } = [];
    /// <summary>Public curve key of the service: requests are sealed for it, responses may be sealed for the server.</summary>
    public string? XKey { get; set; }
    /// <summary>Accounts whose configured users are delegated to the service; empty = all.</summary>
    public List<string> AllowedAccounts { get; set; } = [];
}
