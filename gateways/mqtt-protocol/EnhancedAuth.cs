using Microsoft.Extensions.Logging;
using NatsBroker.Gateways.Link;

namespace NatsBroker.MqttGateway;

/// <summary>
/// The MQTT 5 enhanced authentication methods this gateway process offers (MQTT 5 section 4.12): the built-in
/// SCRAM-SHA-256 (<see cref="ScramSha256Exchange"/>) unless switched off, and the hook's methods
/// (<see cref="HookAuthExchange"/>). One per process, shared by its sessions; a session runs one exchange at a time.
/// </summary>
internal sealed class EnhancedAuth : IDisposable
{
    private readonly EnhancedAuthOptions _options;
    private readonly ScramCredentials? _scram;
    private readonly EnhancedAuthHook? _hook;
    private readonly IReadOnlyDictionary<string, string> _users;
    private readonly ILogger _log;

    public EnhancedAuth(MqttOptions options, GatewayEnvironment environment, ProxySigner signer, ILogger log)
    {
        ArgumentNullException.ThrowIfNull(options);
        _options = options.EnhancedAuth;
        _users = options.Users;
        _log = log;
        if (_options.Scram) _scram = new ScramCredentials(options);
        if (_options.Methods.Count > 0) _hook = new EnhancedAuthHook(options, environment, signer, log);
    }

    /// <summary>A new exchange of <paramref name="method"/>, or null when it is not offered (0x8C Bad authentication method).</summary>
    public IEnhancedAuthExchange? Begin(string method, EnhancedAuthContext context)
    {
        if (_scram is not null && method == ScramSha256Exchange.MethodName) return new ScramSha256Exchange(_scram, context);
        if (_hook is not null && _options.Methods.Contains(method, StringComparer.Ordinal)) return new HookAuthExchange(_hook, method, context, _users, _log);
        return null;
    }

    public void Dispose() => _hook?.Dispose();
}
