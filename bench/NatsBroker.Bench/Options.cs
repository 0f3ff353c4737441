using System.Globalization;

namespace NatsBroker.Bench;

internal enum BenchMode
{
    Smoke,
    Quick,
    Full,
}

internal sealed class Options
{
    public BenchMode Mode { get; set; } = BenchMode.Full;

    public List<string> Filters { get; } = [];

    public int? Reps { get; set; }

    public long? Msgs { get; set; }

    public double Scale { get; set; } = 1;

    public string? OursCmd { get; set; }

    public string? GoCmd { get; set; }

    public bool NoOurs { get; set; }

    public bool NoGo { get; set; }

    public bool NoBuild { get; set; }

    public bool List { get; set; }

    public string Generators { get; set; } = "all";

    public string? OutDir { get; set; }

    public double TimeoutSeconds { get; set; } = 60;

    /// <summary>Start-up / memory footprint repetitions per server; 0 = skip (see <see cref="Footprint"/>).</summary>
    public int? FootprintReps { get; set; }

    public int FootprintRepsOrDefault => FootprintReps ?? Mode switch { BenchMode.Smoke => 1, BenchMode.Quick => 5, _ => 9 };

    public int RepsOrDefault => Reps ?? Mode switch { BenchMode.Smoke => 1, BenchMode.Quick => 2, _ => 5 };

    public double ModeScale => Mode switch { BenchMode.Smoke => 0.01, BenchMode.Quick => 1, _ => 3 } * Scale;

    public string ModeName => Mode.ToString().ToLowerInvariant();

    public const string Usage = """
        NatsBroker.Bench: side-by-side benchmarks of our broker against nats-server.

          dotnet run -c Release --project bench/NatsBroker.Bench -- [options]

          --quick               quick mode (2 reps, default counts; < 3 min)
          --smoke               smoke mode (1 rep, counts / 100; < 60 s; no timing claims)
          (default)             full mode (5 reps, counts x 3; < 25 min on 2 cores)
          --filter a,b          only scenarios whose name contains any of the strings (e.g. pubsub,reqrep)
                                or, with a leading '=', is exactly it (e.g. =pub-16,=fanout-128)
          --gen raw,mqtt,natsnet,natsjs|all  which load generators to run, comma-separated (default all)
          --reps N              repetitions per server (alternating ours, Go, ours, Go ...)
          --msgs N              message/request count for every selected scenario (overrides the mode counts)
          --scale X             multiply the mode's default counts by X
          --ours-cmd "CMD"      command that starts our broker (nats-server flags are appended), e.g.
                                --ours-cmd nats-server to validate the harness with Go on both sides
          --go-cmd PATH         nats-server executable (default: nats-server on PATH)
          --no-ours / --no-go   run one side only
          --no-build            do not build core/ (expects core/bin/Release/net10.0/NatsBroker: the native executable,
                        else NatsBroker.dll)
          --timeout S           bound for one run of one scenario in seconds (default 60)
          --out DIR             output directory (default bench/results; smoke: bench/results/tmp, git-ignored)
          --footprint-reps N    start-up / idle RSS / per-connection memory starts per server (default 9 full,
                                5 quick, 1 smoke; 0 skips); run when no --filter is given or one names "footprint"
          --list                list scenarios and exit
        """;

    public static Options Parse(string[] args)
    {
        var o = new Options();
        for (int i = 0; i < args.Length; i++)
        {
            string a = args[i];
            string Next() => i + 1 < args.Length ? args[++i] : throw new ArgumentException($"{a} needs a value");
            switch (a)
            {
                case "--quick": o.Mode = BenchMode.Quick; break;
                case "--smoke": o.Mode = BenchMode.Smoke; break;
                case "--full": o.Mode = BenchMode.Full; break;
                case "--filter": o.Filters.AddRange(Next().Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)); break;
                case "--reps": o.Reps = int.Parse(Next(), CultureInfo.InvariantCulture); break;
                case "--msgs": o.Msgs = long.Parse(Next(), CultureInfo.InvariantCulture); break;
                case "--scale": o.Scale = double.Parse(Next(), CultureInfo.InvariantCulture); break;
                case "--ours-cmd": o.OursCmd = Next(); break;
                case "--go-cmd": o.GoCmd = Next(); break;
                case "--no-ours": o.NoOurs = true; break;
                case "--no-go": o.NoGo = true; break;
                case "--no-build": o.NoBuild = true; break;
                case "--gen": o.Generators = Next(); break;
                case "--timeout": o.TimeoutSeconds = double.Parse(Next(), CultureInfo.InvariantCulture); break;
                case "--out": o.OutDir = Next(); break;
                case "--footprint-reps": o.FootprintReps = int.Parse(Next(), CultureInfo.InvariantCulture); break;
                case "--list": o.List = true; break;
                case "-h" or "--help": throw new HelpRequestedException();
                default: throw new ArgumentException("unknown option " + a);
            }
        }

        return o;
    }
}

internal sealed class HelpRequestedException : Exception
{
    public HelpRequestedException()
    {
    }

    public HelpRequestedException(string message)
        : base(message)
    {
    }

    public HelpRequestedException(string message, Exception inner)
        : base(message, inner)
    {
    }
}
