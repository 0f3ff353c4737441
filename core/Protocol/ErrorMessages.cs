namespace NatsBroker.Protocol;

/// <summary>The texts nats-server puts in <c>-ERR '...'</c> (server/client.go, server/errors.go).</summary>
public static class ErrorMessages
{
    public const string UnknownProtocolOperation = "Unknown Protocol Operation";
    public const string MaxControlLineExceeded = "maximum control line exceeded";
    public const string MaxPayloadViolation = "Maximum Payload Violation";
    public const string AuthorizationViolation = "Authorization Violation";
    public const string AuthenticationTimeout = "Authentication Timeout";
    public const string InvalidSubject = "Invalid Subject";
    public const string InvalidPublishSubject = "Invalid Publish Subject";
    public const string StaleConnection = "Stale Connection";
    public const string SlowConsumer = "Slow Consumer";
    public const string MaxConnectionsExceeded = "maximum connections exceeded";
    public const string MaxSubscriptionsExceeded = "maximum subscriptions exceeded";
    public const string InvalidClientProtocol = "invalid client protocol";
    public const string NoRespondersRequiresHeaders = "no responders requires headers support";
}
