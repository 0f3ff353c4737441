using System.Net.Sockets;
using System.Text;
using NatsBroker.Auth;
using NatsBroker.Configuration;
using NatsBroker.Tests.Server;

namespace NatsBroker.Tests.Auth;

/// <summary>
/// A CONNECT that needs bcrypt is decided on the server's hashing queue; what the client sent after it must still
/// run in order, only after the verdict, and never after a denial (nats-server processes a client's ops in order).
/// </summary>
public class QueuedConnectAuthTests
{
    // Cost 8: a few ms per check, so the verdict arrives after the rest of the batch is already buffered.
    private static readonly string Hash = Bcrypt.Hash("secret", 8);

    private static EmbeddedServer Start(Action<ServerOptions>? more = null) => new(o =>
    {
        o.Users = [new UserConfig { User = "u", Password = Hash }, new UserConfig { User = "plain", Password = "pw" }];
        more?.Invoke(o);
    });

    private static Socket Open(EmbeddedServer server, string firstWrite)
    {
        var s = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true, ReceiveTimeout = 5000 };
        s.Connect("127.0.0.1", server.Port);
        EmbeddedServer.ReadUntil(s, "\r\n"u8);
        s.Send(Encoding.ASCII.GetBytes(firstWrite));
        return s;
    }

    private static string ReadToClose(Socket s)
    {
        var all = new MemoryStream();
        var buf = new byte[4096];
        try
        {
            int n;
            while ((n = s.Receive(buf)) > 0) all.Write(buf, 0, n);
        }
        catch (SocketException)
        {
            // reset after the server's close: what was read is the answer
        }
        return Encoding.ASCII.GetString(all.ToArray());
    }

    [Fact]
    public async Task Ops_behind_a_bcrypt_connect_run_after_the_verdict_in_order()
    {
        await using var server = Start();
        using var s = Open(server,
            "CONNECT {\"verbose\":true,\"pedantic\":false,\"user\":\"u\",\"pass\":\"secret\"}\r\nSUB foo 1\r\nPUB foo 2\r\nhi\r\nPING\r\n");
        var text = Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(s, "PONG\r\n"u8));
        Assert.Equal("+OK\r\n+OK\r\n+OK\r\nMSG foo 1 2\r\nhi\r\nPONG\r\n", text);
        Assert.Equal(1, server.Server.PasswordHashing.Hashed);
    }

    [Fact]
    public async Task Nothing_behind_a_denied_bcrypt_connect_runs()
    {
        await using var server = Start();
        using var watcher = server.Connect("CONNECT {\"verbose\":false,\"user\":\"plain\",\"pass\":\"pw\"}\r\nSUB foo 1\r\nPING\r\n");
        EmbeddedServer.ReadUntil(watcher, "PONG\r\n"u8);

        using var s = Open(server, "CONNECT {\"verbose\":false,\"user\":\"u\",\"pass\":\"wrong\"}\r\nPUB foo 2\r\nhi\r\nPING\r\n");
        Assert.Equal("-ERR 'Authorization Violation'\r\n", ReadToClose(s));

        // The watcher got nothing: the PUB behind the denied CONNECT never ran.
        watcher.Send("PING\r\n"u8);
        Assert.Equal("PONG\r\n", Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(watcher, "PONG\r\n"u8)));
        Assert.Equal(1, server.Server.PasswordHashing.Hashed);
    }

    [Fact]
    public async Task A_verified_password_is_not_hashed_again_and_plain_users_never_queue()
    {
        await using var server = Start();
        for (int i = 0; i < 3; i++)
        {
            using var s = Open(server, "CONNECT {\"verbose\":false,\"user\":\"u\",\"pass\":\"secret\"}\r\nPING\r\n");
            Assert.Equal("PONG\r\n", Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(s, "PONG\r\n"u8)));
        }
        using (var p = Open(server, "CONNECT {\"verbose\":false,\"user\":\"plain\",\"pass\":\"pw\"}\r\nPING\r\n"))
            Assert.Equal("PONG\r\n", Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(p, "PONG\r\n"u8)));
        Assert.Equal(1, server.Server.PasswordHashing.Hashed);
    }

    [Fact]
    public async Task Auth_timeout_still_cuts_a_connect_whose_check_takes_too_long()
    {
        // Cost 14 takes around a second (crypt("secret", "$2a$14$Xk3bq0Z6mYtQ1wL8pR5vNe") from libxcrypt, so the
        // test does not spend that second making it); auth_timeout is 300 ms.
        const string slow = "$2a$14$Xk3bq0Z6mYtQ1wL8pR5vNeQj8GYHqUuU4/8eX.3xZU.Tbl9DkuCJS";
        await using var server = new EmbeddedServer(o =>
        {
            o.Users = [new UserConfig { User = "u", Password = slow }];
            o.AuthTimeout = TimeSpan.FromMilliseconds(300);
        });
        using var s = Open(server, "CONNECT {\"verbose\":false,\"user\":\"u\",\"pass\":\"secret\"}\r\nPING\r\n");
        Assert.Equal("-ERR 'Authentication Timeout'\r\n", ReadToClose(s));
    }

    [Fact]
    public async Task Reload_rechecks_bcrypt_users_off_the_reload_thread()
    {
        await using var server = Start();
        using var s = Open(server, "CONNECT {\"verbose\":false,\"user\":\"u\",\"pass\":\"secret\"}\r\nPING\r\n");
        EmbeddedServer.ReadUntil(s, "PONG\r\n"u8);
        long before = server.Server.PasswordHashing.Hashed;

        // The password changed: the connection's credentials are checked against the new hash, on the queue.
        var next = new ServerOptions { Host = "127.0.0.1", Users = [new UserConfig { User = "u", Password = Bcrypt.Hash("other", 8) }] };
        var started = DateTime.UtcNow;
        server.Server.Reload(next);
        Assert.True(DateTime.UtcNow - started < TimeSpan.FromSeconds(1));
        Assert.Equal("-ERR 'Authorization Violation'\r\n", ReadToClose(s));
        Assert.Equal(before + 1, server.Server.PasswordHashing.Hashed);
    }

    [Fact]
    public async Task Reload_keeps_a_bcrypt_user_whose_password_still_matches()
    {
        await using var server = Start();
        using var s = Open(server, "CONNECT {\"verbose\":false,\"user\":\"u\",\"pass\":\"secret\"}\r\nPING\r\n");
        EmbeddedServer.ReadUntil(s, "PONG\r\n"u8);
        var next = new ServerOptions { Host = "127.0.0.1", Users = [new UserConfig { User = "u", Password = Bcrypt.Hash("secret", 8) }] };
        server.Server.Reload(next);
        var deadline = DateTime.UtcNow.AddSeconds(5);
        while (server.Server.PasswordHashing.Hashed < 2 && DateTime.UtcNow < deadline) await Task.Delay(10);
        Assert.Equal(2, server.Server.PasswordHashing.Hashed);
        s.Send("PING\r\n"u8);
        Assert.Equal("PONG\r\n", Encoding.ASCII.GetString(EmbeddedServer.ReadUntil(s, "PONG\r\n"u8)));
    }
}
