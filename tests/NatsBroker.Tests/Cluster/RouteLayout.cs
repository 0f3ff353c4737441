namespace NatsBroker.Tests.Cluster;

/// <summary>Which peers each node's <c>cluster { routes: [...] }</c> lists.</summary>
public enum RouteLayout
{
    /// <summary>Every node lists every other node: the mesh forms from explicit routes alone.</summary>
    Full,

    /// <summary>
    /// Node <c>i</c> lists only node <c>i-1</c> (the first lists none): the mesh can only be completed by gossip, the
    /// forwarded INFO of route.go:forwardNewRouteInfoToKnownServers and the implicit route it makes a node dial
    /// (route.go:processImplicitRoute; docs/design/routes.md section 2.6).
    /// </summary>
    Chain,
}
