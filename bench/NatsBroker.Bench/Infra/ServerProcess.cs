using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;

namespace NatsBroker.Bench.Infra;

/// <summary>How to start one server: executable + leading args; the harness appends nats-server flags.</summary>
internal sealed record ServerSpec(string Label, string FileName, IReadOnlyList<string> PrefixArgs)
{
    /// <summary>The command for reports, with paths inside the current directory shown relative (no machine paths).</summary>
    public string Display => string.Join(' ', new[] { FileName }.Concat(PrefixArgs).Select(Relative));

    private static string Relative(string arg)
    {
        var cwd = Directory.GetCurrentDirectory().TrimEnd('/') + "/";
        return arg.StartsWith(cwd, StringComparison.Ordinal) ? arg[cwd.Length..] : arg;
    }

    /// <summary>Parses a command line such as "dotnet core/bin/Release/net10.0/NatsBroker.dll" (space separated, quotes allowed).</summary>
    public static ServerSpec Parse(string label, string commandLine)
    {
        var parts = SplitArgs(commandLine);
        if (parts.Count == 0)
        {
            throw new ArgumentException("empty server command");
        }

        return new ServerSpec(label, parts[0], parts.Skip(1).ToList());
    }

    private static List<string> SplitArgs(string s)
    {
        var list = new List<string>();
        var cur = new StringBuilder();
        bool inQ = false;
        bool any = false;
        foreach (char ch in s)
        {
            if (ch == '"')
            {
                inQ = !inQ;
                any = true;
            }
            else if (char.IsWhiteSpace(ch) && !inQ)
            {
                if (any)
                {
                    list.Add(cur.ToString());
                    cur.Clear();
                    any = false;
                }
            }
            else
            {
                cur.Append(ch);
                any = true;
            }
        }

        if (any)
        {
            list.Add(cur.ToString());
        }

        return list;
    }
}

/// <summary>A running server process on a free loopback port with its own fresh store directory.</summary>
internal sealed class ServerProcess : IDisposable
{
    private readonly Process _process;
    private readonly StringBuilder _log = new();
    private readonly string _storeDir;

    private ServerProcess(Process p, int port, string storeDir)
    {
        _process = p;
        Port = port;
        _storeDir = storeDir;
    }

    public int Pid => _process.Id;

    public int Port { get; }

    public IPEndPoint Endpoint => new(IPAddress.Loopback, Port);

    public string Log
    {
        get
        {
            lock (_log)
            {
                return _log.ToString();
            }
        }
    }

    public string LogTail(int lines = 8)
    {
        var all = Log.Split('\n', StringSplitOptions.RemoveEmptyEntries);
        return string.Join(" | ", all.TakeLast(lines)).Trim();
    }

    public static int FreePort()
    {
        var l = new TcpListener(IPAddress.Loopback, 0);
        l.Start();
        int port = ((IPEndPoint)l.LocalEndpoint).Port;
        l.Stop();
        return port;
    }

    /// <summary>Starts the server and waits (bounded) until it answers with INFO on its port.</summary>
    public static ServerProcess Start(ServerSpec spec, bool jetStream, string tmpRoot, TimeSpan timeout, IReadOnlyList<string>? extraArgs = null)
    {
        int port = FreePort();
        string store = Path.Combine(tmpRoot, $"{spec.Label}-{port}-{Guid.NewGuid():N}"[..40]);
        Directory.CreateDirectory(store);
        var psi = new ProcessStartInfo(spec.FileName)
        {
            RedirectStandardError = true,
            RedirectStandardOutput = true,
            RedirectStandardInput = false,
            UseShellExecute = false,
        };
        foreach (var a in spec.PrefixArgs)
        {
            psi.ArgumentList.Add(a);
        }

        psi.ArgumentList.Add("-a");
        psi.ArgumentList.Add("127.0.0.1");
        psi.ArgumentList.Add("-p");
        psi.ArgumentList.Add(port.ToString(System.Globalization.CultureInfo.InvariantCulture));
        foreach (var a in extraArgs ?? [])
        {
            psi.ArgumentList.Add(a);
        }

        if (jetStream)
        {
            psi.ArgumentList.Add("-js");
            psi.ArgumentList.Add("-sd");
            psi.ArgumentList.Add(store);
        }

        Process p;
        try
        {
            p = Process.Start(psi) ?? throw new InvalidOperationException("process did not start");
        }
        catch (System.ComponentModel.Win32Exception ex)
        {
            throw new InvalidOperationException($"cannot start '{spec.FileName}': {ex.Message}", ex);
        }

        var sp = new ServerProcess(p, port, store);
        p.OutputDataReceived += (_, e) => sp.Append(e.Data);
        p.ErrorDataReceived += (_, e) => sp.Append(e.Data);
        p.BeginOutputReadLine();
        p.BeginErrorReadLine();
        try
        {
            sp.WaitReady(timeout);
        }
        catch
        {
            sp.Dispose();
            throw;
        }

        return sp;
    }

    private void Append(string? line)
    {
        if (line is null)
        {
            return;
        }

        lock (_log)
        {
            if (_log.Length < 64 * 1024)
            {
                _log.AppendLine(line);
            }
        }
    }

    private void WaitReady(TimeSpan timeout)
    {
        var sw = Stopwatch.StartNew();
        Exception? last = null;
        while (sw.Elapsed < timeout)
        {
            if (_process.HasExited)
            {
                _process.WaitForExit(1000);
                throw new InvalidOperationException($"server exited with code {_process.ExitCode} at startup: {LogTail()}");
            }

            try
            {
                using var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
                using (var cts = new CancellationTokenSource(TimeSpan.FromSeconds(1)))
                {
                    s.ConnectAsync(Endpoint, cts.Token).AsTask().GetAwaiter().GetResult();
                }

                s.ReceiveTimeout = 2000;
                var buf = new byte[4];
                int n = s.Receive(buf);
                if (n >= 4 && Encoding.ASCII.GetString(buf, 0, 4).Equals("INFO", StringComparison.OrdinalIgnoreCase))
                {
                    return;
                }

                last = new InvalidDataException("server did not send INFO");
            }
            catch (Exception ex) when (ex is SocketException or OperationCanceledException or IOException)
            {
                last = ex;
            }

            Thread.Sleep(25);
        }

        throw new TimeoutException($"server not ready on port {Port} after {timeout.TotalSeconds:0} s ({last?.Message}): {LogTail()}");
    }

    /// <summary>CPU of the server and its children (the gateways ours supervises are part of the server's cost).</summary>
    public double CpuSeconds() => ProcStats.TreeCpuSeconds(Pid);

    /// <summary>Peak RSS of the server plus its children's.</summary>
    public long PeakRssBytes() => ProcStats.TreePeakRssBytes(Pid);

    public bool HasExited => _process.HasExited;

    public void Dispose()
    {
        try
        {
            if (!_process.HasExited)
            {
                _process.Kill(entireProcessTree: true);
            }

            _process.WaitForExit(5000);
        }
        catch (InvalidOperationException)
        {
        }

        _process.Dispose();
        try
        {
            Directory.Delete(_storeDir, recursive: true);
        }
        catch (IOException)
        {
        }
        catch (UnauthorizedAccessException)
        {
        }
    }
}
