using System.Net.Http;
using System.Text.Json;
using System.Text.Json.Serialization;

namespace NatsBroker.Tests.Cluster;

/// <summary>
/// The part of a node's <c>/routez</c> (monitor.go:Routez) the cluster tests read: the node's own id and, per route
/// connection, the peer's id and how the connection came to be. <see cref="Raw"/> keeps the whole body for failure
/// messages. Pooled routes (2.14.5 to 2.14.5) appear once per connection, all with the same <c>remote_id</c>; the
/// pinned <c>$SYS</c> one also carries <c>account</c> (docs/design/routes.md section 6).
/// </summary>
public sealed record Routez
{
    [JsonPropertyName("server_id")]
    public string ServerId { get; init; } = "";

    [JsonPropertyName("num_routes")]
    public int NumRoutes { get; init; }

    [JsonPropertyName("routes")]
    public List<RoutezRoute> Routes { get; init; } = [];

    [JsonIgnore]
    public string Raw { get; init; } = "";

    private static readonly HttpClient s_http = new() { Timeout = TimeSpan.FromSeconds(3) };

    /// <summary>GET http://127.0.0.1:<paramref name="monitorPort"/>/routez, parsed; throws when unreachable or not JSON.</summary>
    public static async Task<Routez> GetAsync(int monitorPort)
    {
        var body = await s_http.GetStringAsync($"http://127.0.0.1:{monitorPort}/routez").ConfigureAwait(false);
        var routez = JsonSerializer.Deserialize<Routez>(body) ?? throw new JsonException("/routez body is null");
        return routez with { Raw = body };
    }

    /// <summary>One line per route: remote_id (abbreviated), did_solicit, is_configured and the pinned account if any.</summary>
    public string Summary() =>
        $"server_id {Abbrev(ServerId)}, num_routes {NumRoutes}: "
        + (Routes.Count == 0 ? "(no routes)" : string.Join("; ", Routes.Select(r =>
            $"{Abbrev(r.RemoteId)} solicit={r.DidSolicit} configured={r.IsConfigured}{(r.Account is { } a ? " account=" + a : "")}")));

    /// <summary>The first 8 characters of a server id: enough to tell the nodes of one cluster apart in a message.</summary>
    public static string Abbrev(string? id) => string.IsNullOrEmpty(id) ? "(none)" : id.Length <= 8 ? id : id[..8];
}

/// <summary>One entry of <c>/routez</c> <c>routes[]</c>.</summary>
public sealed record RoutezRoute
{
    [JsonPropertyName("rid")]
    public long Rid { get; init; }

    [JsonPropertyName("remote_id")]
    public string RemoteId { get; init; } = "";

    [JsonPropertyName("did_solicit")]
    public bool DidSolicit { get; init; }

    [JsonPropertyName("is_configured")]
    public bool IsConfigured { get; init; }

    /// <summary>2.10+: the account of a pinned route (<c>$SYS</c> by default); absent on pooled and no-pool routes.</summary>
    [JsonPropertyName("account")]
    public string? Account { get; init; }

    [JsonPropertyName("ip")]
    public string? Ip { get; init; }

    [JsonPropertyName("port")]
    public int Port { get; init; }
}
