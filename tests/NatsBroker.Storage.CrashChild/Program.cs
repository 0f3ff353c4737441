using NatsBroker.Contracts;
using NatsBroker.Storage.CrashChild;
using NatsBroker.Storage.File;

// usage: CrashChild <dir> <always|periodic|async> [blockSize] [maxMsgs] [ops] [image=<bytes>]
// "image=N" sets the engine's image_interval_bytes (an index image checkpoint every N bytes written), so that
// kills land before, during and after the writing of checkpoint images.
// With "ops", it also removes a random message every 8 appends ("R <seq> ok") and compacts every 500
// ("C <seq> ok"), each reported after the call returned, and announced before it ("r"/"c" lines).
// Prints "READY <lastSeq>" after opening, then "A <seq> ok" for each acknowledged append (flushed to stdout
// before the next append in sync-always mode, every 256 appends otherwise, after IStreamStore.Commit). Payloads are derived from the
// sequence (see CrashPayload) so the parent can check that every byte is intact.
if (args.Length < 2) return 2;
var sync = args[1] switch { "always" => SyncPolicy.Always, "async" => SyncPolicy.AsyncPersist, _ => SyncPolicy.Periodic };
var opts = new Dictionary<string, string> { ["block_size"] = args.Length > 2 ? args[2] : "262144" };
foreach (var a in args.Skip(4))
{
    if (a.StartsWith("image=", StringComparison.Ordinal)) opts["image_interval_bytes"] = a["image=".Length..];
}
long maxMsgs = args.Length > 3 ? long.Parse(args[3], System.Globalization.CultureInfo.InvariantCulture) : 0;
var cfg = new StreamStoreConfig
{
    StreamName = "crash",
    Sync = sync,
    EngineOptions = opts,
    FlushInterval = TimeSpan.FromMilliseconds(5),
    Limits = new StreamLimits { MaxMessages = maxMsgs },
};
var r = new FileStoreFactory().Open(cfg, args[0]);
// A buffer larger than 256 reports: nothing reaches the parent before the commit that covers it.
var stdout = new StreamWriter(Console.OpenStandardOutput(), bufferSize: 1 << 16) { AutoFlush = false };
if (!r.IsOk)
{
    stdout.WriteLine($"ERROR {r.Status} {r.Error}");
    stdout.Flush();
    return 3;
}
var store = r.Store!;
stdout.WriteLine($"READY {store.GetState().LastSequence}");
stdout.Flush();
var payload = new byte[200];
var subject = new byte[16];
int n = 0;
bool withOps = args.Length > 4 && args[4] == "ops";
var rnd = new Random();
while (true)
{
    ulong next = store.GetState().LastSequence + 1;
    int len = CrashPayload.Fill(next, payload);
    int sl = CrashPayload.Subject(next, subject);
    var a = store.Append(subject.AsSpan(0, sl), default, payload.AsSpan(0, len));
    if (!a.IsOk)
    {
        stdout.WriteLine($"ERROR {a.Status}");
        stdout.Flush();
        return 4;
    }
    if (a.Sequence != next)
    {
        stdout.WriteLine($"ERROR expected {next} got {a.Sequence}");
        stdout.Flush();
        return 5;
    }
    // "A <seq> ok": the trailing token tells a complete report from a line torn by the kill.
    stdout.Write("A ");
    stdout.Write(a.Sequence);
    stdout.WriteLine(" ok");
    if (withOps && n % 8 == 7)
    {
        var st = store.GetState();
        if (st.Messages > 2)
        {
            ulong victim = st.FirstSequence + (ulong)rnd.NextInt64((long)(st.LastSequence - st.FirstSequence));
            // Intent first: a kill between the call and its report leaves the outcome open, not unreported.
            stdout.Write("r ");
            stdout.Write(victim);
            stdout.WriteLine(" ok");
            stdout.Flush();
            if (store.Remove(victim) == StoreStatus.Ok)
            {
                stdout.Write("R ");
                stdout.Write(victim);
                stdout.WriteLine(" ok");
            }
        }
    }
    if (withOps && n % 500 == 499)
    {
        ulong to = store.GetState().FirstSequence + 40;
        stdout.Write("c ");
        stdout.Write(to);
        stdout.WriteLine(" ok");
        stdout.Flush();
        if (store.Compact(to).Status == StoreStatus.Ok)
        {
            stdout.Write("C ");
            stdout.Write(to);
            stdout.WriteLine(" ok");
        }
    }
    n++;
    if (sync == SyncPolicy.Always || (n & 255) == 0)
    {
        // As JetStream acknowledges: the appends reported are committed first (IStreamStore.Commit: handed to the OS
        // in periodic mode), so every "A" line the parent reads must survive the kill.
        var committed = store.Commit();
        if (committed != StoreStatus.Ok)
        {
            stdout.WriteLine($"ERROR commit {committed}");
            stdout.Flush();
            return 6;
        }
        stdout.Flush();
    }
}
