namespace NatsBroker.JetStream;

// Consumer pause (nats-server 2.11 consumer.go updatePauseState / sendPauseAdvisoryLocked): while
// pause_until is in the future nothing is delivered; a change of pause_until sends the consumer_pause advisory,
// and so does the pause running out.
internal sealed partial class JsConsumer
{
    private Timer? _pauseTimer;

    /// <summary>Nanoseconds until the pause ends; 0 or less when not paused.</summary>
    private long PauseRemainingNanos()
    {
        var until = Config.PauseUntil;
        if (until is not { } u) return 0;
        return (DateTime.SpecifyKind(u, DateTimeKind.Utc) - DateTime.UtcNow).Ticks * 100;
    }

    private void OnPauseChanged(DateTime? old, DateTime? next)
    {
        if (old == next) return;
        SchedulePauseEnd();
        Advisories.Pause(_stream.Name, Name, next);
    }

    /// <summary>Arms a timer that resumes delivery (and says so) when the pause runs out.</summary>
    private void SchedulePauseEnd()
    {
        StopPauseTimer();
        long left = PauseRemainingNanos();
        if (left <= 0) return;
        var due = TimeSpan.FromTicks(left / 100) + TimeSpan.FromMilliseconds(1);
        _pauseTimer = new Timer(_ =>
        {
            if (PauseRemainingNanos() > 0) return;
            Advisories.Pause(_stream.Name, Name, Config.PauseUntil);
            Kick();
        }, null, due, Timeout.InfiniteTimeSpan);
    }

    private void StopPauseTimer()
    {
        _pauseTimer?.Dispose();
        _pauseTimer = null;
    }
}
