namespace NatsBroker.JetStream;

// Refusals nats-server makes before it looks at the request's API level or the account's JetStream
// (jetstream_api.go): the cluster-only endpoints on a server without clustering, and a body sent to CONSUMER.INFO.
public sealed partial class JetStreamService
{
    /// <summary>
    /// Answers and returns false (an API error) when the request is refused before any account check; null when
    /// the request goes on. META.LEADER.STEPDOWN and SERVER.REMOVE are served only for the system account by
    /// nats-server (no answer to others), so they stay unanswered here.
    /// </summary>
    private bool? RefusedBeforeAccountChecks(ApiRequest req, string[] t)
    {
        // jsStreamLeaderStepDownRequest / jsStreamRemovePeerRequest / jsConsumerLeaderStepDownRequest: 10010
        // whenever JetStream is not clustered, before the API level or the account is looked at.
        string? clusterOnly = t switch
        {
            [_, _, "STREAM", "LEADER", "STEPDOWN", _] => "stream_leader_stepdown_response",
            [_, _, "STREAM", "PEER", "REMOVE", _] => "stream_remove_peer_response",
            [_, _, "CONSUMER", "LEADER", "STEPDOWN", _, _] => "consumer_leader_stepdown_response",
            _ => null,
        };
        if (clusterOnly is not null) return Fail(req, clusterOnly, JsErrors.ClusterRequired);
        // jsConsumerInfoRequest refuses a non-empty body first of all.
        if (t is [_, _, "CONSUMER", "INFO", _, _] && !Api.ApiBodies.IsEmptyRequest(req.Body))
            return Fail(req, "consumer_info_response", JsErrors.NotEmptyRequest);
        return null;
    }
}
