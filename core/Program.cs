namespace NatsBroker;

public static class Program
{
    public static int Main(string[] args)
    {
        _ = args;
        Console.Error.WriteLine("not yet wired");
        return 1;
    }
}
