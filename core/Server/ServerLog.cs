using Microsoft.Extensions.Logging;

namespace NatsBroker.Server;

/// <summary>Source-generated log messages, worded as nats-server words them. Nothing here is logged per message.</summary>
internal sealed partial class ServerLog(ILogger logger)
{
    public ILogger Logger => logger;

    [LoggerMessage(Level = LogLevel.Information, Message = "Starting nats-server ({Impl} {ImplVersion}, compatible with nats-server {Version})\n  Version:  {Version}\n  Name:     {Name}\n  ID:       {Id}")]
    private partial void StartingCore(string impl, string implVersion, string version, string name, string id);
    public void Starting(string impl, string implVersion, string version, string name, string id) => StartingCore(impl, implVersion, version, name, id);

    [LoggerMessage(Level = LogLevel.Information, Message = "Listening for client connections on {Endpoint}")]
    public partial void Listening(string endpoint);

    [LoggerMessage(Level = LogLevel.Information, Message = "Listening for client connections on unix socket {Path}")]
    public partial void ListeningUnix(string path);

    [LoggerMessage(Level = LogLevel.Information, Message = "Starting JetStream\n    Store Directory: \"{StoreDir}\"")]
    public partial void JetStreamStarted(string storeDir);

    [LoggerMessage(Level = LogLevel.Information, Message = "Storage engines: memory, file (built in); third-party: [{ThirdParty}]; file streams use \"{Engine}\"")]
    private partial void StorageEnginesCore(string engine, string thirdParty);
    public void StorageEngines(string engine, string thirdParty) => StorageEnginesCore(engine, thirdParty);

    [LoggerMessage(Level = LogLevel.Information, Message = "Server is ready")]
    public partial void Ready();

    [LoggerMessage(Level = LogLevel.Information, Message = "Initiating Shutdown...")]
    public partial void ShuttingDown();

    [LoggerMessage(Level = LogLevel.Information, Message = "Server Exiting..")]
    public partial void ServerExiting();

    [LoggerMessage(Level = LogLevel.Information, Message = "Entering lame duck mode, stop accepting new clients (duration {Duration}, grace period {Grace})")]
    public partial void LameDuck(TimeSpan duration, TimeSpan grace);

    [LoggerMessage(Level = LogLevel.Information, Message = "Reloaded server configuration{Note}")]
    public partial void Reloaded(string note);

    [LoggerMessage(Level = LogLevel.Error, Message = "Error accepting client connection: {Error}")]
    public partial void AcceptError(string error);

    [LoggerMessage(Level = LogLevel.Debug, Message = "{Ip}:{Port} - cid:{Cid} - Client connection created")]
    private partial void ClientConnectedCore(string ip, int port, ulong cid);
    public void ClientConnected(ulong cid, string ip, int port) => ClientConnectedCore(ip, port, cid);

    [LoggerMessage(Level = LogLevel.Debug, Message = "{Ip}:{Port} - cid:{Cid} - Client connection closed: {Reason}")]
    private partial void ClientClosedCore(string ip, int port, ulong cid, string reason);
    public void ClientClosed(ulong cid, string ip, int port, string reason) => ClientClosedCore(ip, port, cid, reason);

    [LoggerMessage(Level = LogLevel.Debug, Message = "{Ip} - cid:{Cid} - Sent -ERR '{Error}'")]
    private partial void ClientErrorCore(string ip, ulong cid, string error);
    public void ClientError(ulong cid, string ip, string error) => ClientErrorCore(ip, cid, error);

    [LoggerMessage(Level = LogLevel.Error, Message = "{Ip} - cid:{Cid} - authentication error - User \"{User}\"")]
    private partial void AuthFailedCore(string ip, ulong cid, string user);
    public void AuthFailed(ulong cid, string ip, string user) => AuthFailedCore(ip, cid, user);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Ip} - cid:{Cid} - Slow Consumer Detected: MaxPending of bytes reached")]
    private partial void SlowConsumerPendingCore(string ip, ulong cid);
    public void SlowConsumerPending(ulong cid, string ip) => SlowConsumerPendingCore(ip, cid);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Ip} - cid:{Cid} - Slow Consumer Detected: WriteDeadline exceeded")]
    private partial void SlowConsumerWriteDeadlineCore(string ip, ulong cid);
    public void SlowConsumerWriteDeadline(ulong cid, string ip) => SlowConsumerWriteDeadlineCore(ip, cid);

    [LoggerMessage(Level = LogLevel.Error, Message = "cid:{Cid} - connection loop fault")]
    public partial void ConnectionLoopFault(Exception ex, ulong cid);

    [LoggerMessage(Level = LogLevel.Warning, Message = "{Reason}")]
    public partial void AuthCalloutRefused(string reason);

    [LoggerMessage(Level = LogLevel.Error, Message = "internal subscription callback failed")]
    public partial void InternalCallbackFault(Exception ex);

    [LoggerMessage(Level = LogLevel.Error, Message = "account JWT for {Account} rejected: {Error}")]
    public partial void AccountJwtRejected(string account, string error);
}
