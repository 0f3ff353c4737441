using System.Runtime.InteropServices;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace NatsBroker.Gateways.Link;

/// <summary>
/// Stops a supervised gateway when the core that started it is gone. The core stops its children with SIGTERM
/// on a clean shutdown, but a core that is killed (SIGKILL, the OOM killer, a crash) cannot: its gateways would
/// live on as orphans holding the client ports, and the core started again (by systemd or a test harness) would
/// start new gateways that cannot bind them.
/// </summary>
/// <remarks>
/// The supervisor passes its pid in <see cref="PidVariable"/>. The child compares it with its parent pid every
/// <see cref="Period"/>: when the parent dies the kernel re-parents the child (to init or a subreaper), so the
/// two differ. Linux's <c>PR_SET_PDEATHSIG</c> would be immediate but fires when the parent <em>thread</em> that
/// forked exits, and .NET forks from whichever thread-pool thread called Process.Start, which the pool may retire
/// at any time. One getppid(2) per period costs nothing measurable. The stop is the host's graceful stop, the
/// same path as SIGTERM (clients drained, then exit 0): there is no core left to reach, so clients reconnect to
/// the gateways of the next core.
/// </remarks>
public sealed partial class SupervisorWatch : BackgroundService
{
    /// <summary>Set by the core's GatewaySupervisor for its children: the core's process id.</summary>
    public const string PidVariable = "NATSBROKER_SUPERVISOR_PID";

    /// <summary>How often the parent is looked at: the longest an orphan outlives its core.</summary>
    public static readonly TimeSpan Period = TimeSpan.FromMilliseconds(250);

    private readonly int _supervisor;
    private readonly IHostApplicationLifetime _lifetime;
    private readonly ILogger _log;

    public SupervisorWatch(int supervisorPid, IHostApplicationLifetime lifetime, ILogger log)
    {
        _supervisor = supervisorPid;
        _lifetime = lifetime;
        _log = log;
    }

    /// <summary>The supervisor's pid from the environment; null when this gateway was not started by a core.</summary>
    public static int? SupervisorPid() =>
        int.TryParse(Environment.GetEnvironmentVariable(PidVariable), System.Globalization.NumberStyles.None,
            System.Globalization.CultureInfo.InvariantCulture, out int pid) && pid > 1 ? pid : null;

    protected override async Task ExecuteAsync(CancellationToken stoppingToken)
    {
        using var timer = new PeriodicTimer(Period);
        // Checked before the first wait too: the core may have died between starting this process and now.
        do
        {
            int parent = getppid();
            if (parent != _supervisor)
            {
                _log.LogWarning("The core that started this gateway (pid {Pid}) is gone; stopping", _supervisor);
                _lifetime.StopApplication();
                return;
            }
        }
        while (await WaitAsync(timer, stoppingToken).ConfigureAwait(false));
    }

    private static async Task<bool> WaitAsync(PeriodicTimer timer, CancellationToken token)
    {
        try
        {
            return await timer.WaitForNextTickAsync(token).ConfigureAwait(false);
        }
        catch (OperationCanceledException)
        {
            return false;
        }
    }

    [LibraryImport("libc")]
    private static partial int getppid();
}
