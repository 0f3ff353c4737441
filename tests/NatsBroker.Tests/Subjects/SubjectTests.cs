using NatsBroker.Subjects;

namespace NatsBroker.Tests.Subjects;

public class SubjectTests
{
    [Theory]
    [InlineData("foo", true)]
    [InlineData("foo.bar", true)]
    [InlineData("foo.*", true)]
    [InlineData("foo.>", true)]
    [InlineData(">", true)]
    [InlineData("foo*.bar", true)]
    [InlineData("", false)]
    [InlineData("foo..bar", false)]
    [InlineData(".foo", false)]
    [InlineData("foo.", false)]
    [InlineData("foo.>.bar", false)]
    [InlineData("foo bar", false)]
    public void Validates_subscription_subjects(string subject, bool valid) => Assert.Equal(valid, Subject.IsValid(subject));

    [Theory]
    [InlineData("foo.bar", true)]
    [InlineData("foo.*", false)]
    [InlineData("foo.>", false)]
    [InlineData("foo*.bar", true)]
    [InlineData("a.>b", true)]
    public void Validates_publish_subjects(string subject, bool valid) => Assert.Equal(valid, Subject.IsValidLiteral(subject));

    [Theory]
    [InlineData("foo.bar", "foo.bar", true)]
    [InlineData("foo.*", "foo.bar", true)]
    [InlineData("foo.*", "foo.bar.baz", false)]
    [InlineData("foo.>", "foo.bar.baz", true)]
    [InlineData("foo.>", "foo", false)]
    [InlineData(">", "foo", true)]
    [InlineData("*.bar", "foo.bar", true)]
    [InlineData("*", "foo.bar", false)]
    [InlineData("foo.bar", "foo", false)]
    [InlineData("foo", "foo.bar", false)]
    public void Matches_wildcards(string pattern, string subject, bool match) => Assert.Equal(match, Subject.Matches(pattern, subject));
}
