namespace NatsBroker.MqttGateway;

/// <summary>
/// MQTT topic names and filters ⇄ NATS subjects, exactly as nats-server converts them (server/mqtt.go
/// mqttToNATSSubjectConversion, natsSubjectToMQTTTopic, mqttNeedSubForLevelUp):
/// <list type="bullet">
/// <item><c>/</c> → <c>.</c>; a leading <c>/</c> → <c>/.</c>; a <c>/</c> followed by another or at the end → <c>./</c>
/// (<c>foo//bar</c> → <c>foo./.bar</c>), so empty levels survive;</item>
/// <item><c>.</c> → <c>//</c>;</item>
/// <item><c>+</c> → <c>*</c>, <c>#</c> → <c>&gt;</c> (filters only; a topic name with them is refused);</item>
/// <item>space, tab, CR, LF, FF and DEL are refused.</item>
/// </list>
/// The reverse (subject → topic) undoes all of it.
/// </summary>
public static class TopicMapping
{
    /// <summary>A PUBLISH topic name → subject; null when the topic holds a wildcard or an unsupported character.</summary>
    public static string? TopicToSubject(string topic) => Convert(topic, wildcardsAllowed: false);

    /// <summary>A SUBSCRIBE filter → subject; null when it holds an unsupported character.</summary>
    public static string? FilterToSubject(string filter) => Convert(filter, wildcardsAllowed: true);

    private static string? Convert(string mt, bool wildcardsAllowed)
    {
        if (mt.Length == 0) return null;
        // Worst case: every character doubles.
        Span<char> res = mt.Length <= 512 ? stackalloc char[mt.Length * 2 + 1] : new char[mt.Length * 2 + 1];
        int j = 0;
        int end = mt.Length - 1;
        for (int i = 0; i < mt.Length; i++)
        {
            char c = mt[i];
            switch (c)
            {
                case '/':
                    if (i == 0 || res[j - 1] == '.')
                    {
                        res[j++] = '/';
                        res[j++] = '.';
                    }
                    else if (i == end || mt[i + 1] == '/')
                    {
                        res[j++] = '.';
                        res[j++] = '/';
                    }
                    else
                    {
                        res[j++] = '.';
                    }
                    break;
                case ' ' or '\t' or '\n' or '\r' or '\f' or (char)0x7f:
                    return null;
                case '.':
                    res[j++] = '/';
                    res[j++] = '/';
                    break;
                case '+' or '#':
                    if (!wildcardsAllowed) return null;
                    res[j++] = c == '+' ? '*' : '>';
                    break;
                default:
                    res[j++] = c;
                    break;
            }
        }
        // nats-server: a converted subject that ends with '.' gets a '/' so the last (empty) level is kept.
        if (res[j - 1] == '.') res[j++] = '/';
        return new string(res[..j]);
    }

    /// <summary>A NATS subject → MQTT topic (natsSubjectToMQTTTopic), written into <paramref name="topic"/>; returns its length.</summary>
    public static int SubjectToTopic(ReadOnlySpan<byte> subject, Span<byte> topic)
    {
        // Without '/' (the common subject) only '.' changes, one for one: a vectorized copy and replace.
        if (!subject.Contains((byte)'/'))
        {
            subject.Replace(topic, (byte)'.', (byte)'/');
            return subject.Length;
        }
        int end = subject.Length - 1;
        int j = 0;
        for (int i = 0; i < subject.Length; i++)
        {
            byte c = subject[i];
            switch (c)
            {
                case (byte)'/':
                    if (i < end)
                    {
                        byte next = subject[i + 1];
                        if (next == (byte)'.')
                        {
                            topic[j++] = (byte)'/';
                            i++;
                        }
                        else if (next == (byte)'/')
                        {
                            topic[j++] = (byte)'.';
                            i++;
                        }
                    }
                    break;
                case (byte)'.':
                    topic[j++] = (byte)'/';
                    break;
                default:
                    topic[j++] = c;
                    break;
            }
        }
        return j;
    }

    public static string SubjectToTopic(string subject)
    {
        var src = System.Text.Encoding.UTF8.GetBytes(subject);
        var dst = new byte[src.Length];
        int n = SubjectToTopic(src, dst);
        return System.Text.Encoding.UTF8.GetString(dst, 0, n);
    }

    /// <summary>
    /// A filter ending in <c>/#</c> (subject <c>x.&gt;</c>) also matches its parent level <c>x</c> in MQTT
    /// ([MQTT-4.7.1-2]): nats-server adds a second subscription on the parent subject (mqttNeedSubForLevelUp).
    /// Returns that parent subject, or null.
    /// </summary>
    public static string? LevelUpSubject(string subject) =>
        subject.Length >= 3 && subject[^2] == '.' && subject[^1] == '>' ? subject[..^2] : null;

    /// <summary>
    /// Filters starting with a wildcard (<c>#</c>, <c>+</c>, <c>+/...</c>) do not match topics starting with
    /// <c>$</c> ([MQTT-4.7.2-1], nats-server isMQTTReservedSubscription).
    /// </summary>
    public static bool IsReservedSubscription(string subject) =>
        (subject.Length == 1 && subject[0] is '>' or '*') || (subject.Length > 1 && subject[0] == '*' && subject[1] == '.');
}
