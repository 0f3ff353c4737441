using System.Text;
using System.Text.Json;
using NATS.Client.Core;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.JetStream;

/// <summary>How a case is compared with nats-server 2.9.10, which 2.14.5 (the reference) differs from in places.</summary>
public enum Against29
{
    /// <summary>Errors identical (code, err_code, description); every field 2.9.10 answers is in ours, config values equal.</summary>
    Same,
    /// <summary>Known version difference in the text: code and err_code must still agree.</summary>
    Codes,
    /// <summary>Known version difference in the verdict itself: 2.9.10 must answer differently from us (so the note stays true).</summary>
    Differs,
}

/// <summary>One request of a differential script (a plain publish when <see cref="Publish"/>).</summary>
public sealed record JsExchange(string Name, string Subject, string Body)
{
    public Against29 On29 { get; init; } = Against29.Same;

    /// <summary>Why 2.9.10 differs (required unless <see cref="On29"/> is Same).</summary>
    public string? Why29 { get; init; }

    /// <summary>A consumer whose name the server picks: its name is not compared.</summary>
    public bool RandomName { get; init; }

    /// <summary>Published without waiting for an answer (messages for later requests).</summary>
    public bool Publish { get; init; }

    /// <summary>Milliseconds to wait before the request (for what servers do in the background: sourcing).</summary>
    public int DelayMs { get; init; }

    /// <summary>Headers sent with the message ("Key: value" pairs), e.g. Nats-Rollup on a publish.</summary>
    public (string Key, string Value)[]? Headers { get; init; }
}

/// <summary>
/// Runs a script of raw $JS.API requests against ours, nats-server 2.14.5 or 2.9.10 and compares the answers.
/// Against 2.14.5 the comparison is of the whole answer: every JSON field and value, both ways, except what
/// cannot repeat (times, server ids, random names, the version string).
/// </summary>
internal static class JsApiScript
{
    public const string NoReply = "<no reply>";
    public const string NoResponders = "<no responders>";

    public static async Task<ServerProcess> StartAsync(string version, ITestOutputHelper output)
    {
        var dir = Path.Combine(Path.GetTempPath(), "natsbroker-js-tests", Guid.NewGuid().ToString("N"));
        var options = new ServerStartOptions { ExtraArgs = ["-js", "-sd", dir] };
        return version switch
        {
            "ours" => await ServerProcess.StartAsync(ServerKind.Ours, options, output),
            "2.14.5" => await ServerProcess.StartAsync(ServerKind.Go, options with { GoBinary = Prerequisites.RequireOracle214(output) }, output),
            "2.9.10" => await ServerProcess.StartAsync(ServerKind.Go, options with { GoBinary = Prerequisites.RequireGoServer(output) }, output),
            _ => throw new ArgumentException(version),
        };
    }

    /// <summary>Skips (Prerequisites) unless <paramref name="version"/>'s binary and ours are there.</summary>
    public static void Require(string version, ITestOutputHelper output)
    {
        if (version == "2.14.5") Prerequisites.RequireOracle214(output);
        else Prerequisites.RequireGoServer(output);
        Prerequisites.RequireServer(ServerKind.Ours, output);
    }

    public static async Task<List<string>> RunAsync(string version, IReadOnlyList<JsExchange> script, ITestOutputHelper output)
    {
        await using var server = await StartAsync(version, output);
        await using var nats = new NatsConnection(new NatsOpts { Url = server.Url });
        await nats.ConnectAsync();
        var answers = new List<string>();
        foreach (var e in script)
        {
            if (e.DelayMs > 0) await Task.Delay(e.DelayMs);
            if (e.Publish)
            {
                await nats.PublishAsync(e.Subject, Encoding.UTF8.GetBytes(e.Body));
                await nats.PingAsync();
                answers.Add("");
                continue;
            }
            answers.Add(await RequestAsync(nats, e.Subject, e.Body, e.Headers));
        }
        return answers;
    }

    public static async Task<string> RequestAsync(NatsConnection nats, string subject, string body, (string Key, string Value)[]? headers = null)
    {
        try
        {
            NatsHeaders? h = null;
            if (headers is not null)
            {
                h = new NatsHeaders();
                foreach (var (k, v) in headers) h.Add(k, v);
            }
            var reply = await nats.RequestAsync<byte[], byte[]>(subject, Encoding.UTF8.GetBytes(body), headers: h,
                replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(2) });
            if (reply.Headers?.Code is > 0 and var code && (reply.Data?.Length ?? 0) == 0) return $"<status {code} {reply.Headers.MessageText}>";
            return Encoding.UTF8.GetString(reply.Data ?? []);
        }
        catch (NatsNoRespondersException)
        {
            return NoResponders;
        }
        catch (NatsNoReplyException)
        {
            return NoReply;
        }
    }

    /// <summary>Every difference between ours and the reference's answers, one line each.</summary>
    public static List<string> Compare(string version, IReadOnlyList<JsExchange> script, List<string> ours, List<string> reference, ITestOutputHelper output)
    {
        var problems = new List<string>();
        for (int i = 0; i < script.Count; i++)
        {
            var e = script[i];
            if (e.Publish) continue;
            output.WriteLine($"{e.Name}: {e.Subject} {e.Body}\n  ours: {ours[i]}\n  {version}: {reference[i]}");
            if (version == "2.14.5") CompareExactly(e, ours[i], reference[i], problems);
            else CompareWith29(e, ours[i], reference[i], problems);
        }
        return problems;
    }

    private static bool TryParse(string text, out JsonDocument? doc)
    {
        doc = null;
        if (text.Length == 0 || text[0] != '{') return false;
        try
        {
            doc = JsonDocument.Parse(text);
            return true;
        }
        catch (JsonException)
        {
            return false;
        }
    }

    private static void CompareExactly(JsExchange e, string ours, string reference, List<string> problems)
    {
        if (!TryParse(reference, out var refDoc) || !TryParse(ours, out var ourDoc))
        {
            if (ours != reference) problems.Add($"{e.Name}: ours {ours}, nats-server {reference}");
            return;
        }
        using (refDoc)
        using (ourDoc)
        {
            var a = Flatten(ourDoc!.RootElement, e);
            var b = Flatten(refDoc!.RootElement, e);
            foreach (var (k, v) in b)
            {
                if (!a.TryGetValue(k, out var o)) problems.Add($"{e.Name}: {k} missing in ours (nats-server {v})");
                else if (o != v) problems.Add($"{e.Name}: {k} ours {o}, nats-server {v}");
            }
            foreach (var (k, v) in a)
                if (!b.ContainsKey(k)) problems.Add($"{e.Name}: {k} only in ours ({v})");
        }
    }

    private static void CompareWith29(JsExchange e, string ours, string reference, List<string> problems)
    {
        bool parsed = TryParse(reference, out var refDoc) & TryParse(ours, out var ourDoc);
        using (refDoc)
        using (ourDoc)
        {
            if (!parsed)
            {
                bool same = ours == reference;
                if (e.On29 == Against29.Differs ? same : !same) problems.Add($"{e.Name}: ours {ours}, 2.9.10 {reference} ({e.On29})");
                return;
            }
            var go = refDoc!.RootElement;
            var us = ourDoc!.RootElement;
            bool goErr = go.TryGetProperty("error", out var ge), ourErr = us.TryGetProperty("error", out var oe);
            string[] fields = e.On29 == Against29.Same ? ["code", "err_code", "description"] : ["code", "err_code"];
            bool differs = goErr != ourErr;
            if (!differs && goErr)
            {
                foreach (var f in fields)
                {
                    string g = ge.TryGetProperty(f, out var gv) ? gv.ToString() : "<none>";
                    string o = oe.TryGetProperty(f, out var ov) ? ov.ToString() : "<none>";
                    if (g != o)
                    {
                        differs = true;
                        if (e.On29 != Against29.Differs) problems.Add($"{e.Name}: error.{f} ours {o}, 2.9.10 {g}");
                    }
                }
            }
            else if (!differs)
            {
                var before = problems.Count;
                CompareKeys(e.Name, "", us, go, problems);
                differs = problems.Count > before;
                if (e.On29 == Against29.Differs) problems.RemoveRange(before, problems.Count - before);
            }
            else if (e.On29 != Against29.Differs)
            {
                problems.Add($"{e.Name}: error on one side only (ours {ours}, 2.9.10 {reference})");
            }
            if (e.On29 == Against29.Differs && !differs) problems.Add($"{e.Name}: marked as a 2.9.10 difference ({e.Why29}) but 2.9.10 now answers as we do");
        }
    }

    /// <summary>Every field 2.9.10 answers must be in ours; config values and the type must be equal.</summary>
    private static void CompareKeys(string name, string path, JsonElement ours, JsonElement go, List<string> problems)
    {
        if (go.ValueKind != JsonValueKind.Object || ours.ValueKind != JsonValueKind.Object) return;
        foreach (var p in go.EnumerateObject())
        {
            if (!ours.TryGetProperty(p.Name, out var o))
            {
                problems.Add($"{name}: field {path}{p.Name} missing in ours");
                continue;
            }
            if (path.StartsWith("config.", StringComparison.Ordinal) || (path.Length == 0 && p.Name == "type"))
            {
                if (p.Value.ValueKind != JsonValueKind.Object && p.Value.ValueKind != JsonValueKind.Array && p.Value.ToString() != o.ToString())
                    problems.Add($"{name}: {path}{p.Name} ours {o}, 2.9.10 {p.Value}");
            }
            CompareKeys(name, path + p.Name + ".", o, p.Value, problems);
        }
    }

    /// <summary>Path → JSON text of every leaf, with the values that cannot repeat masked (their presence stays).</summary>
    private static Dictionary<string, string> Flatten(JsonElement root, JsExchange e)
    {
        var map = new Dictionary<string, string>(StringComparer.Ordinal);
        void Walk(JsonElement v, string path)
        {
            switch (v.ValueKind)
            {
                case JsonValueKind.Object:
                    bool any = false;
                    foreach (var p in v.EnumerateObject())
                    {
                        any = true;
                        Walk(p.Value, path.Length == 0 ? p.Name : path + "." + p.Name);
                    }
                    if (!any) map[path] = "{}";
                    break;
                case JsonValueKind.Array:
                    int i = 0;
                    foreach (var x in v.EnumerateArray()) Walk(x, $"{path}[{i++}]");
                    if (i == 0) map[path] = "[]";
                    break;
                default:
                    map[path] = Volatile(path, e) ? "<varies>" : v.GetRawText();
                    break;
            }
        }
        Walk(root, "");
        return map;
    }

    private static bool Volatile(string path, JsExchange e)
    {
        string last = path[(path.LastIndexOf('.') + 1)..];
        // "active": nanoseconds since a mirror or source was last active (timing; ours also says 0 where 2.14.5 says -1
        // before the first fetch: JsStream.Sources.cs, outside this test's scope).
        if (last is "created" or "ts" or "last_active" or "first_ts" or "last_ts" or "active") return true;
        if (path.EndsWith("metadata._nats.ver", StringComparison.Ordinal) || path.EndsWith("cluster.leader", StringComparison.Ordinal)) return true;
        // A stored message's time (STREAM.MSG.GET) is when each server stored it.
        if (path == "message.time") return true;
        // A restore's deliver subject ends in a random token.
        return e.RandomName && (path == "name" || path == "config.name" || path == "deliver_subject");
    }
}
