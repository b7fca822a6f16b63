import CUniFlow

/// An interceptor (`uf_intercept`): sees each action about to be applied.
struct InterceptorSlot {
    var id: UInt64
    var callback: HostCallback<uf_interceptor_fn>
    /// -1: every feature.
    var feature: Int32
    var alive = true
}

/// What the interceptors need from outside: the flags on the model's features
/// that tell a dispatch to call them. `Dispatcher` conforms
/// (`Dispatcher+Interceptors.swift`).
protocol InterceptorContext: AnyObject {
    /// Whether any interceptor sees the feature (or, for -1, every feature): the
    /// quick test on every action.
    func setInterceptionFlag(of feature: Int32, _ on: Bool)
}

/// The interceptors (`uf_intercept`; `docs/watches-and-interceptors.md`), in
/// registration order.
///
/// Owns their slots, how many live ones see each feature (for the flags a
/// dispatch tests, set through the `InterceptorContext`), and when ended slots
/// may be dropped. Ids come from the dispatcher's `RegistrationIDs`.
///
/// It calls nobody: an interceptor's callback and `payload_free` are the host's
/// code, which may intercept, unsubscribe or submit, and so must never run while
/// this struct is being modified (the dispatcher stores it inline). The
/// dispatcher walks the chain by index and makes the calls
/// (`Dispatcher+Interceptors.swift`), counting its walks in `walks` so that
/// ended slots stay where they are until no walk needs their indices.
struct InterceptorChain {
    private(set) var slots: [InterceptorSlot] = []
    /// Interceptors ended since the list was last compacted.
    private(set) var ended = 0
    /// Live interceptors by the feature they see (-1: every feature).
    private var counts: [Int32: Int] = [:]
    /// Loops walking `slots` by index (calling them, releasing them): a callback
    /// or `payload_free` they run may end interceptors, but the list must not
    /// shift under them.
    var walks = 0

    /// Adds an interceptor of `feature` (-1: every feature) under a new id from `ids`.
    mutating func add(feature: Int32, _ callback: HostCallback<uf_interceptor_fn>, ids: inout RegistrationIDs,
                      _ context: some InterceptorContext) -> UInt64 {
        let id = ids.make(.interceptor(slots.count))
        slots.append(InterceptorSlot(id: id, callback: callback, feature: feature))
        counts[feature, default: 0] += 1
        context.setInterceptionFlag(of: feature, true)
        return id
    }

    /// Marks an interceptor ended and forgets its id; returns its id, for the
    /// caller to run its `payload_free` (`takeRelease`) unless it is running, then
    /// to `compactIfHalfEnded`.
    mutating func markEnded(_ index: Int, ids: inout RegistrationIDs, _ context: some InterceptorContext) -> UInt64 {
        let feature = slots[index].feature
        slots[index].alive = false
        ended += 1
        ids.remove(slots[index].id)
        counts[feature]! -= 1
        if counts[feature] == 0 {
            counts[feature] = nil
            context.setInterceptionFlag(of: feature, false)
        }
        return slots[index].id
    }

    /// Forgets an interceptor's `payload_free` and returns what runs it, for the
    /// caller to run once this struct is no longer being modified.
    mutating func takeRelease(_ index: Int) -> PendingRelease {
        slots[index].callback.takeRelease()
    }

    /// Ends an interceptor for `uf_dispatcher_free`, which forgets every id at
    /// once: returns its `payload_free` for the caller to run.
    mutating func close(_ index: Int) -> PendingRelease {
        slots[index].alive = false
        return slots[index].callback.takeRelease()
    }

    /// After an end: without waiting for the next action, which a host that adds
    /// and ends them without acting would grow the list for; once the ended are
    /// half of it, so that each end pays a constant share of the compaction.
    mutating func compactIfHalfEnded(ids: inout RegistrationIDs) {
        if ended * 2 >= slots.count { compact(ids: &ids) }
    }

    /// Drops ended interceptors from the list, unless a loop walks it (an
    /// interceptor's callback or `payload_free` may end others; a running
    /// interceptor's callback is always inside such a loop).
    mutating func compact(ids: inout RegistrationIDs) {
        guard walks == 0 else { return }
        slots.removeAll { !$0.alive }
        for (i, slot) in slots.enumerated() { ids.move(slot.id, to: .interceptor(i)) }
        ended = 0
    }
}
