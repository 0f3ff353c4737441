using Microsoft.Extensions.Logging;

namespace NatsBroker.Cluster;

/// <summary>Route log lines, worded as nats-server words them (route.go; a route's lines carry
/// <c>ip:port - rid:N - </c> as client.go's Noticef/Errorf prefix them). Nothing here is logged per message.</summary>
internal sealed partial class ClusterLog(ILogger logger)
{
    [LoggerMessage(Level = LogLevel.Information, Message = "Cluster name is {Name}")]
    public partial void ClusterName(string name);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Cluster name was dynamically generated, consider setting one")]
    public partial void DynamicClusterName();

    [LoggerMessage(Level = LogLevel.Information, Message = "Listening for route connections on {Endpoint}")]
    public partial void Listening(string endpoint);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Ip}:{Port} - rid:{Rid} - Route connection created")]
    public partial void RouteCreated(string ip, int port, ulong rid);

    [LoggerMessage(Level = LogLevel.Information, Message = "{Ip}:{Port} - rid:{Rid} - Router connection closed: {Reason}")]
    public partial void RouteClosed(string ip, int port, ulong rid, string reason);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Ip}:{Port} - rid:{Rid} - {Text}")]
    public partial void RouteError(string ip, int port, ulong rid, string text);

    [LoggerMessage(Level = LogLevel.Debug, Message = "{Ip}:{Port} - rid:{Rid} - Detected duplicate remote route \"{RemoteId}\"")]
    public partial void DuplicateRoute(string ip, int port, ulong rid, string remoteId);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Ip}:{Port} - rid:{Rid} - Slow Consumer Detected")]
    public partial void RouteSlowConsumer(string ip, int port, ulong rid);

    [LoggerMessage(Level = LogLevel.Error, Message = "rid:{Rid} - route connection loop failed")]
    public partial void RouteLoopFault(Exception exception, ulong rid);

    [LoggerMessage(Level = LogLevel.Error, Message = "rid:{Rid} - Unknown account \"{Account}\" for remote subject \"{Subject}\"")]
    public partial void UnknownAccount(ulong rid, string account, string subject);

    [LoggerMessage(Level = LogLevel.Debug, Message = "rid:{Rid} - Unknown account \"{Account}\" for routed message")]
    public partial void UnknownAccountForMessage(ulong rid, string account);

    [LoggerMessage(Level = LogLevel.Debug, Message = "rid:{Rid} - Can not export \"{Subject}\", ignoring remote subscription request")]
    public partial void CannotExport(ulong rid, string subject);

    [LoggerMessage(Level = LogLevel.Error, Message = "Error trying to connect to route (attempt {Attempt}): {Error}")]
    public partial void ConnectError(int attempt, string error);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Error trying to connect to route (attempt {Attempt}): {Error}")]
    public partial void ConnectErrorDebug(int attempt, string error);

    [LoggerMessage(Level = LogLevel.Information, Message = "Removed route {Url}")]
    public partial void RouteRemovedFromConfig(string url);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Ip}:{Port} - TLS route handshake error: {Error}")]
    public partial void TlsHandshakeError(string ip, int port, string error);

    [LoggerMessage(Level = LogLevel.Error, Message = "Error listening on router port: {Port} - {Error}")]
    public partial void ListenError(int port, string error);
}
