using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using System.Text;
using NatsBroker.Tests.Infrastructure;

namespace NatsBroker.Tests.Auth;

/// <summary>Runs the reference nats-server on a free loopback port with a given config, for differential tests.</summary>
internal sealed class NatsServerOracle : IDisposable
{
    private readonly Process _process;
    private readonly string _dir;

    public int Port { get; }

    /// <param name="configBody">Config text after the listen line.</param>
    /// <param name="exe">The binary (e.g. <see cref="TestEnvironment.Oracle214Path"/>); default Debian's nats-server.</param>
    public NatsServerOracle(string configBody, string? exe = null)
    {
        exe ??= TestEnvironment.GoServerPath ?? throw new InvalidOperationException("nats-server not found (call Prerequisites.RequireGoServer first)");
        Port = TestPorts.Next();
        _dir = Directory.CreateTempSubdirectory("natsbroker-auth-").FullName;
        var conf = Path.Combine(_dir, "server.conf");
        File.WriteAllText(conf, $"listen: 127.0.0.1:{Port}\n{configBody}\n");
        var psi = new ProcessStartInfo(exe) { UseShellExecute = false, RedirectStandardOutput = true, RedirectStandardError = true };
        psi.ArgumentList.Add("-c");
        psi.ArgumentList.Add(conf);
        _process = Process.Start(psi)!;
        _process.OutputDataReceived += (_, _) => { };
        _process.ErrorDataReceived += (_, _) => { };
        _process.BeginOutputReadLine();
        _process.BeginErrorReadLine();
        var deadline = DateTime.UtcNow.AddSeconds(10);
        while (true)
        {
            try
            {
                using var probe = new TcpClient();
                probe.Connect(IPAddress.Loopback, Port);
                return;
            }
            catch (SocketException) when (DateTime.UtcNow < deadline && !_process.HasExited)
            {
                Thread.Sleep(20);
            }
        }
    }

    /// <summary>Opens a raw client; sends CONNECT (when given) followed by PING and returns what came back.</summary>
    public RawClient Connect(string? connectJson, out string reply)
    {
        var c = new RawClient(Port);
        reply = c.Send(connectJson is null ? "" : "CONNECT " + connectJson + "\r\n");
        return c;
    }

    public void Dispose()
    {
        try
        {
            _process.Kill();
            _process.WaitForExit(5000);
        }
        catch (InvalidOperationException)
        {
        }
        _process.Dispose();
        try
        {
            Directory.Delete(_dir, true);
        }
        catch (IOException)
        {
        }
    }
}

/// <summary>A protocol-level client: every <see cref="Send"/> appends PING and reads up to PONG (or the close).</summary>
internal sealed class RawClient : IDisposable
{
    private readonly TcpClient _tcp = new();
    private readonly NetworkStream _stream;
    private readonly StreamReader _reader;

    public RawClient(int port)
    {
        _tcp.Connect(IPAddress.Loopback, port);
        _tcp.ReceiveTimeout = 3000;
        _stream = _tcp.GetStream();
        _reader = new StreamReader(_stream, Encoding.Latin1);
        var info = _reader.ReadLine();
        Assert.StartsWith("INFO ", info, StringComparison.Ordinal);
    }

    public bool Closed { get; private set; }

    /// <summary>Lines received before PONG (server PINGs dropped); "&lt;closed&gt;" is appended when the server hung up.</summary>
    public string Send(string protocol)
    {
        var sb = new StringBuilder();
        try
        {
            var bytes = Encoding.Latin1.GetBytes(protocol + "PING\r\n");
            _stream.Write(bytes);
            while (true)
            {
                var line = _reader.ReadLine();
                if (line is null)
                {
                    Closed = true;
                    sb.Append("<closed>");
                    break;
                }
                if (line == "PONG") break;
                if (line == "PING") continue;
                sb.Append(line).Append('\n');
            }
        }
        catch (IOException)
        {
            Closed = true;
            sb.Append("<closed>");
        }
        return sb.ToString();
    }

    /// <summary>Reads one line as is (null when the server closed).</summary>
    public string? ReadLineForTest()
    {
        try
        {
            return _reader.ReadLine();
        }
        catch (IOException)
        {
            return null;
        }
    }

    public void Dispose()
    {
        _reader.Dispose();
        _tcp.Dispose();
    }
}
