using System.Security.Cryptography;
using System.Text;
using MQTTnet;
using MQTTnet.Protocol;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// The client side of SCRAM-SHA-256 (RFC 5802, RFC 7677), written from the RFCs independently of the gateway's
/// server side, without channel binding (gs2 header "n,,"). <see cref="ScramClientTests"/> checks it against
/// RFC 7677's example exchange.
/// </summary>
internal sealed class ScramClient(string user, string password, string? clientNonce = null)
{
    private readonly string _clientNonce = clientNonce ?? Convert.ToBase64String(RandomNumberGenerator.GetBytes(18));
    private string _bare = "";
    private string? _expectedServerFinal;

    /// <summary>client-first-message: "n,,n=user,r=nonce".</summary>
    public byte[] First()
    {
        _bare = $"n={user.Replace("=", "=3D", StringComparison.Ordinal).Replace(",", "=2C", StringComparison.Ordinal)},r={_clientNonce}";
        return Encoding.UTF8.GetBytes("n,," + _bare);
    }

    /// <summary>client-final-message for the server-first-message; remembers the server signature to expect.</summary>
    public byte[] Final(byte[] serverFirstMessage)
    {
        string serverFirst = Encoding.UTF8.GetString(serverFirstMessage);
        var fields = serverFirst.Split(',').ToDictionary(f => f[..1], f => f[2..]);
        string nonce = fields["r"];
        if (!nonce.StartsWith(_clientNonce, StringComparison.Ordinal)) throw new InvalidOperationException("the server's nonce does not extend ours");
        var salted = Rfc2898DeriveBytes.Pbkdf2(Encoding.UTF8.GetBytes(password), Convert.FromBase64String(fields["s"]), int.Parse(fields["i"],
            System.Globalization.CultureInfo.InvariantCulture), HashAlgorithmName.SHA256, 32);
        var clientKey = HMACSHA256.HashData(salted, "Client Key"u8);
        string withoutProof = "c=" + Convert.ToBase64String("n,,"u8) + ",r=" + nonce;
        var authMessage = Encoding.UTF8.GetBytes(_bare + "," + serverFirst + "," + withoutProof);
        var clientSignature = HMACSHA256.HashData(SHA256.HashData(clientKey), authMessage);
        var proof = new byte[clientKey.Length];
        for (int i = 0; i < proof.Length; i++) proof[i] = (byte)(clientKey[i] ^ clientSignature[i]);
        _expectedServerFinal = "v=" + Convert.ToBase64String(HMACSHA256.HashData(HMACSHA256.HashData(salted, "Server Key"u8), authMessage));
        return Encoding.UTF8.GetBytes(withoutProof + ",p=" + Convert.ToBase64String(proof));
    }

    /// <summary>Whether the server-final-message proves the server knows the password (RFC 5802 section 3).</summary>
    public bool VerifyServerFinal(byte[]? serverFinalMessage) =>
        _expectedServerFinal is not null && serverFinalMessage is not null && Encoding.UTF8.GetString(serverFinalMessage) == _expectedServerFinal;
}

/// <summary>
/// SCRAM-SHA-256 for an MQTTnet 5 client: <see cref="Start"/> gives the CONNECT's (or AUTH 0x19's) data; each server
/// AUTH 0x18 is answered with the client-final-message; a server AUTH 0x00 (re-authentication's end) is checked.
/// </summary>
internal sealed class ScramAuthHandler(string user, string password) : IMqttEnhancedAuthenticationHandler
{
    private ScramClient _client = new(user, password);
    private TaskCompletionSource<bool> _reauthenticated = new(TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>The password the next <see cref="Start"/> uses.</summary>
    public string Password { get; set; } = password;

    /// <summary>Server AUTH 0x18 packets answered so far.</summary>
    public int Rounds { get; private set; }

    public byte[] Start()
    {
        _client = new ScramClient(user, Password);
        _reauthenticated = new TaskCompletionSource<bool>(TaskCreationOptions.RunContinuationsAsynchronously);
        return _client.First();
    }

    /// <summary>Completes with whether the server's final message verified, when AUTH 0x00 arrives.</summary>
    public Task<bool> Reauthenticated => _reauthenticated.Task;

    public bool VerifyServerFinal(byte[]? data) => _client.VerifyServerFinal(data);

    public async Task HandleEnhancedAuthenticationAsync(MqttEnhancedAuthenticationEventArgs eventArgs)
    {
        if (eventArgs.ReasonCode == MqttAuthenticateReasonCode.ContinueAuthentication)
        {
            Rounds++;
            await eventArgs.SendAsync(new SendMqttEnhancedAuthenticationDataOptions { Data = _client.Final(eventArgs.AuthenticationData) }, eventArgs.CancellationToken);
        }
        else if (eventArgs.ReasonCode == MqttAuthenticateReasonCode.Success)
        {
            _reauthenticated.TrySetResult(_client.VerifyServerFinal(eventArgs.AuthenticationData));
        }
    }
}

/// <summary>The test's SCRAM client against RFC 7677 section 3's example (user "user", password "pencil").</summary>
public sealed class ScramClientTests
{
    [Fact]
    public void The_client_reproduces_rfc_7677s_example_exchange()
    {
        var client = new ScramClient("user", "pencil", "rOprNGfwEbeRWgbNEkqO");
        Assert.Equal("n,,n=user,r=rOprNGfwEbeRWgbNEkqO", Encoding.UTF8.GetString(client.First()));
        var final = client.Final(Encoding.UTF8.GetBytes("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"));
        Assert.Equal("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=", Encoding.UTF8.GetString(final));
        Assert.True(client.VerifyServerFinal(Encoding.UTF8.GetBytes("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")));
        Assert.False(client.VerifyServerFinal(Encoding.UTF8.GetBytes("v=AAAATRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=")));
    }
}
