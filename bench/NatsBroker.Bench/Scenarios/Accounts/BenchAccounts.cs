using System.Globalization;
using System.Text;
using NATS.NKeys;
using NatsBroker.Tests.Accounts;

namespace NatsBroker.Bench.Scenarios.Accounts;

/// <summary>
/// The configs of the accounts rows, in nats-server's format (2.9.10 reads them): accounts with users and
/// exports/imports, nkey users, and operator mode with a MEMORY resolver and JWTs made with NATS.NKeys.
/// </summary>
internal static class BenchAccounts
{
    /// <summary>The subscribers' accounts of the stream-import fan-out (one each, all importing from A).</summary>
    public const int FanOutAccounts = 4;

    private static readonly KeyPair NkeyUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly KeyPair Operator = KeyPair.CreatePair(PrefixByte.Operator);
    private static readonly KeyPair Account = KeyPair.CreatePair(PrefixByte.Account);
    private static readonly KeyPair JwtUser = KeyPair.CreatePair(PrefixByte.User);
    private static readonly string UserJwt = JwtFactory.User(Account, JwtUser);

    /// <summary>
    /// A exports the request/reply rows' service (<c>bench.rr.&gt;</c>) and the pub/sub rows' stream (<c>bench.ps.&gt;</c>);
    /// B imports the service; C1..C4 import the stream. Each account has one user named after it (lower case).
    /// </summary>
    public static string ImportsConfig
    {
        get
        {
            var sb = new StringBuilder("accounts {\n");
            sb.Append("  A: { users: [ { user: a, password: bench } ], exports: [ { service: \"bench.rr.>\" }, { stream: \"bench.ps.>\" } ] }\n");
            sb.Append("  B: { users: [ { user: b, password: bench } ], imports: [ { service: { account: A, subject: \"bench.rr.>\" } } ] }\n");
            for (int i = 1; i <= FanOutAccounts; i++)
            {
                sb.Append(CultureInfo.InvariantCulture, $"  C{i}: {{ users: [ {{ user: c{i}, password: bench }} ], imports: [ {{ stream: {{ account: A, subject: \"bench.ps.>\" }} }} ] }}\n");
            }

            return sb.Append("}\n").ToString();
        }
    }

    /// <summary>Request/reply rows: services in A, requesters in B.</summary>
    public static string ServiceUser(string connection) => connection.StartsWith("svc", StringComparison.Ordinal) ? "a" : "b";

    /// <summary>Pub/sub rows: publishers in A, subscriber i in C(i+1).</summary>
    public static string StreamUser(string connection) =>
        connection.StartsWith("sub", StringComparison.Ordinal) ? "c" + (int.Parse(connection.AsSpan(3), CultureInfo.InvariantCulture) % FanOutAccounts + 1).ToString(CultureInfo.InvariantCulture) : "a";

    public static Func<string?, string> Password(string user) => _ => ",\"user\":\"" + user + "\",\"pass\":\"bench\"";

    /// <summary>No authorization block: the plain login row measures the connection cost without credentials.</summary>
    public static string PlainConfig => "# no authorization: the base cost of a login\n";

    /// <summary>CONNECT without credentials (the server sends no nonce then).</summary>
    public static string NoFields(string? nonce) => "";

    public static string NkeyConfig => $"authorization {{ users: [ {{ nkey: {NkeyUser.GetPublicKey()} }} ] }}\n";

    public static string OperatorConfig => $$"""
        operator: {{JwtFactory.Operator(Operator)}}
        resolver: MEMORY
        resolver_preload: {
          {{Account.GetPublicKey()}}: {{JwtFactory.Account(Operator, Account, name: "BENCH")}}
        }

        """;

    /// <summary>CONNECT's nkey and the nonce's signature.</summary>
    public static string NkeyFields(string? nonce) =>
        ",\"nkey\":\"" + NkeyUser.GetPublicKey() + "\",\"sig\":\"" + JwtFactory.SignNonce(NkeyUser, nonce ?? throw new InvalidDataException("INFO has no nonce")) + "\"";

    /// <summary>CONNECT's user JWT and the nonce's signature by the user's key.</summary>
    public static string JwtFields(string? nonce) =>
        ",\"jwt\":\"" + UserJwt + "\",\"sig\":\"" + JwtFactory.SignNonce(JwtUser, nonce ?? throw new InvalidDataException("INFO has no nonce")) + "\"";

    /// <summary>Writes a row's config once per bench process (both servers read the same file).</summary>
    public static string WriteConfig(string row, string text)
    {
        string path = BenchTemp.File($"{row}.conf");
        File.WriteAllText(path, text);
        return path;
    }
}
