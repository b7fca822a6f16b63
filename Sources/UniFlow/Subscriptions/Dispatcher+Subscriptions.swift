import CUniFlow

/// The dispatcher's side of the subscribers (`SubscriptionRegistry`): what it
/// needs from the model, the entry points other code calls, and the delivery.
///
/// Delivery is here, not in the registry, because it calls the host: a
/// subscriber may subscribe, unsubscribe or submit from its callback, which
/// modifies the registry again. So no call runs inside a modifying access to
/// `subscriptions`: these loops walk the lists by index, copy the (trivial)
/// slot they need before each call, let it say whether it wants the mutation
/// (`SubscriptionSlot.wants`), and read the lists again after the call. The
/// registry's own changes (`markEnded`, `unlist`, `flushPendingRemovals`) are
/// short modifying accesses between calls, and each `payload_free` it hands back
/// (`takeRelease`) runs after that access has ended.
extension Dispatcher: SubscriptionContext {
    func setSubscriberList(_ list: Int32, ofInstance name: InstanceName) {
        guard let table = instanceTable(of: name.feature) else { return }
        let slot = name.key.withCString { hot.instanceTables[Int(table)].find($0) }
        if slot >= 0 { hot.instanceTables[Int(table)].slots.pointer(Int(slot)).pointee.subscribers = list }
    }
}

extension Dispatcher {
    /// The name model bindings use (`Bindings/`).
    typealias CompiledFilter = UniFlow.CompiledFilter

    /// Resolves a parsed filter against the registered features.
    func compile(_ filter: FilterExpression) throws(UniFlowError) -> CompiledFilter {
        try compile(filter) { name in
            featureIndex(named: name).map { feature in
                (feature, hot.features[Int(feature)].instances >= 0, { self.stateIndex(named: $0, feature: feature).map(Int.init) })
            }
        }
    }

    /// Resolves a parsed filter with `lookup` giving a feature's index, whether it
    /// is keyed, and a function that finds its states by name.
    func compile(_ filter: FilterExpression,
                 lookup: (String) -> (Int32, Bool, (String) -> Int?)?) throws(UniFlowError) -> CompiledFilter {
        if charts.any || !charts.registering.isEmpty, let chart = statechartForFilter(filter) {
            return try compileChartFilter(filter, chart: chart, lookup: lookup)
        }
        return try CompiledFilter(filter, lookup: lookup)
    }

    /// Adds a subscription; its id is never 0 and never reused.
    func subscribe(_ filter: CompiledFilter, deferred: Bool, _ callback: HostCallback<uf_subscriber_fn>) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing(deferred ? "uf_subscribe_deferred" : "uf_subscribe")
        return try subscriptions.add(filter, deferred: deferred, callback, ids: &registrationIDs, self)
    }

    /// A new instance finds the subscriptions that named it before it lived.
    func attachKeyedSubscribers(table: Int32, slot: Int32, feature: Int32) {
        guard subscriptions.hasKeyedLists, let key = hot.instanceTables[Int(table)].slots[Int(slot)].key else { return }
        let list = subscriptions.list(of: InstanceName(feature: feature, key: String(cString: key)))
        hot.instanceTables[Int(table)].slots.pointer(Int(slot)).pointee.subscribers = list
    }

    /// Ends whatever the id names: a subscription, a watch or an interceptor.
    func unsubscribe(_ id: UInt64) throws(UniFlowError) {
        switch registrationIDs[id] {
        case .subscription(let index)?: end(subscription: index)
        case .watch(let index)?: endWatch(index)
        case .interceptor(let index)?: endInterceptor(index)
        case nil: throw UniFlowError(.notFound, "no subscription with id \(id)")
        }
    }

    /// Ends a subscription. Its `payload_free` runs now, or when its callback
    /// returns if it is running; a deferred one's pending deliveries are dropped.
    /// (Out of line, as every change to the registry a delivery may need: a
    /// modifying access inlined into the delivery made it keep the registry's
    /// address in a register, or spill it, on every delivery.)
    @inline(never)
    func end(subscription index: Int32) {
        let ended = subscriptions.markEnded(index)
        registrationIDs.remove(ended.id)
        if ended.deferred { dropDeliveries(of: index) }
        if !ended.running { subscriptions.takeRelease(index).run() }
        subscriptions.unlist(index, self)
    }

    /// Runs the `payload_free` of a subscription ended while its callback ran.
    @inline(never)
    private func releaseEnded(subscription index: Int32) {
        subscriptions.takeRelease(index).run()
    }

    /// Releases every registration (`uf_dispatcher_free`), each `payload_free`
    /// run outside the component that held it.
    func releaseRegistrations() {
        for i in 0..<subscriptions.slots.count where subscriptions.slots[i].alive {
            _ = subscriptions.markEnded(Int32(i))
            subscriptions.takeRelease(Int32(i)).run()
        }
        releaseWatches()
        releaseInterceptors()
        registrationIDs.removeAll()
    }

    /// Delivers a mutation to the subscribers whose filter matches, in
    /// subscription order: the feature's list, the instance's list and the
    /// `AnyMutation` list are merged by id. Lists are re-read on every step because
    /// a callback may subscribe (which can move them); subscriptions added since
    /// the mutation's announcement began (`limit`, the next id then: its bindings
    /// and their reports may subscribe too) wait for the next mutation, so a list
    /// empty when the delivery starts can be left out.
    ///
    /// `charts`: whether the mutation may be a statechart's, whose filters
    /// naming states need their own test; the hot path passes `false` (it never
    /// carries one), so that its inlined matching has no trace of that test.
    @inline(__always)
    func deliver(_ record: inout MutationRecord, instanceList: Int32 = -1, subscribedBefore limit: UInt64, charts: Bool) {
        let f = Int(record.feature)
        let ownAtStart = subscriptions.byFeature[f].count
        let anyAtStart = subscriptions.anyList.count
        // The common case first: the feature's own list only, often of one
        // subscription. The other cases are out of line, so that this one keeps
        // few values across the callback (and saves few registers). The hint
        // makes the two tests two branches, which the compiler otherwise
        // computes both of and combines.
        if anyAtStart == 0, _fastPath(instanceList < 0) {
            if ownAtStart == 1 {
                deliver(&record, onlyTo: subscriptions.byFeature[f][0], subscribedBefore: limit, charts: charts)
            } else if ownAtStart > 1 {
                deliver(&record, ownSubscribersOf: f, subscribedBefore: limit, charts: charts)
            }
            return
        }
        deliver(&record, instanceList: instanceList, subscribedBefore: limit, own: ownAtStart, any: anyAtStart, charts: charts)
    }

    /// `deliver` to a list of one subscription. Nothing leaves a list while a
    /// delivery walks it (removals wait for `flushPendingRemovals`), and what the
    /// callback subscribes is newer than `limit`: there is no next entry to call,
    /// so nothing needs re-reading once the callback returns.
    @inline(__always)
    private func deliver(_ record: inout MutationRecord, onlyTo index: Int32, subscribedBefore limit: UInt64, charts: Bool) {
        subscriptions.notifyingDepth &+= 1
        withUnsafeMutablePointer(to: &record) { notify(index, $0, kindBit: $0.pointee.kindBit, limit: limit, charts: charts) }
        subscriptions.notifyingDepth &-= 1
        flushPendingRemovals()
    }

    /// `deliver` when only the feature's own list has subscribers (more than one).
    @inline(never)
    private func deliver(_ record: inout MutationRecord, ownSubscribersOf f: Int, subscribedBefore limit: UInt64, charts: Bool) {
        subscriptions.notifyingDepth &+= 1
        let kindBit = record.kindBit
        withUnsafeMutablePointer(to: &record) { recordPointer in
            var i = 0
            repeat {
                notify(subscriptions.byFeature[f][i], recordPointer, kindBit: kindBit, limit: limit, charts: charts)
                i &+= 1
            } while i < subscriptions.byFeature[f].count
        }
        subscriptions.notifyingDepth &-= 1
        flushPendingRemovals()
    }

    /// `deliver` when the instance's or the `AnyMutation` list has subscribers
    /// (`own` and `any`: the lengths of the others at the start).
    @inline(never)
    private func deliver(_ record: inout MutationRecord, instanceList: Int32, subscribedBefore limit: UInt64,
                         own ownAtStart: Int, any anyAtStart: Int, charts: Bool) {
        let f = Int(record.feature)
        let keyedAtStart = instanceList >= 0 ? subscriptions.keyedLists[Int(instanceList)].count : 0
        if ownAtStart == 0 && anyAtStart == 0 && keyedAtStart == 0 { return }
        subscriptions.notifyingDepth &+= 1
        let kindBit = record.kindBit
        withUnsafeMutablePointer(to: &record) { recordPointer in
            if anyAtStart == 0 && keyedAtStart == 0 {
                var i = 0
                while i < subscriptions.byFeature[f].count {
                    notify(subscriptions.byFeature[f][i], recordPointer, kindBit: kindBit, limit: limit, charts: charts)
                    i += 1
                }
            } else if ownAtStart == 0 && keyedAtStart == 0 {
                var j = 0
                while j < subscriptions.anyList.count {
                    notify(subscriptions.anyList[j], recordPointer, kindBit: kindBit, limit: limit, charts: charts)
                    j += 1
                }
            } else {
                // Three lists, each in id order: take the smallest id each time.
                var positions = (0, 0, 0)
                while true {
                    let own = subscriptions.byFeature[f]
                    let any = subscriptions.anyList
                    let keyed = instanceList >= 0 ? subscriptions.keyedLists[Int(instanceList)] : SlotList()
                    func id(_ list: SlotList, _ i: Int) -> UInt64 {
                        i < list.count ? subscriptions.slots[Int(list[i])].id : UInt64.max
                    }
                    let a = id(own, positions.0), b = id(any, positions.1), c = id(keyed, positions.2)
                    let smallest = min(a, b, c)
                    if smallest == UInt64.max { break }
                    let index: Int32
                    if smallest == a { index = own[positions.0]; positions.0 += 1 }
                    else if smallest == b { index = any[positions.1]; positions.1 += 1 }
                    else { index = keyed[positions.2]; positions.2 += 1 }
                    notify(index, recordPointer, kindBit: kindBit, limit: limit, charts: charts)
                }
            }
        }
        subscriptions.notifyingDepth &-= 1
        flushPendingRemovals()
    }

    /// Takes ended subscriptions out of their lists once no delivery walks them.
    @inline(__always)
    func flushPendingRemovals() {
        guard subscriptions.notifyingDepth == 0 && !subscriptions.pendingRemovals.isEmpty else { return }
        removePendingNow()
    }

    @inline(never)
    private func removePendingNow() {
        subscriptions.flushPendingRemovals(self)
    }

    /// Calls one subscription (or, for a deferred one, keeps the mutation for the
    /// host's loop) if it is alive, older than the delivery and its filter
    /// matches (`kindBit`: the bit of the record's kind, which no callback
    /// changes); ends it if it asks to be ended.
    @inline(__always)
    private func notify(_ index: Int32, _ record: UnsafeMutablePointer<MutationRecord>, kindBit: UInt8, limit: UInt64, charts: Bool) {
        let slot = subscriptions.slots[Int(index)]
        guard slot.wants(record, kindBit: kindBit, limit: limit, charts: charts) else { return }
        if slot.deferred {
            capture(record.pointee, for: index)
            return
        }
        record.pointee.subscriptionID = slot.id
        call(subscription: index, record)
    }

    /// Calls a subscription's function, and ends the subscription if it asks to
    /// be ended (or releases it, if it was ended while its callback ran).
    @inline(__always)
    func call(subscription index: Int32, _ record: UnsafeMutablePointer<MutationRecord>) {
        let slot = subscriptions.slots.pointer(Int(index))
        let callback = slot.pointee.callback
        slot.pointee.running = true
        let result = callback.function(OpaquePointer(record), callback.payload)
        // The callback may have subscribed: the table may have moved.
        let after = subscriptions.slots.pointer(Int(index))
        after.pointee.running = false
        if !after.pointee.alive {
            // Ended from inside its own callback: release it now that it returned.
            releaseEnded(subscription: index)
        } else if result == UF_STOP {
            end(subscription: index)
        }
    }
}
