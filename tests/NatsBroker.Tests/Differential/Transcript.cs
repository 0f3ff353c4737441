using System.Globalization;
using System.Text;
using System.Text.RegularExpressions;

namespace NatsBroker.Tests.Differential;

/// <summary>
/// A protocol transcript (Differential/Transcripts/*.txt), played against a server by <see cref="TranscriptPlayer"/>.
/// <code>
/// # comment
/// %config              server config lines until %end (optional; transcripts with the same config share a server)
/// max_payload: 16
/// %end
/// %conn b              open another connection (connection "a" is opened at the start); its INFO is recorded
/// a> PUB foo 2         one step: send the text + CRLF in one write, then record what every connection receives
/// a+ hi                append text + CRLF to the previous step's write (pipelining)
/// a>> PUB foo 1\r\nx   raw step: escapes (\r \n \t \\ \xHH) and no CRLF appended
/// %sleep 200           wait (ms) and record what arrives meanwhile
/// %close b             close connection b
/// %since 2.10 reason    nats-server 2.9.10 answers differently (behaviour 2.10+ changed; ours follows 2.14.5): the
///                       transcript is compared with 2.14.5 only
/// </code>
/// In every text <c>${N*c}</c> expands to the character c repeated N times.
/// </summary>
public sealed partial record Transcript(string Name, string? Config, IReadOnlyList<TranscriptStep> Steps, string? Since = null)
{
    public static string Directory => Path.Combine(Infrastructure.TestEnvironment.RepoRoot, "tests", "NatsBroker.Tests", "Differential", "Transcripts");

    public static IEnumerable<string> AllNames() =>
        System.IO.Directory.GetFiles(Directory, "*.txt").Select(Path.GetFileNameWithoutExtension).Order(StringComparer.Ordinal)!;

    public static Transcript Load(string name) => Parse(name, File.ReadAllText(Path.Combine(Directory, name + ".txt")));

    public static Transcript Parse(string name, string text)
    {
        string? config = null;
        string? since = null;
        var steps = new List<TranscriptStep>();
        var lines = text.Replace("\r\n", "\n", StringComparison.Ordinal).Split('\n');
        for (var i = 0; i < lines.Length; i++)
        {
            var line = lines[i];
            if (line.Length == 0 || line.StartsWith('#'))
            {
                continue;
            }

            if (line == "%config")
            {
                var sb = new StringBuilder();
                for (i++; i < lines.Length && lines[i] != "%end"; i++)
                {
                    sb.Append(lines[i]).Append('\n');
                }

                config = sb.ToString();
                continue;
            }

            var m = StepLine().Match(line);
            if (m.Success)
            {
                var conn = m.Groups["conn"].Value;
                var op = m.Groups["op"].Value;
                var body = Expand(m.Groups["text"].Value);
                switch (op)
                {
                    case ">":
                        steps.Add(new TranscriptStep(StepKind.Send, conn, Encoding.UTF8.GetBytes(body + "\r\n")));
                        break;
                    case ">>":
                        steps.Add(new TranscriptStep(StepKind.Send, conn, Unescape(body)));
                        break;
                    case "+":
                        if (steps.Count == 0 || steps[^1].Kind != StepKind.Send || steps[^1].Conn != conn)
                        {
                            throw new FormatException($"{name}:{i + 1}: '+' must continue a send step of the same connection");
                        }

                        steps[^1] = steps[^1] with { Data = [.. steps[^1].Data, .. Encoding.UTF8.GetBytes(body + "\r\n")] };
                        break;
                }

                continue;
            }

            var parts = line.Split(' ', 2);
            switch (parts[0])
            {
                case "%conn":
                    steps.Add(new TranscriptStep(StepKind.Open, parts[1].Trim(), []));
                    break;
                case "%close":
                    steps.Add(new TranscriptStep(StepKind.Close, parts[1].Trim(), []));
                    break;
                case "%since":
                    since = parts.Length > 1 && parts[1].Contains(' ', StringComparison.Ordinal)
                        ? parts[1].Trim()
                        : throw new FormatException($"{name}:{i + 1}: %since needs a version and the reason");
                    break;
                case "%sleep":
                    steps.Add(new TranscriptStep(StepKind.Sleep, "", [], int.Parse(parts[1], CultureInfo.InvariantCulture)));
                    break;
                default:
                    throw new FormatException($"{name}:{i + 1}: cannot parse '{line}'");
            }
        }

        return new Transcript(name, config, steps, since);
    }

    private static string Expand(string s) =>
        Repeat().Replace(s, m => new string(m.Groups[2].Value[0], int.Parse(m.Groups[1].Value, CultureInfo.InvariantCulture)));

    private static byte[] Unescape(string s)
    {
        var bytes = new List<byte>();
        for (var i = 0; i < s.Length; i++)
        {
            if (s[i] != '\\' || i + 1 >= s.Length)
            {
                bytes.AddRange(Encoding.UTF8.GetBytes(s[i].ToString()));
                continue;
            }

            var e = s[++i];
            switch (e)
            {
                case 'r': bytes.Add(13); break;
                case 'n': bytes.Add(10); break;
                case 't': bytes.Add(9); break;
                case '\\': bytes.Add((byte)'\\'); break;
                case 'x':
                    bytes.Add(byte.Parse(s.AsSpan(i + 1, 2), NumberStyles.HexNumber, CultureInfo.InvariantCulture));
                    i += 2;
                    break;
                default: throw new FormatException($"unknown escape \\{e}");
            }
        }

        return [.. bytes];
    }

    public override string ToString() => Name;

    [GeneratedRegex(@"^(?<conn>[a-z])(?<op>>>|>|\+) ?(?<text>.*)$")]
    private static partial Regex StepLine();

    [GeneratedRegex(@"\$\{(\d+)\*(.)\}")]
    private static partial Regex Repeat();
}

public enum StepKind
{
    Send,
    Open,
    Close,
    Sleep,
}

public sealed record TranscriptStep(StepKind Kind, string Conn, byte[] Data, int SleepMs = 0);
