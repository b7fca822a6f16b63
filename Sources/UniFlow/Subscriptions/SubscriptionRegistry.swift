import CUniFlow

/// A subscription, with its filter compiled to indices.
struct SubscriptionSlot {
    var id: UInt64
    var callback: HostCallback<uf_subscriber_fn>
    /// Bit `1 << kind` for each mutation kind that matches.
    var kinds: UInt8
    /// -1: any feature (the `AnyMutation` list).
    var feature: Int32
    /// -1: any; otherwise the state index the old / new state must have (or a
    /// statechart's filter: `CompiledFilter.chartMarker`).
    var oldState: Int32
    var newState: Int32
    /// Its filter names one instance (`F[key]`): that key's list, in
    /// `SubscriptionRegistry.keyedLists`, which it is in (-1: not keyed).
    var list: Int32 = -1
    /// Delivered by `uf_loop_run` on the host's thread (`uf_subscribe_deferred`).
    var deferred: Bool
    var alive: Bool
    /// Its callback is on the stack: ending it now must defer `payload_free`.
    var running: Bool
    /// Deferred: deliveries dropped since the last one made (`uf_mutation_dropped`).
    var dropped: UInt64 = 0
    /// Deferred: its deliveries waiting in the loop's queue.
    var waiting = 0
}

extension SubscriptionSlot {
    /// Whether a delivery calls it (or, deferred, keeps the mutation for it): it
    /// is alive, older than the delivery (`limit`: the next id when the
    /// mutation's announcement began) and its filter matches (`kindBit`: the bit
    /// of the record's kind; `charts`: the mutation may be a statechart's).
    @inline(__always)
    func wants(_ record: UnsafeMutablePointer<MutationRecord>, kindBit: UInt8, limit: UInt64, charts: Bool) -> Bool {
        guard alive, id < limit, kinds & kindBit != 0 else { return false }
        // Most filters name no state: both are -1, the only negative value, so
        // one test of their AND skips both comparisons.
        if oldState & newState >= 0 {
            guard oldState < 0 || oldState == record.pointee.oldState,
                  newState < 0 || newState == record.pointee.newState else {
                // No state number is the marker: a statechart's filter asks its own
                // test (never on the hot path, which passes `charts` false).
                return charts && newState == CompiledFilter.chartMarker && chartSubscriptionWants(record, filter: oldState)
            }
        }
        return true
    }
}

/// A list of subscription slot indices, ordered by subscription id.
typealias SlotList = UnsafeVector<Int32>

/// A feature and the key of one of its instances, as filters name them.
struct InstanceName: Hashable {
    var feature: Int32
    var key: String
}

/// What the subscriptions need from outside: the model's instances, whose slots
/// point at their `F[key]` list so that a dispatch finds it without a lookup.
/// `Dispatcher` conforms (`Dispatcher+Subscriptions.swift`).
protocol SubscriptionContext: AnyObject {
    /// Points the instance `name`, if it lives, at subscription list `list` (-1: none).
    func setSubscriberList(_ list: Int32, ofInstance name: InstanceName)
}

/// The subscribers (`uf_subscribe`, `uf_subscribe_deferred`).
///
/// Owns the subscriptions' slots and the lists that index them, so that a
/// mutation only looks at its own feature's list, its instance's list and the
/// `AnyMutation` list, never at every subscription; the free slots and lists;
/// and the removals that wait while a delivery walks the lists. Ids come from
/// the dispatcher's `RegistrationIDs`; the instances' links to their lists go
/// through the `SubscriptionContext`.
///
/// It calls nobody: a subscriber's callback and `payload_free` are the host's
/// code, which may subscribe, unsubscribe or submit, and so must never run while
/// this struct is being modified (the dispatcher stores it inline: a callback's
/// `uf_subscribe` would modify it again inside the outer access). The dispatcher
/// makes the calls (`Dispatcher+Subscriptions.swift`), walking the lists by
/// index and reading them again after each call; this struct decides what is
/// where, and says whose `payload_free` to run (`takeRelease`).
///
/// Everything a delivery reads is a flat, never-retained table (as in
/// `HotStorage`), read field by field from the dispatcher's storage.
struct SubscriptionRegistry {
    var slots = UnsafeVector<SubscriptionSlot>()
    /// Subscriptions whose filter names a feature without a key, by feature
    /// (one list per registered feature).
    var byFeature = UnsafeVector<SlotList>()
    /// Subscriptions to every mutation (`AnyMutation`).
    var anyList = SlotList()
    /// The subscription lists of single instances (`F[key]` filters).
    var keyedLists = UnsafeVector<SlotList>()
    /// Deliveries walking the lists: removals wait until none does.
    var notifyingDepth = 0
    /// Subscriptions ended during a notification, removed from their lists after it.
    private(set) var pendingRemovals: [Int32] = []
    /// Slots that ended and may be reused.
    private var freeSlots: [Int32] = []
    /// The list in `keyedLists` of each instance some `F[key]` filter names
    /// (the instance need not live yet).
    private(set) var keyedListByName: [InstanceName: Int32] = [:]
    /// The instance each of those lists belongs to, by list (stale for free lists).
    private var keyedListNames: [InstanceName] = []
    private var freeKeyedLists: [Int32] = []

    // MARK: Features

    /// Makes room for the lists of `count` more features (before a registration
    /// installs anything: it is all or nothing).
    mutating func reserveFeatures(_ count: Int) throws(UniFlowError) {
        try byFeature.reserve(count)
    }

    /// The lists of features registered since, reserved by `reserveFeatures`.
    mutating func addFeatures(upTo count: Int) {
        while byFeature.count < count { byFeature.appendReserved(SlotList()) }
    }

    // MARK: Adding and ending

    /// Adds a subscription under a new id from `ids`; made whole or not at all.
    mutating func add(_ filter: CompiledFilter, deferred: Bool, _ callback: HostCallback<uf_subscriber_fn>,
                      ids: inout RegistrationIDs, _ context: some SubscriptionContext) throws(UniFlowError) -> UInt64 {
        // Room first, so that a subscription is made whole or not at all.
        let reuse = freeSlots.last
        if reuse == nil { try slots.reserve(1) }
        let list: Int32? = try filter.key.map { (key) throws(UniFlowError) in
            try keyedList(InstanceName(feature: filter.feature, key: key), context)
        }
        if let list { try keyedLists.pointer(Int(list)).pointee.reserve(1) }
        else if filter.feature < 0 { try anyList.reserve(1) }
        else { try byFeature.pointer(Int(filter.feature)).pointee.reserve(1) }

        let index = reuse ?? Int32(slots.count)
        let id = ids.make(.subscription(index))
        let slot = SubscriptionSlot(id: id, callback: callback, kinds: filter.kinds, feature: filter.feature,
                                    oldState: filter.oldState, newState: filter.newState,
                                    list: list ?? -1, deferred: deferred, alive: true, running: false)
        if reuse != nil {
            freeSlots.removeLast()
            slots[Int(index)] = slot
        } else {
            slots.appendReserved(slot)
        }
        if let list {
            keyedLists.pointer(Int(list)).pointee.appendReserved(index)
        } else if filter.feature < 0 {
            anyList.appendReserved(index)
        } else {
            byFeature.pointer(Int(filter.feature)).pointee.appendReserved(index)
        }
        return id
    }

    /// The subscription list of one instance, made (and attached to the instance
    /// if it lives) the first time a filter names it.
    private mutating func keyedList(_ name: InstanceName, _ context: some SubscriptionContext) throws(UniFlowError) -> Int32 {
        if let list = keyedListByName[name] { return list }
        let list: Int32
        if let free = freeKeyedLists.popLast() {
            list = free
            keyedListNames[Int(list)] = name
        } else {
            try keyedLists.append(SlotList())
            list = Int32(keyedLists.count - 1)
            keyedListNames.append(name)
        }
        keyedListByName[name] = list
        context.setSubscriberList(list, ofInstance: name)
        return list
    }

    /// The `F[key]` list of an instance, or -1.
    @inline(__always)
    func list(of name: InstanceName) -> Int32 { keyedListByName[name] ?? -1 }

    /// Whether any filter names an instance.
    @inline(__always)
    var hasKeyedLists: Bool { !keyedListByName.isEmpty }

    /// What ending a subscription leaves to the caller (`markEnded`).
    struct Ended {
        var id: UInt64
        var deferred: Bool
        /// Its callback is on the stack: its `payload_free` waits until it returns.
        var running: Bool
    }

    /// Marks a subscription ended; the caller forgets its id, drops its deferred
    /// deliveries, runs its `payload_free` unless it is running, then calls
    /// `unlist` (the order in which ending always did them).
    mutating func markEnded(_ index: Int32) -> Ended {
        let slot = slots.pointer(Int(index))
        slot.pointee.alive = false
        return Ended(id: slot.pointee.id, deferred: slot.pointee.deferred, running: slot.pointee.running)
    }

    /// Takes an ended subscription out of its list, or, while a delivery walks
    /// the lists, once no delivery does (`flushPendingRemovals`).
    mutating func unlist(_ index: Int32, _ context: some SubscriptionContext) {
        if notifyingDepth > 0 {
            pendingRemovals.append(index)
        } else {
            removeFromList(index, context)
        }
    }

    /// Forgets a subscription's `payload_free` and returns what runs it, for the
    /// caller to run once this struct is no longer being modified.
    mutating func takeRelease(_ index: Int32) -> PendingRelease {
        slots.pointer(Int(index)).pointee.callback.takeRelease()
    }

    /// Takes ended subscriptions out of their lists (no delivery walks them).
    mutating func flushPendingRemovals(_ context: some SubscriptionContext) {
        let removals = pendingRemovals
        pendingRemovals.removeAll()
        for index in removals { removeFromList(index, context) }
    }

    private mutating func removeFromList(_ index: Int32, _ context: some SubscriptionContext) {
        let slot = slots[Int(index)]
        if slot.list >= 0 {
            keyedLists.pointer(Int(slot.list)).pointee.removeAll { $0 == index }
            if keyedLists[Int(slot.list)].count == 0 { releaseKeyedList(keyedListNames[Int(slot.list)], slot.list, context) }
        } else if slot.feature < 0 {
            anyList.removeAll { $0 == index }
        } else {
            byFeature.pointer(Int(slot.feature)).pointee.removeAll { $0 == index }
        }
        freeSlots.append(index)
    }

    /// An instance's list that no filter names any more: detached and reused.
    private mutating func releaseKeyedList(_ name: InstanceName, _ list: Int32, _ context: some SubscriptionContext) {
        keyedListByName[name] = nil
        freeKeyedLists.append(list)
        context.setSubscriberList(-1, ofInstance: name)
    }

    mutating func deallocate() {
        for i in 0..<byFeature.count { byFeature.pointer(i).pointee.deallocate() }
        for i in 0..<keyedLists.count { keyedLists.pointer(i).pointee.deallocate() }
        byFeature.deallocate()
        keyedLists.deallocate()
        anyList.deallocate()
        slots.deallocate()
    }
}
