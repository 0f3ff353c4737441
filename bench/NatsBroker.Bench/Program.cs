namespace NatsBroker.Bench;

public static class Program
{
    public static int Main(string[] args)
    {
        Options o;
        try
        {
            o = Options.Parse(args);
        }
        catch (HelpRequestedException)
        {
            Console.WriteLine(Options.Usage);
            return 0;
        }
        catch (Exception ex) when (ex is ArgumentException or FormatException)
        {
            Console.Error.WriteLine(ex.Message);
            Console.Error.WriteLine(Options.Usage);
            return 2;
        }

        return new Harness(o).Run();
    }
}
