using NatsBroker.Auth;
using NatsBroker.Protocol;

namespace NatsBroker.Tests.Auth;

public class PasswordHashingQueueTests
{
    private static readonly TimeSpan Wait = TimeSpan.FromSeconds(10);

    /// <summary>Blocks each Authenticate until released; records how many run at once.</summary>
    private sealed class GatedAuthenticator : IAuthenticator
    {
        private readonly SemaphoreSlim _gate = new(0);
        private int _running;
        public int MaxRunning;
        public int Calls;
        public int? ThreadId;
        public Exception? Throw;

        public bool AuthRequired => true;
        public void Release(int n) => _gate.Release(n);

        public AuthResult Authenticate(ConnectOptions connect, ClientAuthContext ctx)
        {
            ThreadId = Environment.CurrentManagedThreadId;
            Interlocked.Increment(ref Calls);
            int now = Interlocked.Increment(ref _running);
            InterlockedMax(ref MaxRunning, now);
            try
            {
                Assert.True(_gate.Wait(Wait), "test never released the authenticator");
                if (Throw is not null) throw Throw;
                return connect.Pass == "good" ? AuthResult.Allowed(connect.User) : AuthResult.Denied;
            }
            finally
            {
                Interlocked.Decrement(ref _running);
            }
        }

        public AuthResult? TryAuthenticateWithoutHashing(ConnectOptions connect, ClientAuthContext ctx) => null;
        public AuthResult AuthenticateWithoutConnect(ClientAuthContext ctx) => AuthResult.Denied;

        private static void InterlockedMax(ref int target, int value)
        {
            int seen;
            while ((seen = Volatile.Read(ref target)) < value && Interlocked.CompareExchange(ref target, value, seen) != seen) { }
        }
    }

    private static ConnectOptions Connect(string pass) => new() { User = "u", Pass = pass };
    private static readonly ClientAuthContext Ctx = new() { ClientId = 1 };

    [Fact]
    public async Task Runs_at_most_its_workers_at_once_and_answers_each_request()
    {
        using var queue = new PasswordHashingQueue(workers: 2, capacity: 16);
        var auth = new GatedAuthenticator();
        var requests = Enumerable.Range(0, 6).Select(i => queue.Submit(auth, Connect(i % 2 == 0 ? "good" : "bad"), Ctx)).ToList();
        await WaitUntil(() => Volatile.Read(ref auth.Calls) == 2);
        await Task.Delay(100);
        Assert.Equal(2, Volatile.Read(ref auth.Calls)); // the other four wait in line
        auth.Release(6);
        var results = await Task.WhenAll(requests.Select(r => r.Result)).WaitAsync(Wait);
        Assert.Equal(2, auth.MaxRunning);
        Assert.Equal([true, false, true, false, true, false], results.Select(r => r!.Success));
        Assert.Equal(6, queue.Hashed);
        Assert.NotEqual(Environment.CurrentManagedThreadId, auth.ThreadId);
    }

    [Fact]
    public async Task A_full_queue_makes_submitters_wait_in_line_not_fail()
    {
        using var queue = new PasswordHashingQueue(workers: 1, capacity: 2);
        var auth = new GatedAuthenticator();
        // One running, two queued, three waiting for room: Submit never blocks nor throws.
        var requests = Enumerable.Range(0, 6).Select(_ => queue.Submit(auth, Connect("good"), Ctx)).ToList();
        await WaitUntil(() => Volatile.Read(ref auth.Calls) == 1);
        Assert.All(requests, r => Assert.False(r.Result.IsCompleted));
        auth.Release(6);
        var results = await Task.WhenAll(requests.Select(r => r.Result)).WaitAsync(Wait);
        Assert.All(results, r => Assert.True(r!.Success));
        Assert.Equal(1, auth.MaxRunning);
    }

    [Fact]
    public async Task Abandoned_requests_are_skipped_without_hashing()
    {
        using var queue = new PasswordHashingQueue(workers: 1, capacity: 8);
        var auth = new GatedAuthenticator();
        var first = queue.Submit(auth, Connect("good"), Ctx);
        await WaitUntil(() => Volatile.Read(ref auth.Calls) == 1);
        var abandoned = queue.Submit(auth, Connect("good"), Ctx);
        var kept = queue.Submit(auth, Connect("good"), Ctx);
        abandoned.Abandon();
        Assert.Null(await abandoned.Result.WaitAsync(Wait));
        auth.Release(3);
        Assert.True((await first.Result.WaitAsync(Wait))!.Success);
        Assert.True((await kept.Result.WaitAsync(Wait))!.Success);
        Assert.Equal(2, auth.Calls);
        await WaitUntil(() => queue.Skipped == 1);
        Assert.Equal(2, queue.Hashed);
    }

    [Fact]
    public async Task Dispose_abandons_queued_and_later_requests()
    {
        var queue = new PasswordHashingQueue(workers: 1, capacity: 1);
        var auth = new GatedAuthenticator();
        var running = queue.Submit(auth, Connect("good"), Ctx);
        await WaitUntil(() => Volatile.Read(ref auth.Calls) == 1);
        var queued = queue.Submit(auth, Connect("good"), Ctx);
        var waiting = queue.Submit(auth, Connect("good"), Ctx);
        queue.Dispose();
        Assert.Null(await queued.Result.WaitAsync(Wait));
        Assert.Null(await waiting.Result.WaitAsync(Wait));
        Assert.Null(await queue.Submit(auth, Connect("good"), Ctx).Result.WaitAsync(Wait));
        auth.Release(1);
        Assert.True((await running.Result.WaitAsync(Wait))!.Success); // the one already hashing still answers
    }

    [Fact]
    public async Task An_authenticator_failure_reaches_the_submitter()
    {
        using var queue = new PasswordHashingQueue(workers: 1);
        var auth = new GatedAuthenticator { Throw = new InvalidOperationException("boom") };
        auth.Release(1);
        var ex = await Assert.ThrowsAsync<InvalidOperationException>(() => queue.Submit(auth, Connect("good"), Ctx).Result.WaitAsync(Wait));
        Assert.Equal("boom", ex.Message);
    }

    [SkippableFact]
    public async Task Workers_run_at_a_lower_os_priority_on_linux()
    {
        using var queue = new PasswordHashingQueue(workers: 2, niceness: 7);
        var auth = new GatedAuthenticator();
        auth.Release(2);
        await Task.WhenAll(queue.Submit(auth, Connect("good"), Ctx).Result, queue.Submit(auth, Connect("good"), Ctx).Result).WaitAsync(Wait);
        // Thread priorities are set and read through Linux's /proc: elsewhere the check cannot run (Skipped, not Passed).
        if (!OperatingSystem.IsLinux()) throw new SkipException("thread nice values are read from Linux /proc");
        await WaitUntil(() => queue.PriorityLowered == 2);
        // /proc/<pid>/task/<tid>/stat field 19 is the thread's nice value.
        // Other threads of the test process come and go while the directory is listed: a vanished one is skipped.
        var nices = Directory.GetDirectories($"/proc/{Environment.ProcessId}/task")
            .Select(t => (Comm: ReadOrNull(Path.Combine(t, "comm")), Stat: ReadOrNull(Path.Combine(t, "stat"))))
            .Where(t => t.Comm?.Trim() == "auth-hashing")
            .Select(t => t.Stat)
            .OfType<string>()
            .Select(stat => int.Parse(stat[(stat.LastIndexOf(')') + 2)..].Split(' ')[16], System.Globalization.CultureInfo.InvariantCulture))
            .ToList();
        Assert.Contains(7, nices);

        static string? ReadOrNull(string path)
        {
            try
            {
                return File.ReadAllText(path);
            }
            catch (Exception e) when (e is DirectoryNotFoundException or FileNotFoundException or IOException)
            {
                return null;
            }
        }
    }

    [Fact]
    public void Cheap_decisions_are_made_without_hashing_and_bcrypt_ones_are_deferred()
    {
        var hash = Bcrypt.Hash("secret", 4);
        var options = new NatsBroker.Configuration.ServerOptions
        {
            Users = [new() { User = "plain", Password = "pw" }, new() { User = "hashed", Password = hash }],
        };
        var auth = new OptionsAuthenticator(options);
        Assert.True(auth.TryAuthenticateWithoutHashing(new ConnectOptions { User = "plain", Pass = "pw" }, Ctx)!.Success);
        Assert.False(auth.TryAuthenticateWithoutHashing(new ConnectOptions { User = "plain", Pass = "no" }, Ctx)!.Success);
        Assert.False(auth.TryAuthenticateWithoutHashing(new ConnectOptions { User = "nobody", Pass = "x" }, Ctx)!.Success);
        var good = new ConnectOptions { User = "hashed", Pass = "secret" };
        Assert.Null(auth.TryAuthenticateWithoutHashing(good, Ctx));
        Assert.Null(auth.TryAuthenticateWithoutHashing(new ConnectOptions { User = "hashed", Pass = "bad" }, Ctx));
        Assert.Equal(0, auth.Verifier.BcryptRuns);
        Assert.True(auth.Authenticate(good, Ctx).Success);
        // A verified password is remembered: the next check is cheap; a wrong one never is.
        Assert.True(auth.TryAuthenticateWithoutHashing(good, Ctx)!.Success);
        Assert.Null(auth.TryAuthenticateWithoutHashing(new ConnectOptions { User = "hashed", Pass = "bad" }, Ctx));
        Assert.Equal(1, auth.Verifier.BcryptRuns);
    }

    private static async Task WaitUntil(Func<bool> condition)
    {
        var deadline = DateTime.UtcNow + Wait;
        while (!condition())
        {
            Assert.True(DateTime.UtcNow < deadline, "condition not reached in time");
            await Task.Delay(5);
        }
    }
}
