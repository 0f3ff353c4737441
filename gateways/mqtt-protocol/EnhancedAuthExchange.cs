namespace NatsBroker.MqttGateway;

/// <summary>What one step of an enhanced authentication exchange decided (MQTT 5 section 4.12).</summary>
internal enum EnhancedAuthOutcome
{
    /// <summary>The server needs more: AUTH 0x18 Continue authentication carrying <see cref="EnhancedAuthStep.Data"/>.</summary>
    Continue,
    /// <summary>Authenticated as <see cref="EnhancedAuthStep.Identity"/>; <see cref="EnhancedAuthStep.Data"/> goes in CONNACK (or AUTH 0x00).</summary>
    Success,
    /// <summary>Refused with <see cref="EnhancedAuthStep.Reason"/> (a CONNACK or DISCONNECT reason code, 0x80 or above).</summary>
    Fail,
}

/// <summary>
/// Who the client proved to be, and so how its link logs in to the core. <see cref="User"/> with
/// <see cref="Password"/>: as a username/password CONNECT of that configured user would (SCRAM-SHA-256 knows the
/// password). <see cref="ActAs"/>: a configured user named by the hook, applied as the link's no_auth_user
/// (the core's ApplyGatewayNoAuthUser: that user's account and permissions). All null: the CONNECT's own
/// credentials, if any, go to the core as without enhanced authentication.
/// </summary>
internal sealed record EnhancedAuthIdentity(string? User, string? Password, string? ActAs)
{
    public static readonly EnhancedAuthIdentity FromConnect = new(null, null, null);

    /// <summary>The name re-authentication must prove again: the link to the core cannot change its user.</summary>
    public string? Name => User ?? ActAs;
}

internal readonly record struct EnhancedAuthStep(EnhancedAuthOutcome Outcome, byte[]? Data, byte Reason, EnhancedAuthIdentity? Identity)
{
    /// <summary>0x87 Not authorized: valid in CONNACK (Table 3-6) and DISCONNECT (Table 3-10).</summary>
    public const byte NotAuthorized = 0x87;
    /// <summary>0x8C Bad authentication method: CONNACK only (DISCONNECT has no such code).</summary>
    public const byte BadAuthenticationMethod = 0x8C;

    public static EnhancedAuthStep Continue(byte[] data) => new(EnhancedAuthOutcome.Continue, data, 0, null);

    public static EnhancedAuthStep Success(byte[]? data, EnhancedAuthIdentity identity) => new(EnhancedAuthOutcome.Success, data, 0, identity);

    public static EnhancedAuthStep Fail(byte reason) => new(EnhancedAuthOutcome.Fail, null, reason, null);
}

/// <summary>Who is authenticating: what a method (the hook's service in particular) may want to know.</summary>
internal sealed record EnhancedAuthContext(string ClientId, string Remote, string? Username, bool Reauthentication);

/// <summary>
/// One run of an authentication method: the data of the CONNECT (or AUTH 0x19) first, then of each client AUTH 0x18,
/// each answered by a step. A method keeps its own state between steps.
/// </summary>
internal interface IEnhancedAuthExchange
{
    string Method { get; }

    /// <summary>Why the last step failed, for the gateway's log (never sent to the client).</summary>
    string? Error { get; }

    ValueTask<EnhancedAuthStep> StepAsync(byte[]? clientData, CancellationToken ct);
}
