namespace NatsBroker.Subscriptions;

/// <summary>
/// Told of every change to the local interest of a <see cref="SubList"/> (subscriptions whose
/// <see cref="Subscription.Scope"/> is <see cref="SubscriptionScope.Local"/>): the cluster turns these into RS+/RS-
/// for its routes (route.go updateRouteSubscriptionMap). Called under the SubList's write lock, so calls for one
/// SubList arrive in the order the changes were made; an observer must be quick and take no lock that a thread
/// holding it could wait on while entering the SubList (it may take its own lock, then outbound locks).
/// </summary>
public interface IInterestObserver
{
    void OnInserted(Subscription sub);
    void OnRemoved(Subscription sub);
}
