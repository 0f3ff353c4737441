using System.Text.Json;
using System.Text.Json.Nodes;
using NATS.Client.Core;
using NATS.NKeys;
using NatsBroker.Tests.Infrastructure;
using NatsBroker.Tests.Protocol;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Accounts;

/// <summary>
/// Private (token_req) JWT exports: an import carrying an activation token the exporting account (or its signing key,
/// naming it as issuer_account) signed for the importing account is active; an expired token or none leaves the import
/// inactive (server/accounts.go checkActivation); a token that fails jwt Import.Validate (bad signature, other
/// issuer, other account, kind or subject) makes the whole account JWT invalid, so its users are refused
/// (verifyAccountClaims). A newer exporter JWT revoking the activation ends the import. NATS.Net clients on both servers.
/// </summary>
public sealed class ActivationTokenTests(ITestOutputHelper output, ServerPool pool) : ProtocolTestBase(output, pool)
{
    private static readonly KeyPair Op = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Sys = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair SysUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Exporter = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair ExporterSigner = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair ExporterUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly long Now = DateTimeOffset.UtcNow.ToUnixTimeSeconds();

    private enum Outcome { Active, Inactive, AccountRefused }

    /// <summary>One importing account: its key, the token its import carries (null: none), what should happen.</summary>
    private sealed record Case(string Name, KeyPair Account, KeyPair User, string? Token, Outcome Expected, string Kind = "service");

    private static string Activation(KeyPair issuer, string importer, string subject, string kind = "service", string? issuerAccount = null, long? exp = null, long? iat = null)
    {
        var nats = new JsonObject { ["subject"] = subject, ["kind"] = kind };
        if (issuerAccount is not null) nats["issuer_account"] = issuerAccount;
        return JwtFactory.Encode(issuer, importer, "activation", nats, iat, exp);
    }

    private static readonly Case[] Cases = MakeCases();

    private static Case[] MakeCases()
    {
        Case Make(string name, Outcome expected, Func<KeyPair, string?> token, string kind = "service")
        {
            var acc = KeyPair.CreatePair(PrefixByte.Account);
            return new Case(name, acc, KeyPair.CreatePair(PrefixByte.User), token(acc), expected, kind);
        }
        var stranger = KeyPair.CreatePair(PrefixByte.Account);
        return
        [
            Make("signed by the exporter", Outcome.Active, a => Activation(Exporter, a.GetPublicKey(), "private.svc")),
            Make("token for a wildcard", Outcome.Active, a => Activation(Exporter, a.GetPublicKey(), "private.>")),
            Make("signed by the exporter's signing key", Outcome.Active, a => Activation(ExporterSigner, a.GetPublicKey(), "private.svc", issuerAccount: Exporter.GetPublicKey())),
            Make("stream import", Outcome.Active, a => Activation(Exporter, a.GetPublicKey(), "private.stream", kind: "stream"), kind: "stream"),
            Make("signing key without issuer_account", Outcome.AccountRefused, a => Activation(ExporterSigner, a.GetPublicKey(), "private.svc")),
            Make("expired", Outcome.Inactive, a => Activation(Exporter, a.GetPublicKey(), "private.svc", exp: Now - 60, iat: Now - 120)),
            Make("for another account", Outcome.AccountRefused, _ => Activation(Exporter, stranger.GetPublicKey(), "private.svc")),
            Make("signed by another account", Outcome.AccountRefused, a => Activation(stranger, a.GetPublicKey(), "private.svc")),
            Make("bad signature", Outcome.AccountRefused, a =>
            {
                string t = Activation(Exporter, a.GetPublicKey(), "private.svc");
                return t[..^2] + (t[^2] == 'A' ? 'B' : 'A') + t[^1];
            }),
            Make("for another subject", Outcome.AccountRefused, a => Activation(Exporter, a.GetPublicKey(), "private.other")),
            Make("of the wrong kind", Outcome.AccountRefused, a => Activation(Exporter, a.GetPublicKey(), "private.svc", kind: "stream")),
            Make("no token", Outcome.Inactive, _ => null),
        ];
    }

    private static JsonObject ExporterClaims(JsonObject? revocations = null)
    {
        var svc = new JsonObject { ["name"] = "svc", ["subject"] = "private.svc", ["type"] = "service", ["token_req"] = true };
        if (revocations is not null) svc["revocations"] = revocations;
        return new JsonObject
        {
            ["signing_keys"] = new JsonArray(ExporterSigner.GetPublicKey()),
            ["exports"] = new JsonArray(
                svc,
                new JsonObject { ["name"] = "stream", ["subject"] = "private.stream", ["type"] = "stream", ["token_req"] = true }),
        };
    }

    private static string ImporterJwt(Case c, long? iat = null, string? localSubject = "local.svc")
    {
        var import = new JsonObject
        {
            ["name"] = "imp", ["account"] = Exporter.GetPublicKey(), ["type"] = c.Kind,
            ["subject"] = c.Kind == "service" ? "private.svc" : "private.stream",
        };
        if (c.Kind == "service" && localSubject is not null) import["local_subject"] = localSubject;
        if (c.Token is not null) import["token"] = c.Token;
        return JwtFactory.Account(Op, c.Account, new JsonObject { ["imports"] = new JsonArray(import) }, iat, name: c.Name);
    }

    private static readonly string Config = $$"""
        operator: {{JwtFactory.Operator(Op, Sys.GetPublicKey())}}
        system_account: {{Sys.GetPublicKey()}}
        resolver: MEMORY
        resolver_preload: {
          {{Sys.GetPublicKey()}}: {{JwtFactory.Account(Op, Sys, name: "SYS")}}
          {{Exporter.GetPublicKey()}}: {{JwtFactory.Account(Op, Exporter, ExporterClaims(), name: "EXP")}}
        {{string.Join("\n", Cases.Select(c => $"  {c.Account.GetPublicKey()}: {ImporterJwt(c)}"))}}
        }
        """;

    private static NatsConnection Open(ServerProcess s, KeyPair account, KeyPair user) => new(new NatsOpts
    {
        Url = s.Url,
        AuthOpts = new NatsAuthOpts { Jwt = JwtFactory.User(account, user), Seed = user.GetSeed() },
    });

    /// <summary>A responder in the exporting account answering "private.svc" until cancelled.</summary>
    private static async Task<Task> ServeAsync(NatsConnection exporter, CancellationToken ct)
    {
        var sub = await exporter.SubscribeCoreAsync<string>("private.svc", cancellationToken: ct);
        await exporter.PingAsync(ct);
        return Task.Run(async () =>
        {
            await using (sub)
            {
                await foreach (var m in sub.Msgs.ReadAllAsync(ct))
                    if (m.ReplyTo is not null) await m.ReplyAsync("ok", cancellationToken: ct);
            }
        }, ct);
    }

    /// <summary>Whether a request through the importer's "local.svc" is answered (an inactive import: no responders, or no answer at all).</summary>
    private static async Task<bool> Answered(NatsConnection importer, CancellationToken ct, string subject = "local.svc")
    {
        try
        {
            var r = await importer.RequestAsync<string, string>(subject, "hi", replyOpts: new NatsSubOpts { Timeout = TimeSpan.FromSeconds(2) }, cancellationToken: ct);
            return r.Data == "ok";
        }
        catch (NatsNoRespondersException)
        {
            return false;
        }
        catch (NatsNoReplyException)
        {
            return false;
        }
    }

    /// <summary>Whether a message published on the exporter's "private.stream" reaches the importer.</summary>
    private static async Task<bool> Streamed(NatsConnection exporter, NatsConnection importer, CancellationToken ct)
    {
        await using var sub = await importer.SubscribeCoreAsync<string>("private.stream", cancellationToken: ct);
        await importer.PingAsync(ct);
        await exporter.PublishAsync("private.stream", "tick", cancellationToken: ct);
        await exporter.PingAsync(ct);
        using var wait = CancellationTokenSource.CreateLinkedTokenSource(ct);
        wait.CancelAfter(TimeSpan.FromSeconds(1));
        try
        {
            return (await sub.Msgs.ReadAsync(wait.Token)).Data == "tick";
        }
        catch (OperationCanceledException) when (!ct.IsCancellationRequested)
        {
            return false;
        }
    }

    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task Only_a_valid_activation_token_activates_an_import_of_a_private_export(ServerKind kind)
    {
        var s = await SharedAsync(kind, Config);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await using var exporter = Open(s, Exporter, ExporterUser);
        await exporter.ConnectAsync();
        var serving = await ServeAsync(exporter, cts.Token);
        List<string> wrong = [];
        foreach (var c in Cases)
        {
            await using var importer = Open(s, c.Account, c.User);
            Outcome got;
            try
            {
                await importer.ConnectAsync();
                bool works = c.Kind == "service" ? await Answered(importer, cts.Token) : await Streamed(exporter, importer, cts.Token);
                got = works ? Outcome.Active : Outcome.Inactive;
            }
            catch (NatsException e) when (e.InnerException?.Message.Contains("Authorization Violation", StringComparison.Ordinal) == true)
            {
                got = Outcome.AccountRefused;
            }
            Output.WriteLine($"{c.Name}: {got}");
            if (got != c.Expected) wrong.Add($"{c.Name}: {got}, expected {c.Expected}");
        }
        Assert.Empty(wrong);
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
    }

    /// <summary>
    /// An import authorized by an activation with an expiry stops when the activation expires (accounts.go
    /// activationExpired). The import keeps the exported subject: nats-server finds the expired import by that
    /// subject, so one with another local subject keeps working after expiry there (ours ends it too).
    /// </summary>
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task An_import_ends_when_its_activation_expires(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, Output);
        var importer = KeyPair.CreatePair(PrefixByte.Account);
        var importerUser = KeyPair.CreatePair(PrefixByte.User);
        long now = DateTimeOffset.UtcNow.ToUnixTimeSeconds();
        var c = new Case("expiring", importer, importerUser, Activation(Exporter, importer.GetPublicKey(), "private.svc", exp: now + 4), Outcome.Active);
        string config = $$"""
            operator: {{JwtFactory.Operator(Op, Sys.GetPublicKey())}}
            system_account: {{Sys.GetPublicKey()}}
            resolver: MEMORY
            resolver_preload: {
              {{Sys.GetPublicKey()}}: {{JwtFactory.Account(Op, Sys, name: "SYS")}}
              {{Exporter.GetPublicKey()}}: {{JwtFactory.Account(Op, Exporter, ExporterClaims(), name: "EXP")}}
              {{importer.GetPublicKey()}}: {{ImporterJwt(c, localSubject: null)}}
            }
            """;
        await using var s = await OwnAsync(kind, config);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        await using var exp = Open(s, Exporter, ExporterUser);
        var serving = await ServeAsync(exp, cts.Token);
        await using var imp = Open(s, importer, importerUser);
        Assert.True(await Answered(imp, cts.Token, "private.svc"));
        // Wait past the expiry (whole seconds), then the import is gone.
        while (DateTimeOffset.UtcNow.ToUnixTimeSeconds() <= now + 5) await Task.Delay(200, cts.Token);
        Assert.False(await Answered(imp, cts.Token, "private.svc"));
        cts.Cancel();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
    }

    /// <summary>
    /// The exporter's newer JWT, pushed with <c>$SYS.REQ.ACCOUNT.&lt;acc&gt;.CLAIMS.UPDATE</c>, revokes the importer's
    /// activation on the export (revocations: importer → a time at or after the token's iat): the import stops working.
    /// </summary>
    [SkippableTheory, MemberData(nameof(Servers.Both), MemberType = typeof(Servers))]
    public async Task A_claims_update_revoking_the_activation_ends_the_import(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, Output);
        string dir = Directory.CreateTempSubdirectory("jwt").FullName;
        try
        {
            var importer = KeyPair.CreatePair(PrefixByte.Account);
            var importerUser = KeyPair.CreatePair(PrefixByte.User);
            var c = new Case("revocable", importer, importerUser, Activation(Exporter, importer.GetPublicKey(), "private.svc", iat: Now - 30), Outcome.Active);
            string config = $$"""
                operator: {{JwtFactory.Operator(Op, Sys.GetPublicKey())}}
                system_account: {{Sys.GetPublicKey()}}
                resolver: { type: full, dir: "{{dir}}" }
                resolver_preload: {
                  {{Sys.GetPublicKey()}}: {{JwtFactory.Account(Op, Sys, name: "SYS")}}
                  {{Exporter.GetPublicKey()}}: {{JwtFactory.Account(Op, Exporter, ExporterClaims(), iat: Now - 20, name: "EXP")}}
                  {{importer.GetPublicKey()}}: {{ImporterJwt(c, Now - 20)}}
                }
                """;
            await using var s = await OwnAsync(kind, config);
            using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(60));
            await using var exp = Open(s, Exporter, ExporterUser);
            var serving = await ServeAsync(exp, cts.Token);
            await using var imp = Open(s, importer, importerUser);
            await using var sys = Open(s, Sys, SysUser);
            Assert.True(await Answered(imp, cts.Token));

            string revoking = JwtFactory.Account(Op, Exporter, ExporterClaims(new JsonObject { [importer.GetPublicKey()] = Now - 10 }), iat: Now, name: "EXP");
            var reply = await sys.RequestAsync<string, string>($"$SYS.REQ.ACCOUNT.{Exporter.GetPublicKey()}.CLAIMS.UPDATE", revoking, cancellationToken: cts.Token);
            Output.WriteLine(reply.Data);
            Assert.Equal(200, JsonDocument.Parse(reply.Data!).RootElement.GetProperty("data").GetProperty("code").GetInt32());
            Assert.False(await Answered(imp, cts.Token));
            cts.Cancel();
            await Assert.ThrowsAnyAsync<OperationCanceledException>(() => serving);
        }
        finally
        {
            Directory.Delete(dir, true);
        }
    }
}
