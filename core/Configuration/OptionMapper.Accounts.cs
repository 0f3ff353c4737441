namespace NatsBroker.Configuration;

/// <summary>The <c>accounts</c> block (server/opts.go parseAccounts, parseAccountImports/Exports, parseAccountLimits).</summary>
internal sealed partial class OptionMapper
{
    private SourcePosition? _accountsAt;

    private void Accounts(ConfigEntry e)
    {
        _accountsAt = e.KeyPosition;
        var v = e.Value;
        if (v.Kind == ConfigValueKind.Array)
        {
            // accounts: [A, B]: bare names, no users or imports.
            foreach (var item in v.AsArray())
            {
                if (item.Kind != ConfigValueKind.String)
                {
                    Error(item.Position, $"Expected account name to be a string, got {item.Describe()}");
                    continue;
                }
                AddAccount(e, new AccountConfig { Name = item.AsString() });
            }
            return;
        }
        if (!Expect(e, ConfigValueKind.Map, "a map of accounts"))
            return;
        foreach (var acc in v.AsMap())
        {
            var config = new AccountConfig { Name = acc.Key };
            if (acc.Value.Kind != ConfigValueKind.Map)
            {
                Error(acc.KeyPosition, $"Expected map entries for accounts, got {acc.Value.Describe()}");
                continue;
            }
            List<UserConfig>? users = null;
            Permissions? defaults = null;
            foreach (var f in acc.Value.AsMap())
            {
                switch (f.Key.ToLowerInvariant())
                {
                    case "users":
                        users = Users(f);
                        break;
                    case "default_permission" or "default_permissions" or "permissions":
                        defaults = Permissions(f);
                        break;
                    case "exports":
                        Exports(f, config);
                        break;
                    case "imports":
                        Imports(f, config);
                        break;
                    case "limits":
                        AccountLimits(f, config);
                        break;
                    case "mappings" or "maps":
                        Mappings(f, config.Mappings);
                        break;
                    case "nkey":
                        Unsupported(f, "an account");
                        break;
                    case "jetstream":
                        AccountJetStream(f, config);
                        break;
                    default:
                        Unknown(f);
                        break;
                }
            }
            if (!AddAccount(acc, config) || users is null)
                continue;
            var seen = new HashSet<string>(o.Users.Select(u => u.Nkey ?? u.User), StringComparer.Ordinal);
            foreach (var u in users)
            {
                if (!seen.Add(u.Nkey ?? u.User))
                {
                    Error(acc.KeyPosition, $"Duplicate user \"{u.User}\" detected");
                    continue;
                }
                u.Permissions ??= defaults;
                u.Account = config.Name;
                o.Users.Add(u);
            }
        }
    }

    private bool AddAccount(ConfigEntry at, AccountConfig config)
    {
        if (config.Name is "$G")
        {
            Error(at.KeyPosition, "$G is a reserved account name");
            return false;
        }
        if (o.Accounts.Any(a => a.Name == config.Name))
        {
            Error(at.KeyPosition, $"Duplicate Account Entry: {config.Name}");
            return false;
        }
        o.Accounts.Add(config);
        return true;
    }

    /// <summary>An account's <c>jetstream</c>: a bool, "enabled"/"disabled", or a map of limits (opts.go parseJetStreamForAccount).</summary>
    private void AccountJetStream(ConfigEntry e, AccountConfig config)
    {
        var v = e.Value;
        if (JetStreamSwitch(e) is { } on)
        {
            config.JetStream = on ? JetStreamAccountLimits.Dynamic : null;
            return;
        }
        if (v.Kind != ConfigValueKind.Map) return;
        var limits = new JetStreamAccountLimits();
        foreach (var f in v.AsMap())
        {
            long n;
            switch (f.Key.ToLowerInvariant())
            {
                case "max_memory" or "max_mem" or "mem" or "memory":
                    if (Integer(f, out n)) limits = limits with { MaxMemory = n };
                    break;
                case "max_store" or "max_file" or "max_disk" or "store" or "disk":
                    if (Integer(f, out n)) limits = limits with { MaxStore = n };
                    break;
                case "max_streams" or "streams":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) limits = limits with { MaxStreams = (int)n };
                    break;
                case "max_consumers" or "consumers":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) limits = limits with { MaxConsumers = (int)n };
                    break;
                case "max_bytes_required" or "max_stream_bytes" or "max_bytes":
                    if (Bool(f, out bool required)) limits = limits with { MaxBytesRequired = required };
                    break;
                case "mem_max_stream_bytes" or "memory_max_stream_bytes":
                    if (Integer(f, out n)) limits = limits with { MemoryMaxStreamBytes = n };
                    break;
                case "disk_max_stream_bytes" or "store_max_stream_bytes":
                    if (Integer(f, out n)) limits = limits with { StoreMaxStreamBytes = n };
                    break;
                case "max_ack_pending":
                    if (Integer(f, out n, int.MinValue, int.MaxValue)) limits = limits with { MaxAckPending = (int)n };
                    break;
                case "cluster_traffic":
                    break; // no clustering here: where raft traffic goes does not matter
                default:
                    Unknown(f);
                    break;
            }
        }
        config.JetStream = limits;
    }

    private void AccountLimits(ConfigEntry e, AccountConfig config)
    {
        if (!Expect(e, ConfigValueKind.Map, "a map"))
            return;
        foreach (var f in e.Value.AsMap())
        {
            long n;
            switch (f.Key.ToLowerInvariant())
            {
                case "max_connections" or "max_conn":
                    if (Integer(f, out n, -1, int.MaxValue)) config.MaxConnections = (int)n;
                    break;
                case "max_subscriptions" or "max_subs":
                    if (Integer(f, out n, -1, int.MaxValue)) config.MaxSubscriptions = (int)n;
                    break;
                case "max_payload" or "max_pay":
                    if (Integer(f, out n, -1, int.MaxValue)) config.MaxPayload = (int)n;
                    break;
                case "max_leafnodes" or "max_leafs":
                    break; // no leaf nodes here: nothing to limit
                default:
                    Unknown(f);
                    break;
            }
        }
    }

    private void Exports(ConfigEntry e, AccountConfig config)
    {
        if (e.Value.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"Exports should be an array, got {e.Value.Describe()}");
            return;
        }
        foreach (var item in e.Value.AsArray())
        {
            if (item.Kind != ConfigValueKind.Map)
            {
                Error(item.Position, $"Export Items should be a map with type entry, got {item.Describe()}");
                continue;
            }
            var export = new ExportConfig();
            bool hasStream = false, hasService = false, ok = true;
            foreach (var f in item.AsMap())
            {
                switch (f.Key.ToLowerInvariant())
                {
                    case "stream":
                        hasStream = true;
                        if (String(f, out var s)) export.Subject = s; else ok = false;
                        break;
                    case "service":
                        hasService = true;
                        export.IsService = true;
                        if (String(f, out var sv)) export.Subject = sv; else ok = false;
                        break;
                    case "response" or "response_type":
                        if (!String(f, out var rt)) { ok = false; break; }
                        switch (rt.ToLowerInvariant())
                        {
                            case "single" or "singleton": export.ResponseType = ServiceResponseType.Singleton; break;
                            case "stream": export.ResponseType = ServiceResponseType.Streamed; break;
                            case "chunk" or "chunked": export.ResponseType = ServiceResponseType.Chunked; break;
                            default:
                                Error(f.KeyPosition, $"Unknown response type: \"{rt}\"");
                                ok = false;
                                break;
                        }
                        break;
                    case "accounts":
                        export.Accounts = StringList(f, "export accounts");
                        break;
                    case "latency":
                        if (ServiceLatency(f) is { } lat) export.Latency = lat; else ok = false;
                        break;
                    case "threshold" or "response_threshold" or "account_token_position" or "advertise":
                        Unsupported(f, "an export");
                        ok = false;
                        break;
                    default:
                        Unknown(f);
                        ok = false;
                        break;
                }
            }
            if (hasStream && hasService)
            {
                Error(item.Position, "Detected stream and service in the same export");
                continue;
            }
            if (!hasStream && !hasService)
            {
                Error(item.Position, "Export needs either a stream or a service");
                continue;
            }
            if (hasStream && export.Latency is not null)
            {
                Error(item.Position, "Detected latency directive on non-service");
                continue;
            }
            if (ok && !NatsBroker.Subjects.Subject.IsValid(System.Text.Encoding.UTF8.GetBytes(export.Subject)))
            {
                Error(item.Position, $"invalid export subject \"{export.Subject}\"");
                continue;
            }
            if (ok) config.Exports.Add(export);
        }
    }

    private void Imports(ConfigEntry e, AccountConfig config)
    {
        if (e.Value.Kind != ConfigValueKind.Array)
        {
            Error(e.KeyPosition, $"Imports should be an array, got {e.Value.Describe()}");
            return;
        }
        foreach (var item in e.Value.AsArray())
        {
            if (item.Kind != ConfigValueKind.Map)
            {
                Error(item.Position, $"Import Items should be a map with type entry, got {item.Describe()}");
                continue;
            }
            var import = new ImportConfig();
            bool hasStream = false, hasService = false, ok = true;
            foreach (var f in item.AsMap())
            {
                switch (f.Key.ToLowerInvariant())
                {
                    case "stream":
                        hasStream = true;
                        ok &= ImportSource(f, import);
                        break;
                    case "service":
                        hasService = true;
                        import.IsService = true;
                        ok &= ImportSource(f, import);
                        break;
                    case "to":
                        if (String(f, out var to)) import.To = to; else ok = false;
                        break;
                    case "prefix":
                        if (String(f, out var p)) import.Prefix = p; else ok = false;
                        break;
                    case "share":
                        if (Bool(f, out bool share)) import.Share = share; else ok = false;
                        break;
                    default:
                        Unknown(f);
                        ok = false;
                        break;
                }
            }
            if (hasStream == hasService)
            {
                Error(item.Position, hasStream ? "Detected stream and service in the same import" : "Import needs either a stream or a service");
                continue;
            }
            if (import.IsService && import.Prefix is not null)
            {
                Error(item.Position, "Detected prefix in a service import, use to instead");
                continue;
            }
            if (ok) config.Imports.Add(import);
        }
    }

    /// <summary>
    /// opts.go parseServiceLatency: a results subject alone (sampling 100), or <c>{sampling: 1-100 | "N%" | "headers",
    /// subject: s}</c>. Null after reporting an error.
    /// </summary>
    private ServiceLatencyConfig? ServiceLatency(ConfigEntry e)
    {
        var v = e.Value;
        if (v.Kind == ConfigValueKind.String) return new ServiceLatencyConfig(ServiceLatencyConfig.DefaultSampling, v.AsString());
        if (v.Kind != ConfigValueKind.Map)
        {
            Error(e.KeyPosition, $"Expected latency entry to be a map/struct or string, got {v.Describe()}");
            return null;
        }
        int sampling = ServiceLatencyConfig.DefaultSampling;
        string? subject = null;
        foreach (var f in v.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "sampling":
                    long sample;
                    if (f.Value.Kind == ConfigValueKind.Integer) sample = f.Value.AsInteger();
                    else if (f.Value.Kind == ConfigValueKind.String)
                    {
                        string text = f.Value.AsString();
                        if (text.Trim().Equals("headers", StringComparison.OrdinalIgnoreCase))
                        {
                            sampling = ServiceLatencyConfig.Headers;
                            break;
                        }
                        if (!int.TryParse(text.EndsWith('%') ? text[..^1] : text, System.Globalization.NumberStyles.AllowLeadingSign, System.Globalization.CultureInfo.InvariantCulture, out int n))
                        {
                            Error(f.KeyPosition, $"Failed to parse latency sample: strconv.Atoi: parsing \"{text.TrimEnd('%')}\": invalid syntax");
                            return null;
                        }
                        sample = n;
                    }
                    else
                    {
                        Error(f.KeyPosition, $"Expected latency sample to be a string or map/struct, got {f.Value.Describe()}");
                        return null;
                    }
                    if (sample is < 1 or > 100)
                    {
                        Error(f.KeyPosition, "bad sampling percentage, should be 1-100");
                        return null;
                    }
                    sampling = (int)sample;
                    break;
                case "subject":
                    if (f.Value.Kind != ConfigValueKind.String)
                    {
                        Error(f.KeyPosition, $"Expected latency subject to be a string, got {f.Value.Describe()}");
                        return null;
                    }
                    subject = f.Value.AsString();
                    break;
                default:
                    break; // opts.go reads sampling and subject only
            }
        }
        if (subject is null)
        {
            Error(e.KeyPosition, "Latency subject required, but missing");
            return null;
        }
        return new ServiceLatencyConfig(sampling, subject);
    }

    private bool ImportSource(ConfigEntry e, ImportConfig import)
    {
        if (!Expect(e, ConfigValueKind.Map, "a map with account and subject"))
            return false;
        foreach (var f in e.Value.AsMap())
        {
            switch (f.Key.ToLowerInvariant())
            {
                case "account":
                    if (String(f, out var a)) import.Account = a;
                    break;
                case "subject":
                    if (String(f, out var s)) import.Subject = s;
                    break;
                default:
                    Unknown(f);
                    return false;
            }
        }
        if (import.Account.Length == 0 || import.Subject.Length == 0)
        {
            Error(e.KeyPosition, "Import entry requires an account and a subject");
            return false;
        }
        return true;
    }

    /// <summary>After the whole file: imports name existing accounts that export what they import to them.</summary>
    private void ValidateAccounts()
    {
        if (_accountsAt is not { } at) return;
        foreach (var acc in o.Accounts)
        {
            foreach (var x in acc.Exports)
            {
                if (x.Latency is not { } lat) continue;
                // opts.go / accounts.go TrackServiceExportWithSampling's checks, in its order.
                string? why = !NatsBroker.Subjects.Subject.IsValidLiteral(lat.Subject) ? "invalid publish subject"
                    : acc.Exports.Any(e => e.IsService && NatsBroker.Accounts.SubjectSubset.IsSubsetOf(lat.Subject, e.Subject)) ? "invalid publish subject"
                    : o.Operator.NoSystemAccount ? "system account not setup"
                    : x.ResponseType != ServiceResponseType.Singleton ? "bad service response type"
                    : null;
                if (why is not null)
                    Error(at, $"Error adding service latency sampling for \"{x.Subject}\" on subject \"{lat.Subject}\": {why}");
            }
            foreach (var imp in acc.Imports)
            {
                if (imp.To is not null && !NatsBroker.Accounts.SubjectTransform.IsValid(imp.Subject, imp.To))
                {
                    Error(at, $"Error adding {(imp.IsService ? "service" : "stream")} import \"{imp.Subject}\": failed to create mapping transform to \"{imp.To}\": invalid subject");
                    continue;
                }
                var from = o.Accounts.FirstOrDefault(a => a.Name == imp.Account);
                if (from is null)
                {
                    Error(at, $"\"{acc.Name}\" imports from unknown account \"{imp.Account}\"");
                    continue;
                }
                bool exported = from.Exports.Any(x => x.IsService == imp.IsService
                    && NatsBroker.Accounts.SubjectSubset.IsSubsetOf(imp.Subject, x.Subject)
                    && (x.Accounts is null || x.Accounts.Contains(acc.Name)));
                if (!exported)
                    Error(at, $"\"{acc.Name}\": {(imp.IsService ? "service" : "stream")} import of \"{imp.Subject}\" is not authorized by account \"{imp.Account}\"");
            }
        }
    }
}
