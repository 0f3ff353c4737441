using NatsBroker.Configuration;

namespace NatsBroker.Tests.Configuration;

public class ConfigParserTests
{
    private static ConfigMap P(string text) => ConfigParser.Parse(text).Root;

    [Theory]
    [InlineData("port: 4222")]
    [InlineData("port = 4222")]
    [InlineData("port 4222")]
    [InlineData("port:4222")]
    [InlineData("  port   =   4222   ")]
    [InlineData("port: 4222;")]
    [InlineData("\"port\": 4222")]
    [InlineData("'port' = 4222")]
    [InlineData("port\n4222")] // lex.go lexKeyEnd skips new lines between a key and its value
    [InlineData("{ port: 4222 }")] // the whole file may be wrapped in braces
    public void Key_value_forms(string text)
    {
        Assert.Equal(4222, P(text)["port"].AsInteger());
    }

    [Fact]
    public void Comments_hash_and_slash()
    {
        var m = P("# a comment\n// another\nport: 1 # trailing\nhost: h // trailing\n");
        Assert.Equal(1, m["port"].AsInteger());
        Assert.Equal("h", m["host"].AsString());
        Assert.Equal(2, m.Count);
    }

    [Fact]
    public void Top_level_values_separated_by_comma_or_semicolon()
    {
        var m = P("a: 1, b: 2; c: 3");
        Assert.Equal(3, m["c"].AsInteger());
        Assert.Equal(3, m.Count);
    }

    [Theory]
    [InlineData("true", true)]
    [InlineData("TRUE", true)]
    [InlineData("yes", true)]
    [InlineData("on", true)]
    [InlineData("false", false)]
    [InlineData("no", false)]
    [InlineData("Off", false)]
    public void Booleans(string word, bool expected)
    {
        var v = P($"x: {word}")["x"];
        Assert.Equal(ConfigValueKind.Bool, v.Kind);
        Assert.Equal(expected, v.AsBool());
    }

    [Fact]
    public void Quoted_booleans_are_strings()
    {
        Assert.Equal("true", P("x: \"true\"")["x"].AsString());
    }

    [Theory]
    [InlineData("1k", 1000)]
    [InlineData("1K", 1000)]
    [InlineData("1kb", 1024)]
    [InlineData("1KB", 1024)]
    [InlineData("1Ki", 1024)]
    [InlineData("1KiB", 1024)]
    [InlineData("64KB", 64 * 1024)]
    [InlineData("1m", 1_000_000)]
    [InlineData("1MB", 1024 * 1024)]
    [InlineData("2MiB", 2 * 1024 * 1024)]
    [InlineData("1G", 1_000_000_000)]
    [InlineData("1GB", 1L << 30)]
    [InlineData("1TB", 1L << 40)]
    [InlineData("1P", 1_000_000_000_000_000)]
    [InlineData("-1", -1)]
    [InlineData("-2k", -2000)]
    [InlineData("0", 0)]
    public void Integers_and_size_suffixes(string text, long expected)
    {
        var v = P($"x: {text}")["x"];
        Assert.Equal(ConfigValueKind.Integer, v.Kind);
        Assert.Equal(expected, v.AsInteger());
    }

    [Theory]
    [InlineData("10s")]
    [InlineData("500ms")]
    [InlineData("1h30m")]
    [InlineData("4222abc")]
    public void Digits_followed_by_letters_are_strings(string text)
    {
        Assert.Equal(text, P($"x: {text}")["x"].AsString());
    }

    [Fact]
    public void Unquoted_2m_is_an_integer_like_in_nats_server()
    {
        // m is a size suffix: nats-server reads `ping_interval: 2m` as 2000000 (seconds, with a warning).
        Assert.Equal(2_000_000, P("x: 2m")["x"].AsInteger());
    }

    [Fact]
    public void Floats_ip_addresses_and_datetimes()
    {
        var m = P("f: 1.5\nn: -0.25\nip: 127.0.0.1:4222\nd: 2024-01-02T03:04:05Z");
        Assert.Equal(1.5, m["f"].AsFloat());
        Assert.Equal(-0.25, m["n"].AsFloat());
        Assert.Equal("127.0.0.1:4222", m["ip"].AsString());
        Assert.Equal(new DateTimeOffset(2024, 1, 2, 3, 4, 5, TimeSpan.Zero), m["d"].AsDateTime());
    }

    [Fact]
    public void Strings_quoted_unquoted_and_escapes()
    {
        var m = P("a: \"x y\\t\\\"q\\\"\\x41\"\nb: 'raw \\n'\nc: some.thing\nd: localhost:8222\ne: \"\"");
        Assert.Equal("x y\t\"q\"A", m["a"].AsString());
        Assert.Equal("raw \\n", m["b"].AsString());
        Assert.Equal("some.thing", m["c"].AsString());
        Assert.Equal("localhost:8222", m["d"].AsString());
        Assert.Equal("", m["e"].AsString());
    }

    [Fact]
    public void Block_string_ends_at_a_lone_paren()
    {
        var m = P("text: (\nline one\nline (two)\n)\nport: 1\n");
        Assert.Equal("\nline one\nline (two)\n", m["text"].AsString());
        Assert.Equal(1, m["port"].AsInteger());
    }

    [Fact]
    public void Nested_maps_and_arrays()
    {
        var m = P("""
            authorization {
              user = a
              pass: b
              inner { deep: { x: 1 } }
              users = [
                {user: u1, password: p1}
                {user: u2, password: p2},
              ]
            }
            list: [1, "two", three, [4], {five: 5}]
            nl_list: [
              a # comment
              b // comment
              c
            ]
            """);
        var auth = m["authorization"].AsMap();
        Assert.Equal("a", auth["user"].AsString());
        Assert.Equal(1, auth["inner"].AsMap()["deep"].AsMap()["x"].AsInteger());
        var users = auth["users"].AsArray();
        Assert.Equal(2, users.Count);
        Assert.Equal("p2", users[1].AsMap()["password"].AsString());
        var list = m["list"].AsArray();
        Assert.Equal(5, list.Count);
        Assert.Equal(1, list[0].AsInteger());
        Assert.Equal("two", list[1].AsString());
        Assert.Equal("three", list[2].AsString());
        Assert.Equal(4, list[3].AsArray()[0].AsInteger());
        Assert.Equal(5, list[4].AsMap()["five"].AsInteger());
        Assert.Equal(["a", "b", "c"], m["nl_list"].AsArray().Select(v => v.AsString()));
    }

    [Fact]
    public void Map_without_separator_and_map_in_one_line()
    {
        var m = P("a { b: 1, c: 2; d 3 }\ne {}\nf []");
        Assert.Equal(3, m["a"].AsMap()["d"].AsInteger());
        Assert.Empty(m["e"].AsMap());
        Assert.Empty(m["f"].AsArray());
    }

    [Fact]
    public void Positions_are_line_and_one_based_column()
    {
        var tree = ConfigParser.Parse("port: 1\n\n  auth {\n    user: x\n  }\n", "f.conf");
        var e = tree.Root.Single(x => x.Key == "auth");
        Assert.Equal(new SourcePosition("f.conf", 3, 3), e.KeyPosition);
        var user = e.Value.AsMap().Single();
        Assert.Equal(new SourcePosition("f.conf", 4, 5), user.KeyPosition);
        Assert.Equal(new SourcePosition("f.conf", 4, 11), user.Value.Position);
        Assert.Equal("f.conf:4:11", user.Value.Position.ToString());
    }

    [Fact]
    public void Later_key_replaces_earlier()
    {
        Assert.Equal(2, P("port: 1\nport: 2")["port"].AsInteger());
    }

    [Fact]
    public void Variables_block_scoped_and_marked_used()
    {
        var m = P("""
            NAME = "outer"
            PORT: 4333
            port: $PORT
            a {
              NAME = "inner"
              who: $NAME
              list: [$NAME, $PORT]
            }
            who: $NAME
            """);
        Assert.Equal(4333, m["port"].AsInteger());
        Assert.Equal("inner", m["a"].AsMap()["who"].AsString());
        Assert.Equal(["inner", "4333"], m["a"].AsMap()["list"].AsArray().Select(v => v.ToString()));
        Assert.Equal("outer", m["who"].AsString());
        Assert.True(m["PORT"].UsedAsVariable);
        Assert.False(m["port"].UsedAsVariable);
    }

    [Fact]
    public void Variable_defined_in_block_is_not_visible_outside()
    {
        var e = Assert.Throws<ConfigException>(() => ConfigParser.Parse("a {\n X = 1\n y: $X\n}\nz: $X\n", "v.conf"));
        Assert.Equal("v.conf:5:4: variable reference for 'X' on line 5 can not be found", e.Message);
    }

    [Fact]
    public void Variables_fall_back_to_environment_parsed_as_values()
    {
        string name = "NATSBROKER_TEST_" + Guid.NewGuid().ToString("N");
        Environment.SetEnvironmentVariable(name + "_Z", "64KB");
        Environment.SetEnvironmentVariable(name + "_M", "{ a: 1 }");
        Environment.SetEnvironmentVariable(name + "_BAD", "1 2");
        try
        {
            var m = P($"z: ${name}_Z\nm: ${name}_M");
            Assert.Equal(65536, m["z"].AsInteger());
            Assert.Equal(1, m["m"].AsMap()["a"].AsInteger());
            var e = Assert.Throws<ConfigException>(() => P($"x: ${name}_BAD"));
            Assert.Contains($"variable reference for '{name}_BAD' on line 1 could not be parsed", e.Message, StringComparison.Ordinal);
        }
        finally
        {
            Environment.SetEnvironmentVariable(name + "_Z", null);
            Environment.SetEnvironmentVariable(name + "_M", null);
            Environment.SetEnvironmentVariable(name + "_BAD", null);
        }
    }

    [Fact]
    public void Environment_variable_values()
    {
        string name = "NATSBROKER_TEST_" + Guid.NewGuid().ToString("N");
        Environment.SetEnvironmentVariable(name, "4555");
        try
        {
            Assert.Equal(4555, P($"p: ${name}")["p"].AsInteger());
        }
        finally
        {
            Environment.SetEnvironmentVariable(name, null);
        }
    }

    [Fact]
    public void Local_variable_wins_over_environment()
    {
        string name = "NATSBROKER_TEST_" + Guid.NewGuid().ToString("N");
        Environment.SetEnvironmentVariable(name, "1");
        try
        {
            Assert.Equal(2, P($"{name}: 2\np: ${name}")["p"].AsInteger());
        }
        finally
        {
            Environment.SetEnvironmentVariable(name, null);
        }
    }

    [Fact]
    public void Bcrypt_hash_is_not_a_variable()
    {
        const string hash = "$2a$11$W2zko751KUvVy59mUTWmpOdWjpEm5qhcCZRd05GjI/sSOT.xtiHyG";
        Assert.Equal(hash, P($"password: {hash}")["password"].AsString());
    }

    [Fact]
    public void Include_relative_to_including_file_merges_keys()
    {
        using var d = new TempDir();
        d.Write("sub/auth.conf", "user: a\npass: b\n");
        d.Write("sub/limits.conf", "max_payload: 2MB\ninclude './auth_top.conf'\n");
        d.Write("sub/auth_top.conf", "debug: true\n");
        string main = d.Write("main.conf", "port: 1\ninclude sub/limits.conf\nauthorization {\n  include \"sub/auth.conf\"\n}\n");
        var m = ConfigParser.ParseFile(main).Root;
        Assert.Equal(2 * 1024 * 1024, m["max_payload"].AsInteger());
        Assert.True(m["debug"].AsBool());
        Assert.Equal("a", m["authorization"].AsMap()["user"].AsString());
        Assert.EndsWith("auth.conf", m["authorization"].AsMap()["user"].Position.File, StringComparison.Ordinal);
        Assert.Equal(1, m["authorization"].AsMap()["user"].Position.Line);
    }

    [Fact]
    public void Include_missing_file_reports_nats_server_message()
    {
        using var d = new TempDir();
        string main = d.Write("main.conf", "port: 1\ninclude ./nope.conf\n");
        var e = Assert.Throws<ConfigException>(() => ConfigParser.ParseFile(main));
        Assert.StartsWith($"{main}:2:9: error parsing include file '", e.Message, StringComparison.Ordinal);
        Assert.EndsWith("nope.conf: no such file or directory", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Include_cycle_is_an_error_not_a_crash()
    {
        using var d = new TempDir();
        d.Write("a.conf", "include b.conf\n");
        d.Write("b.conf", "include a.conf\n");
        var e = Assert.Throws<ConfigException>(() => ConfigParser.ParseFile(System.IO.Path.Combine(d.Path, "a.conf")));
        Assert.Contains("include cycle", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void Missing_file()
    {
        var e = Assert.Throws<ConfigException>(() => ConfigParser.ParseFile("/nonexistent/x.conf"));
        Assert.Equal("open /nonexistent/x.conf: no such file or directory", e.Message);
    }

    [Theory]
    [InlineData("key: \"unterminated\n", "1:6: Unexpected EOF.")]
    [InlineData("a {\n b: 1\n", "3:1: Unexpected EOF processing map.")]
    [InlineData("a: [1, 2\n", "2:1: Unexpected EOF processing array.")]
    [InlineData("a: [1,,2]", "1:7: Unexpected array value terminator ','.")]
    [InlineData("a: [1 2]", "1:7: Expected an array value terminator ',' or an array terminator ']', but got '2' instead.")]
    [InlineData("a: 1 2", "1:6: Expected a top-level value to end with a new line, comment or EOF, but got '2' instead.")]
    [InlineData("a: { b: 1 c }", "1:11: Expected a map value terminator ',' or a map terminator '}', but got 'c' instead.")]
    [InlineData("a:\n1", "1:3: Expected value but found new line")]
    [InlineData("a: .5", "1:4: Floats must start with a digit")]
    [InlineData("a: 1.x", "1:6: Floats must have a digit after the '.', but got 'x' instead.")]
    [InlineData("a: -x", "1:5: Expected a digit but got 'x'.")]
    [InlineData("a: 12-3", "1:6: All ISO8601 dates must be in full Zulu form.")]
    [InlineData("a: \"\\q\"", "1:7: Invalid escape character 'q'. Only the following escape characters are allowed: \\xXX, \\t, \\n, \\r, \\\", \\\\.")]
    [InlineData("a: (\nnot closed", "2:11: Unexpected EOF processing block.")]
    [InlineData("a: $nope_not_set_anywhere_x", "1:4: variable reference for 'nope_not_set_anywhere_x' on line 1 can not be found")]
    [InlineData("a: 99999999999999999999", "1:4: integer '99999999999999999999' is out of the range")]
    [InlineData("a: 9999999999EB", "1:4: integer '9999999999EB' is out of the range")]
    [InlineData(": 1", "1:1: Unexpected key separator ':'")]
    [InlineData("a: {\n  : 1 }", "2:3: Unexpected key separator ':'")]
    [InlineData("port", "1:1: key \"port\" has no value")]
    [InlineData("include [x]", "1:9: Expected include value but found start of an array")]
    public void Syntax_errors_with_line_and_column(string text, string expected)
    {
        var e = Assert.Throws<ConfigException>(() => ConfigParser.Parse(text, "t.conf"));
        Assert.Equal("t.conf:" + expected, e.Message);
    }
}
