namespace NatsBroker.JetStream;

/// <summary>
/// The syntax check Go's json.Unmarshal makes before decoding (encoding/json scanner.go checkValid), with Go's error
/// text: nats-server puts that text into pull request refusals ("400 Bad Request - invalid character '}' looking
/// for beginning of object key string"). Only the first error is reported, as Go's scanner stops there.
/// </summary>
internal static class GoJsonSyntax
{
    private enum State
    {
        BeginValue, BeginValueOrEmpty, BeginStringOrEmpty, BeginString, EndValue, EndTop,
        InString, InStringEsc, InStringEscU, Neg, Zero, One, Dot, Dot0, E, ESign, E0, Literal,
    }

    private enum Ctx : byte { ObjectKey, ObjectValue, ArrayValue }

    /// <summary>Null when <paramref name="json"/> is one valid JSON value, else Go's error text.</summary>
    public static string? Check(ReadOnlySpan<byte> json)
    {
        var stack = new Stack<Ctx>();
        var state = State.BeginValue;
        int hexLeft = 0;
        ReadOnlySpan<byte> literal = default;
        string literalName = "";
        int literalAt = 0;
        for (int i = 0; i <= json.Length; i++)
        {
            bool eof = i == json.Length;
            // At the end Go feeds one space: a number at the top level ends there; anything else unfinished is EOF.
            byte c = eof ? (byte)' ' : json[i];
        again:
            switch (state)
            {
                case State.BeginValueOrEmpty:
                    if (IsSpace(c)) break;
                    if (c == ']') { stack.Pop(); state = EndOf(stack); break; }
                    state = State.BeginValue;
                    goto again;
                case State.BeginValue:
                    if (IsSpace(c)) break;
                    switch (c)
                    {
                        case (byte)'{': stack.Push(Ctx.ObjectKey); state = State.BeginStringOrEmpty; break;
                        case (byte)'[': stack.Push(Ctx.ArrayValue); state = State.BeginValueOrEmpty; break;
                        case (byte)'"': state = State.InString; break;
                        case (byte)'-': state = State.Neg; break;
                        case (byte)'0': state = State.Zero; break;
                        case (byte)'t': state = State.Literal; literal = "true"u8; literalName = "true"; literalAt = 1; break;
                        case (byte)'f': state = State.Literal; literal = "false"u8; literalName = "false"; literalAt = 1; break;
                        case (byte)'n': state = State.Literal; literal = "null"u8; literalName = "null"; literalAt = 1; break;
                        default:
                            if (c is >= (byte)'1' and <= (byte)'9') { state = State.One; break; }
                            return eof ? Eof : Error(c, "looking for beginning of value");
                    }
                    break;
                case State.BeginStringOrEmpty:
                    if (IsSpace(c)) break;
                    if (c == '}') { stack.Pop(); state = EndOf(stack); break; }
                    state = State.BeginString;
                    goto again;
                case State.BeginString:
                    if (IsSpace(c)) break;
                    if (c == '"') { state = State.InString; break; }
                    return eof ? Eof : Error(c, "looking for beginning of object key string");
                case State.EndValue:
                    {
                        if (IsSpace(c)) break;
                        var ctx = stack.Peek();
                        if (ctx == Ctx.ObjectKey)
                        {
                            if (c == ':') { stack.Pop(); stack.Push(Ctx.ObjectValue); state = State.BeginValue; break; }
                            return eof ? Eof : Error(c, "after object key");
                        }
                        if (ctx == Ctx.ObjectValue)
                        {
                            if (c == ',') { stack.Pop(); stack.Push(Ctx.ObjectKey); state = State.BeginString; break; }
                            if (c == '}') { stack.Pop(); state = EndOf(stack); break; }
                            return eof ? Eof : Error(c, "after object key:value pair");
                        }
                        if (c == ',') { state = State.BeginValue; break; }
                        if (c == ']') { stack.Pop(); state = EndOf(stack); break; }
                        return eof ? Eof : Error(c, "after array element");
                    }
                case State.EndTop:
                    if (!IsSpace(c)) return Error(c, "after top-level value");
                    break;
                case State.InString:
                    if (eof) return Eof;
                    if (c == '"') { state = EndOf(stack); break; }
                    if (c == '\\') { state = State.InStringEsc; break; }
                    if (c < 0x20) return Error(c, "in string literal");
                    break;
                case State.InStringEsc:
                    if (eof) return Eof;
                    if (c is (byte)'b' or (byte)'f' or (byte)'n' or (byte)'r' or (byte)'t' or (byte)'\\' or (byte)'/' or (byte)'"') { state = State.InString; break; }
                    if (c == 'u') { state = State.InStringEscU; hexLeft = 4; break; }
                    return Error(c, "in string escape code");
                case State.InStringEscU:
                    if (eof) return Eof;
                    if (!Uri.IsHexDigit((char)c)) return Error(c, "in \\u hexadecimal character escape");
                    if (--hexLeft == 0) state = State.InString;
                    break;
                case State.Neg:
                    if (c == '0') { state = State.Zero; break; }
                    if (c is >= (byte)'1' and <= (byte)'9') { state = State.One; break; }
                    return eof ? Eof : Error(c, "in numeric literal");
                case State.One:
                    if (IsDigit(c)) break;
                    state = State.Zero;
                    goto again;
                case State.Zero:
                    if (c == '.') { state = State.Dot; break; }
                    if (c is (byte)'e' or (byte)'E') { state = State.E; break; }
                    state = EndOf(stack);
                    goto again;
                case State.Dot:
                    if (IsDigit(c)) { state = State.Dot0; break; }
                    return eof ? Eof : Error(c, "after decimal point in numeric literal");
                case State.Dot0:
                    if (IsDigit(c)) break;
                    if (c is (byte)'e' or (byte)'E') { state = State.E; break; }
                    state = EndOf(stack);
                    goto again;
                case State.E:
                    if (c is (byte)'+' or (byte)'-') { state = State.ESign; break; }
                    state = State.ESign;
                    goto again;
                case State.ESign:
                    if (IsDigit(c)) { state = State.E0; break; }
                    return eof ? Eof : Error(c, "in exponent of numeric literal");
                case State.E0:
                    if (IsDigit(c)) break;
                    state = EndOf(stack);
                    goto again;
                case State.Literal:
                    if (eof) return Eof;
                    if (c != literal[literalAt]) return Error(c, $"in literal {literalName} (expecting {Quote(literal[literalAt])})");
                    if (++literalAt == literal.Length) state = EndOf(stack);
                    break;
            }
        }
        return state == State.EndTop ? null : Eof;
    }

    private const string Eof = "unexpected end of JSON input";

    private static State EndOf(Stack<Ctx> stack) => stack.Count == 0 ? State.EndTop : State.EndValue;

    private static bool IsSpace(byte c) => c is (byte)' ' or (byte)'\t' or (byte)'\r' or (byte)'\n';

    private static bool IsDigit(byte c) => c is >= (byte)'0' and <= (byte)'9';

    private static string Error(byte c, string context) => $"invalid character {Quote(c)} {context}";

    /// <summary>Go's quoteChar: the byte as a Go rune literal ('x', '\n', '\x01', '\'', '"').</summary>
    private static string Quote(byte c)
    {
        if (c == '\'') return @"'\''";
        if (c == '"') return "'\"'";
        var s = c switch
        {
            (byte)'\a' => @"\a",
            (byte)'\b' => @"\b",
            (byte)'\f' => @"\f",
            (byte)'\n' => @"\n",
            (byte)'\r' => @"\r",
            (byte)'\t' => @"\t",
            (byte)'\v' => @"\v",
            (byte)'\\' => @"\\",
            < 0x20 or 0x7f => $"\\x{c:x2}",
            >= 0x80 and < 0xa0 or 0xad => $"\\u{c:x4}",
            _ => ((char)c).ToString(),
        };
        return "'" + s + "'";
    }
}
