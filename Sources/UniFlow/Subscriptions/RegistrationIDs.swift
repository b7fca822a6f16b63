/// The one id space of subscriptions, watches and interceptors: ids are never 0
/// and never reused, and `uf_unsubscribe` ends whichever of them an id names.
///
/// Owns the next id and which component's slot each live id is; the
/// components keep their slots and tell it when one is made, moves or ends.
struct RegistrationIDs {
    /// Where a live registration is.
    enum Kind {
        /// A slot in `SubscriptionRegistry.slots`.
        case subscription(Int32)
        /// An index in `WatchRegistry.watches`.
        case watch(Int)
        /// An index in `InterceptorChain.slots`.
        case interceptor(Int)
    }

    /// The id the next registration gets: also the limit of a delivery or an
    /// interception, whose callbacks' new registrations wait for the next one.
    private(set) var next: UInt64 = 1
    private var byID: [UInt64: Kind] = [:]

    /// A new id, naming `kind`.
    mutating func make(_ kind: Kind) -> UInt64 {
        defer { next += 1 }
        byID[next] = kind
        return next
    }

    subscript(id: UInt64) -> Kind? { byID[id] }

    /// The registration moved (a compaction).
    mutating func move(_ id: UInt64, to kind: Kind) { byID[id] = kind }

    /// The registration ended: its id names nothing any more.
    mutating func remove(_ id: UInt64) { byID[id] = nil }

    mutating func removeAll() { byID.removeAll() }
}
