/// What the host's loop (`HostLoop`) needs from the dispatcher, and nothing
/// more: whether a delivery's subscription is still there, the subscriptions'
/// count of waiting deliveries, the deferred watches waiting, and the soonest
/// timer the host's loop fires.
///
/// `HostLoop` calls these from its mutating methods, inside one access to the
/// dispatcher's `loop`: no member may reach the loop back (or call the host,
/// which may), or two accesses overlap.
protocol LoopContext: AnyObject {
    /// Whether the subscription in that slot is still the one with that id
    /// (an ended subscription's deliveries are skipped when their turn comes).
    func isLive(subscription: Int32, id: UInt64) -> Bool
    /// Deferred watches with a value waiting for the loop.
    var watchesWaiting: Int { get }
    /// The soonest timer the host's loop fires (host timers on a monotonic
    /// clock): whether it is due now, and when, in CLOCK_MONOTONIC nanoseconds.
    func nextHostTimer() -> (due: Bool, monotonicNanoseconds: UInt64)?
}
