namespace NatsBroker.Gateways.Link;

/// <summary>The public address a gateway serves; the command line's -a/-p override the config file's.</summary>
public interface IGatewayListenOptions
{
    string Host { get; set; }
    int Port { get; set; }
}
