using NatsBroker.MqttGateway;

namespace NatsBroker.Tests.Gateways.Mqtt;

/// <summary>Topic ⇄ subject conversion, cases from nats-server's server/mqtt_test.go (TestMQTTTopicAndSubjectConversion, TestMQTTFilterConversion).</summary>
public sealed class TopicMappingTests
{
    [Theory]
    [InlineData("/", "/./")]
    [InlineData("//", "/././")]
    [InlineData("///", "/./././")]
    [InlineData("////", "/././././")]
    [InlineData("foo", "foo")]
    [InlineData("/foo", "/.foo")]
    [InlineData("//foo", "/./.foo")]
    [InlineData("///foo", "/././.foo")]
    [InlineData("///foo/", "/././.foo./")]
    [InlineData("///foo//", "/././.foo././")]
    [InlineData("///foo///", "/././.foo./././")]
    [InlineData("//.foo.//", "/././/foo//././")]
    [InlineData("foo/bar", "foo.bar")]
    [InlineData("/foo/bar", "/.foo.bar")]
    [InlineData("/foo/bar/", "/.foo.bar./")]
    [InlineData("foo/bar/baz", "foo.bar.baz")]
    [InlineData("/foo/bar/baz", "/.foo.bar.baz")]
    [InlineData("/foo/bar/baz/", "/.foo.bar.baz./")]
    [InlineData("bar/", "bar./")]
    [InlineData("bar//", "bar././")]
    [InlineData("bar///", "bar./././")]
    [InlineData("foo//bar", "foo./.bar")]
    [InlineData("foo///bar", "foo././.bar")]
    [InlineData("foo////bar", "foo./././.bar")]
    [InlineData(".", "//")]
    [InlineData("..", "////")]
    [InlineData("...", "//////")]
    [InlineData("./", "//./")]
    [InlineData(".//.", "//././/")]
    [InlineData("././.", "//.//.//")]
    [InlineData("././/.", "//.//././/")]
    [InlineData(".foo", "//foo")]
    [InlineData("foo.", "foo//")]
    [InlineData(".foo.", "//foo//")]
    [InlineData("foo../bar/", "foo////.bar./")]
    [InlineData("foo../bar/.", "foo////.bar.//")]
    [InlineData("/foo/", "/.foo./")]
    [InlineData("./foo/.", "//.foo.//")]
    [InlineData("foo.bar/baz", "foo//bar.baz")]
    public void Topic_names_map_as_nats_server_maps_them_and_back(string topic, string subject)
    {
        Assert.Equal(subject, TopicMapping.TopicToSubject(topic));
        Assert.Equal(topic, TopicMapping.SubjectToTopic(subject));
    }

    [Theory]
    [InlineData("foo bar")]
    [InlineData("foo\tbar")]
    [InlineData("foo\u007fbar")]
    [InlineData("foo/+")]
    [InlineData("foo/#")]
    [InlineData("")]
    public void Bad_topic_names_are_refused(string topic) => Assert.Null(TopicMapping.TopicToSubject(topic));

    [Theory]
    [InlineData("+", "*")]
    [InlineData("#", ">")]
    [InlineData("foo/+/bar", "foo.*.bar")]
    [InlineData("foo/#", "foo.>")]
    [InlineData("/+", "/.*")]
    [InlineData("+/", "*./")]
    public void Filters_map_wildcards(string filter, string subject) => Assert.Equal(subject, TopicMapping.FilterToSubject(filter));

    [Fact]
    public void A_multi_level_filter_also_subscribes_its_parent_level()
    {
        Assert.Equal("foo", TopicMapping.LevelUpSubject("foo.>"));
        Assert.Null(TopicMapping.LevelUpSubject(">"));
        Assert.Null(TopicMapping.LevelUpSubject("foo.*"));
        Assert.True(TopicMapping.IsReservedSubscription(">"));
        Assert.True(TopicMapping.IsReservedSubscription("*.foo"));
        Assert.False(TopicMapping.IsReservedSubscription("foo.>"));
    }
}
