import CUniFlow

/// Subscriptions, watches and interceptors: one id space, in which ids are never 0
/// and never reused, and `uf_unsubscribe` ends any of them.
struct Registrations {
    enum Kind {
        /// A slot in `HotStorage.subscriptions`.
        case subscription(Int32)
        /// An index in `watches`.
        case watch(Int)
        /// An index in `interceptors`.
        case interceptor(Int)
    }

    var nextID: UInt64 = 1
    var byID: [UInt64: Kind] = [:]
    /// Slots of `HotStorage.subscriptions` that ended and may be reused.
    var freeSubscriptionSlots: [Int32] = []
    /// Subscriptions ended during a notification, removed from their lists after it.
    var pendingRemovals: [Int32] = []
    var notifyingDepth = 0
    /// The list in `HotStorage.keyedLists` of each instance some `F[key]` filter
    /// names (the instance need not live yet).
    var keyedLists: [InstanceName: Int32] = [:]
    /// The instance each of those lists belongs to, by list (stale for free lists).
    var keyedListNames: [InstanceName] = []
    var freeKeyedLists: [Int32] = []

    var watches: [WatchSlot] = []
    /// For each feature, the watches whose selector may read it (by index in `watches`).
    var watchesByFeature = FeatureWatchLists()
    /// Watches whose selector may read anything (a computed path).
    var watchesOfAll: [Int] = []
    /// Watches ended since the list was last compacted.
    var watchesEnded = 0
    /// Deferred watches with a value waiting for the host's loop.
    var watchesWaiting = 0

    var interceptors: [InterceptorSlot] = []
    /// Interceptors ended since the list was last compacted.
    var interceptorsEnded = 0
    /// Live interceptors by the feature they see (-1: every feature), for the
    /// flags the dispatch tests.
    var interceptorCounts: [Int32: Int] = [:]
    /// Loops walking `interceptors` by index (calling them, releasing them): a
    /// callback or `payload_free` they run may end interceptors, but the list must
    /// not shift under them.
    var interceptorWalks = 0

    /// A new id.
    mutating func makeID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }
}

/// A feature and the key of one of its instances, as filters name them.
struct InstanceName: Hashable {
    var feature: Int32
    var key: String
}
