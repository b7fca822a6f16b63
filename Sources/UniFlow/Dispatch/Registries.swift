import CUniFlow
import Glibc

// The dispatcher's state, grouped by what it is for. The behaviour lives in
// `Dispatcher` extensions (Dispatcher+Subscriptions.swift, +Watches, +Interceptors,
// +Bindings, +Reports); these are the data they share.

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

/// Model bindings and the host handlers they name.
struct BindingRegistry {
    /// Host handlers by name (`uf_register_handler`).
    var handlers: [String: HostCallback<uf_handler_fn>] = [:]
    /// Model bindings by owner feature, in declaration order (features without
    /// bindings have no entry: most have none).
    var byOwner: [Int32: [ActiveBinding]] = [:]
    /// For each watched feature, the bindings whose filter names it (owner order).
    var watchers: [Int32: [BindingReference]] = [:]
    /// Bindings whose filter is `AnyMutation`.
    var anyWatchers: [BindingReference] = []
    /// While a batch announces its mutations (after committing them all): how
    /// many instances (a single feature: 0 or 1) each feature it began or ended
    /// has at the mutation being announced, which decides whether its bindings
    /// are active there, as one action after another would have.
    var aliveInBatch: [Int32: Int]? = nil

    /// Handlers are released in name order, so that it does not depend on hashing.
    mutating func releaseHandlers() {
        for name in handlers.keys.sorted() { handlers[name]!.release() }
        handlers.removeAll()
    }
}

/// The host's reporter (`uf_set_reporter`); nil: the built-in one.
struct ReporterRegistry {
    var custom: HostCallback<uf_report_fn>?
    /// The reporter is being called: replacing it from inside itself defers its release.
    var running = false
    var retired: [HostCallback<uf_report_fn>] = []

    mutating func releaseAll() {
        custom?.release()
        custom = nil
        for i in retired.indices { retired[i].release() }
        retired.removeAll()
    }
}

/// What accessors read while a callback runs, and the text already handed out
/// (valid until the callback returns or the delivery ends).
struct CallbackScratch {
    var delivery = MutationDelivery()
    var via = ViaScratch()
    var handlerCall = HandlerCallScratch()
    var intercepted = InterceptScratch()
    var watchText = WatchTextBuffer()

    mutating func reset() {
        delivery.reset()
        via.reset()
    }
}

/// The payloads of the GlobalModel (states live in `HotStorage`) and the count
/// of applied mutations.
struct ModelStore {
    /// Each single feature's payload, when its `FeatureSlot.hasPayload` is set.
    var payloads: [JSONObject?] = []
    /// Each keyed feature's instance payloads, by `InstanceTable` and slot.
    var instancePayloads: [[JSONObject?]] = []
    /// Applied mutations so far (the `seq` of the last one).
    var seq: UInt64 = 0
}

/// Watch indices filed by feature number: an array, not a dictionary, because
/// it is read after every outer call that changed a watched feature, and hashing
/// the number cost more than the rest of finding an unchanged value.
struct FeatureWatchLists {
    private var lists: [[Int]] = []

    subscript(feature: Int32) -> [Int] { Int(feature) < lists.count ? lists[Int(feature)] : [] }

    mutating func append(_ watch: Int, to feature: Int32) {
        if Int(feature) >= lists.count { lists += repeatElement([], count: Int(feature) + 1 - lists.count) }
        lists[Int(feature)].append(watch)
    }

    mutating func removeAll() { lists.removeAll() }
}

/// What the current outer call changed.
struct ChangeLog {
    /// Some change happened that watches may need to see.
    var any = false
    /// Features changed (once each), for the watches that read them.
    var features: [Int32] = []
    /// Those of `features` whose payload, or whether they exist, may have
    /// changed: a feature that only changed state is not here, and a watch that
    /// reads only its payload need not be evaluated again.
    var payloads: [Int32] = []
    /// Every feature may have changed (a restore, a replay).
    var everything = false
    /// Keys of instances that ended during the call, freed when it ends: a
    /// mutation being delivered may still show them.
    var retiredKeys: [UnsafeMutablePointer<CChar>] = []
    /// Instance tables that may now be empty, to release their storage.
    var emptiedTables: [Int32] = []
}
