using System.Security.Cryptography.X509Certificates;
using MQTTnet;
using MQTTnet.Protocol;
using NatsBroker.Tests.Infrastructure;
using Xunit.Abstractions;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>
/// MQTT over TLS (<c>mqtt { tls {} }</c>): MQTTnet clients through the MQTT gateway's TLS, with and without client
/// certificates (<c>verify</c>); Go nats-server 2.9.10 with the same config is the oracle.
/// </summary>
[Collection("Gateways")]
public sealed class MqttTlsTests(ITestOutputHelper output) : IDisposable
{
    private readonly TestPki _pki = new();

    public void Dispose() => _pki.Dispose();

    private string Tls(string extra = "") =>
        $$"""
        tls {
          cert_file: "{{_pki.ServerCert}}"
          key_file: "{{_pki.ServerKey}}"
          {{extra}}
        }
        no_auth_user: alice
        """;

    /// <summary>TLS to the MQTT port, trusting only the test CA; with <paramref name="cert"/>, a client certificate.</summary>
    private Action<MqttClientOptionsBuilder> OverTls((string Cert, string Key)? cert = null) => b => b.WithTlsOptions(o =>
    {
        o.UseTls().WithTargetHost("localhost").WithCertificateValidationHandler(e =>
        {
            using var ca = X509CertificateLoader.LoadCertificateFromFile(_pki.CaFile);
            using var chain = new X509Chain();
            chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
            chain.ChainPolicy.CustomTrustStore.Add(ca);
            chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
            using var server = new X509Certificate2(e.Certificate);
            return chain.Build(server);
        });
        if (cert is { } c) o.WithClientCertificates([X509Certificate2.CreateFromPemFile(c.Cert, c.Key)]);
    });

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task MqttNet_over_tls_exchanges_messages_with_NATS_and_a_plaintext_client_is_refused(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var s = await MqttTestServer.StartAsync(kind, output, mqttExtra: Tls());
        using var mqtt = await s.ConnectAsync("tls-sub-" + kind, configure: OverTls());
        var received = new Received(mqtt);
        var suback = await mqtt.SubscribeAsync(new MqttClientSubscribeOptionsBuilder().WithTopicFilter("tls/#", MqttQualityOfServiceLevel.AtLeastOnce).Build());
        Assert.Equal(MqttClientSubscribeResultCode.GrantedQoS1, suback.Items.Single().ResultCode);

        await using var nats = s.Nats();
        await nats.ConnectAsync();
        await using var fromMqtt = await nats.SubscribeCoreAsync<string>("tls.up");
        await nats.PingAsync();
        await nats.PublishAsync("tls.down", "to mqtt");
        var got = await received.NextAsync(10);
        Assert.Equal("tls/down", got.Topic);
        Assert.Equal("to mqtt", got.ConvertPayloadToString());

        await mqtt.PublishStringAsync("tls/up", "to nats", MqttQualityOfServiceLevel.AtLeastOnce);
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        Assert.Equal("to nats", (await fromMqtt.Msgs.ReadAsync(cts.Token)).Data);

        // A client speaking plain MQTT to the TLS port gets no CONNACK.
        using var plain = new MqttClientFactory().CreateMqttClient();
        await Assert.ThrowsAnyAsync<Exception>(() => s.ConnectAsync(plain, "tls-plain-" + kind, configure: b => b.WithTimeout(TimeSpan.FromSeconds(3))));
    }

    [SkippableTheory]
    [InlineData(ServerKind.Ours)]
    [InlineData(ServerKind.Go)]
    public async Task With_verify_a_client_certificate_from_the_CA_is_required(ServerKind kind)
    {
        Prerequisites.RequireServer(kind, output);
        await using var s = await MqttTestServer.StartAsync(kind, output, mqttExtra: Tls($"ca_file: \"{_pki.CaFile}\"\nverify: true"));
        var cert = _pki.Issue("mqtt-client", "CN=mqtt-client");

        using (var with = await s.ConnectAsync("tls-cert-" + kind, configure: OverTls(cert)))
        {
            Assert.True(with.IsConnected);
        }

        using var without = new MqttClientFactory().CreateMqttClient();
        await Assert.ThrowsAnyAsync<Exception>(() => s.ConnectAsync(without, "tls-nocert-" + kind,
            configure: b => { OverTls()(b); b.WithTimeout(TimeSpan.FromSeconds(5)); }));
    }
}
