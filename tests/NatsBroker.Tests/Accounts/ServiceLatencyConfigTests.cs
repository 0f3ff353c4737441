using NatsBroker.Configuration;

namespace NatsBroker.Tests.Accounts;

/// <summary>An export's <c>latency</c> as configuration (server/opts.go parseServiceLatency and the checks of TrackServiceExportWithSampling).</summary>
public sealed class ServiceLatencyConfigTests
{
    private static ServerOptions Load(string text)
    {
        var opts = new ServerOptions();
        ConfigLoader.Apply(ConfigParser.Parse(text, "t.conf"), opts);
        return opts;
    }

    private static string Fail(string text) => Assert.Throws<ConfigException>(() => Load(text)).Message;

    private static ServiceLatencyConfig? Latency(string latency, string extra = "") =>
        Load($$"""accounts { A: { exports: [{service: "svc", latency: {{latency}}{{extra}}}] } }""").Accounts.Single().Exports.Single().Latency;

    [Fact]
    public void Sampling_is_a_percentage_or_headers_and_defaults_to_100()
    {
        Assert.Equal(new ServiceLatencyConfig(100, "lat"), Latency("\"lat\""));
        Assert.Equal(new ServiceLatencyConfig(100, "lat"), Latency("{subject: lat}"));
        Assert.Equal(new ServiceLatencyConfig(50, "lat"), Latency("{sampling: 50, subject: lat}"));
        Assert.Equal(new ServiceLatencyConfig(50, "lat"), Latency("{sampling: \"50%\", subject: lat}"));
        Assert.Equal(new ServiceLatencyConfig(50, "lat"), Latency("{sampling: 50%, subject: lat}"));
        Assert.Equal(new ServiceLatencyConfig(ServiceLatencyConfig.Headers, "lat"), Latency("{sampling: headers, subject: lat}"));
    }

    [Fact]
    public void Import_share_is_read()
    {
        var o = Load("""
            accounts {
              A: { exports: [{service: "svc", latency: "lat"}] }
              B: { imports: [{service: {account: A, subject: svc}, share: true}] }
            }
            """);
        Assert.True(o.Accounts.Single(a => a.Name == "B").Imports.Single().Share);
    }

    [Fact]
    public void Bad_latency_settings_are_refused_with_nats_server_errors()
    {
        Assert.Contains("bad sampling percentage, should be 1-100",
            Fail("""accounts { A: { exports: [{service: "svc", latency: {sampling: 0, subject: lat}}] } }"""), StringComparison.Ordinal);
        Assert.Contains("bad sampling percentage, should be 1-100",
            Fail("""accounts { A: { exports: [{service: "svc", latency: {sampling: "101%", subject: lat}}] } }"""), StringComparison.Ordinal);
        Assert.Contains("Latency subject required, but missing",
            Fail("""accounts { A: { exports: [{service: "svc", latency: {sampling: 10}}] } }"""), StringComparison.Ordinal);
        Assert.Contains("Detected latency directive on non-service",
            Fail("""accounts { A: { exports: [{stream: "s", latency: "lat"}] } }"""), StringComparison.Ordinal);
        Assert.Contains("Error adding service latency sampling for \"svc\" on subject \"lat.*\": invalid publish subject",
            Fail("""accounts { A: { exports: [{service: "svc", latency: "lat.*"}] } }"""), StringComparison.Ordinal);
        Assert.Contains("Error adding service latency sampling for \"svc\" on subject \"svc\": invalid publish subject",
            Fail("""accounts { A: { exports: [{service: "svc", latency: "svc"}] } }"""), StringComparison.Ordinal);
        Assert.Contains("Error adding service latency sampling for \"svc\" on subject \"lat\": bad service response type",
            Fail("""accounts { A: { exports: [{service: "svc", response_type: stream, latency: "lat"}] } }"""), StringComparison.Ordinal);
    }
}
