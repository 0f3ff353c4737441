using Microsoft.Extensions.Hosting;

namespace NatsBroker.Hosting;

/// <summary>
/// The process's lifetime without the generic host: <see cref="BrokerService"/> asks to stop (signal, lame duck
/// end) and <see cref="Program"/> waits for that request. Building the generic host (DI container, configuration,
/// logging pipeline) cost ~40 ms of a ~180 ms start-up on the 2-core bench VM, for nothing the broker used.
/// </summary>
public sealed class ProcessLifetime : IHostApplicationLifetime, IDisposable
{
    private readonly CancellationTokenSource _started = new();
    private readonly CancellationTokenSource _stopping = new();
    private readonly CancellationTokenSource _stopped = new();

    public CancellationToken ApplicationStarted => _started.Token;
    public CancellationToken ApplicationStopping => _stopping.Token;
    public CancellationToken ApplicationStopped => _stopped.Token;

    public void StopApplication()
    {
        try
        {
            _stopping.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // Already stopped and disposed: nothing left to stop.
        }
    }

    internal void NotifyStarted() => _started.Cancel();

    internal void NotifyStopped() => _stopped.Cancel();

    /// <summary>Blocks the calling thread until <see cref="StopApplication"/> is called.</summary>
    internal void WaitForStopRequest() => _stopping.Token.WaitHandle.WaitOne();

    public void Dispose()
    {
        _started.Dispose();
        _stopping.Dispose();
        _stopped.Dispose();
    }
}
