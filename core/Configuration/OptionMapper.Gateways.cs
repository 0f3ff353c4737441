namespace NatsBroker.Configuration;

/// <summary>
/// The keys that concern protocol gateway processes (docs: gateways/README.md; the name: docs/architecture.md
/// "Glossary"). The core reads only what it needs: that a <c>tls {}</c> block exists (the tls-terminator validates
/// and serves it), <c>proxies</c> (nats-server 2.12, ADR-55: which proxy nkeys it trusts) and
/// <c>protocol_gateways</c> (ours: whether it starts the protocol gateways itself). nats-server's own
/// <c>gateway {}</c> (super-cluster gateways) is a different thing, still refused as unsupported.
/// </summary>
internal sealed partial class OptionMapper
{
    private void GatewayBlock(string key, ConfigEntry e)
    {
        switch (key)
        {
            case "tls":
                if (Expect(e, ConfigValueKind.Map, "a map"))
                    o.TlsConfigured = true;
                break;
            case "websocket" or "ws":
                // Served by the websocket gateway (gateways/websocket), which validates the block when it starts;
                // the core reads the block's own auth, since it authenticates the gateway's clients.
                if (Expect(e, ConfigValueKind.Map, "a map"))
                {
                    o.WebSocketConfigured = true;
                    WebSocketAuth(e);
                    (o.WebSocketHost, o.WebSocketPort) = GatewayListen(e, o.WebSocketHost, o.WebSocketPort);
                }
                break;
            case "mqtt":
                // Served by the MQTT gateway (gateways/mqtt), which validates the block when it starts.
                if (Expect(e, ConfigValueKind.Map, "a map"))
                {
                    o.MqttConfigured = true;
                    (o.MqttHost, o.MqttPort) = GatewayListen(e, o.MqttHost, o.MqttPort);
                }
                break;
            case "proxies":
                Proxies(e);
                break;
            case "protocol_gateways":
                ProtocolGateways(e);
                break;
            case "gateways":
                // The key's first name, kept as an alias: same behaviour, one warning at start-up naming the new key,
                // because beside nats-server's "gateway {}" (super-cluster gateways) "gateways {}" reads as its plural.
                Warnings.Add(new ConfigError(e.KeyPosition,
                    "\"gateways {}\" is the old name of \"protocol_gateways {}\" (nats-server's \"gateway {}\" is something else: super-cluster gateways); rename it"));
                ProtocolGateways(e);
                break;
        }
    }

    /// <summary>
    /// A gateway block's address as the gateway reads it (gateways/link ListenKeys: host/net, port, listen as a port
    /// or "host:port"; later keys win). Values of the wrong kind are left to the gateway, which reports them.
    /// </summary>
    private static (string Host, int Port) GatewayListen(ConfigEntry block, string host, int port)
    {
        foreach (var f in block.Value.AsMap())
        {
            var v = f.Value;
            switch (f.Key.ToLowerInvariant())
            {
                case "host" or "net" when v.Kind == ConfigValueKind.String:
                    host = v.AsString();
                    break;
                case "port" when v.Kind == ConfigValueKind.Integer:
                    port = (int)v.AsInteger();
                    break;
                case "listen" when v.Kind == ConfigValueKind.Integer:
                    port = (int)v.AsInteger();
                    break;
                case "listen" when v.Kind == ConfigValueKind.String:
                    var hp = v.AsString();
                    int colon = hp.LastIndexOf(':');
                    if (colon >= 0 && int.TryParse(hp.AsSpan(colon + 1), System.Globalization.NumberStyles.Integer, System.Globalization.CultureInfo.InvariantCulture, out int lp))
                    {
                        if (colon > 0) host = hp[..colon];
                        port = lp;
                    }
                    break;
            }
        }
        return (host, port);
    }

    /// <summary>
    /// <c>websocket { authorization { user|username, pass|password, token, timeout } no_auth_user }</c>
    /// (server/opts.go parseWebsocket, parseSimpleAuth); other keys of the block are the gateway's to check.
    /// </summary>
    private void WebSocketAuth(ConfigEntry block)
    {
        string? user = null, pass = null, token = null, noAuthUser = null;
        TimeSpan? timeout = null;
        foreach (var f in block.Value.AsMap())
        {
            string key = f.Key.ToLowerInvariant();
            if (key == "no_auth_user")
            {
                if (String(f, out var s)) noAuthUser = s;
                continue;
            }
            if (key is not ("authorization" or "authentication") || !Expect(f, ConfigValueKind.Map, "a map")) continue;
            foreach (var a in f.Value.AsMap())
            {
                switch (a.Key.ToLowerInvariant())
                {
                    case "user" or "username":
                        if (String(a, out var u)) user = u;
                        break;
                    case "pass" or "password":
                        if (String(a, out var p)) pass = p;
                        break;
                    case "token":
                        if (String(a, out var t)) token = t;
                        break;
                    case "timeout":
                        // parseSimpleAuth: seconds as an integer or a float.
                        if (a.Value.Kind == ConfigValueKind.Integer) timeout = TimeSpan.FromSeconds(a.Value.AsInteger());
                        else if (a.Value.Kind == ConfigValueKind.Float) timeout = TimeSpan.FromSeconds(a.Value.AsFloat());
                        else Error(a.KeyPosition, $"invalid value for \"{a.Key}\": expected a number of seconds, got {a.Value.Describe()}");
                        break;
                    default:
                        Unknown(a);
                        break;
                }
            }
        }
        var auth = new ListenerAuthOverride(user, pass, token, noAuthUser, timeout);
        o.WebSocketAuth = auth.IsOverride ? auth : null;
        o.WebSocketAuthTimeout = timeout;
        _webSocketAt = block.KeyPosition;
    }

    private SourcePosition? _webSocketAt;

    /// <summary>
    /// After the whole file (server/websocket.go validateWebsocketOptions): the block's user or token cannot sit
    /// beside a users or nkeys list, whose entries already say who may log in.
    /// </summary>
    private void ValidateWebSocketAuth()
    {
        if (o.WebSocketAuth is not { } ws || _webSocketAt is not { } at || o.Users.Count == 0) return;
        if (!string.IsNullOrEmpty(ws.Username)) Error(at, "websocket authentication username not compatible with presence of users/nkeys");
        if (!string.IsNullOrEmpty(ws.Token)) Error(at, "websocket authentication token not compatible with presence of users/nkeys");
    }

    /// <summary>server/opts.go parseProxies / parseProxiesTrusted: <c>trusted</c> is an array of <c>{key: ...}</c> maps.</summary>
    private void Proxies(ConfigEntry e)
    {
        if (!Expect(e, ConfigValueKind.Map, "a map")) return;
        foreach (var f in e.Value.AsMap())
        {
            if (!f.Key.Equals("trusted", StringComparison.OrdinalIgnoreCase))
            {
                Unknown(f);
                continue;
            }
            if (!Expect(f, ConfigValueKind.Array, "an array")) continue;
            foreach (var t in f.Value.AsArray())
            {
                if (t.Kind != ConfigValueKind.Map)
                {
                    Error(t.Position, $"expected proxies' trusted entry to be a map/struct, got {t.Describe()}");
                    continue;
                }
                foreach (var k in t.AsMap())
                {
                    if (!(k.Key.Equals("key", StringComparison.OrdinalIgnoreCase) || k.Key.Equals("public_key", StringComparison.OrdinalIgnoreCase)))
                    {
                        Unknown(k);
                        continue;
                    }
                    if (!String(k, out var pub)) continue;
                    if (!IsPublicNkey(pub))
                    {
                        Error(k.KeyPosition, $"invalid proxy key \"{pub}\"");
                        continue;
                    }
                    o.TrustedProxies.Add(pub);
                }
            }
        }
    }

    private static bool IsPublicNkey(string pub)
    {
        if (pub.Length != 56) return false;
        try
        {
            using var kp = NATS.NKeys.KeyPair.FromPublicKey(pub);
            return true;
        }
        catch (Exception ex) when (ex is NATS.NKeys.NKeysException or ArgumentException or FormatException)
        {
            return false;
        }
    }

    /// <summary>
    /// Ours: <c>protocol_gateways { managed: supervised | external, seed_file: "..." }</c> (alias: <c>gateways</c>).
    /// <c>seed_file</c> is read by the gateway processes (their proxy nkey seed when run by systemd, gateways/link
    /// GatewayEnvironment); the core only checks it is a string.
    /// </summary>
    private void ProtocolGateways(ConfigEntry e)
    {
        if (!Expect(e, ConfigValueKind.Map, "a map")) return;
        foreach (var f in e.Value.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "managed":
                    if (!String(f, out var m)) break;
                    if (m.Equals("external", StringComparison.OrdinalIgnoreCase)) o.GatewaysManagedExternally = true;
                    else if (m.Equals("supervised", StringComparison.OrdinalIgnoreCase)) o.GatewaysManagedExternally = false;
                    else Error(f.KeyPosition, $"invalid value for \"managed\": expected \"supervised\" or \"external\", got \"{m}\"");
                    break;
                case "seed_file":
                    String(f, out _);
                    break;
                default:
                    Unknown(f);
                    break;
            }
        }
    }
}
