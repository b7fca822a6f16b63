import CUniFlow

/// Observer bindings (`uf_subscribe`, `uf_subscribe_deferred`). Subscriptions are
/// indexed by the feature their filter names (and, for `F[key]`, by the
/// instance), so a mutation only looks at its own feature's list, its instance's
/// list and the `AnyMutation` list, never at every subscription.
extension Dispatcher {
    /// A filter compiled to indices.
    struct CompiledFilter {
        var kinds: UInt8
        var feature: Int32
        var oldState: Int32 = -1
        var newState: Int32 = -1
        /// `F[key]`: only that instance's mutations.
        var key: String?
    }

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
        guard let featureName = filter.feature else { return CompiledFilter(kinds: MutationKind.all, feature: -1) }
        guard let (feature, keyed, stateIndex) = lookup(featureName) else {
            throw UniFlowError(.notFound, "filter '\(filter.text)': unknown feature '\(featureName)'")
        }
        if filter.key != nil && !keyed {
            throw UniFlowError(.schema, "filter '\(filter.text)': \(featureName) is a single feature: it has no instances to name with [key]")
        }
        func state(_ name: String?) throws(UniFlowError) -> Int32 {
            guard let name else { return -1 }
            guard let index = stateIndex(name).map(Int32.init) else {
                throw UniFlowError(.notFound, "filter '\(filter.text)': unknown state '\(name)' of feature \(featureName)")
            }
            return index
        }
        let first = try state(filter.state)
        let second = try state(filter.secondState)
        var compiled = CompiledFilter(kinds: MutationKind.all, feature: feature, key: filter.key)
        switch filter.form {
        case .anyMutation, .anyMutationOf: break
        case .anyUpdateOf: compiled.kinds = MutationKind.updates
        case .anySettingOf: compiled.kinds = MutationKind.settings
        case .settingInto: compiled.kinds = MutationKind.settings; compiled.newState = first
        case .initialization: compiled.kinds = MutationKind.initialization.bit
        case .actualization: compiled.kinds = MutationKind.actualization.bit
        case .transition: compiled.kinds = MutationKind.transition.bit
        case .deinitialization: compiled.kinds = MutationKind.deinitialization.bit
        case .initializationInto: compiled.kinds = MutationKind.initialization.bit; compiled.newState = first
        case .actualizationIn: compiled.kinds = MutationKind.actualization.bit; compiled.newState = first
        case .transitionInto: compiled.kinds = MutationKind.transition.bit; compiled.newState = first
        case .transitionFrom: compiled.kinds = MutationKind.transition.bit; compiled.oldState = first
        case .transitionBetween:
            compiled.kinds = MutationKind.transition.bit; compiled.oldState = first; compiled.newState = second
        case .deinitializationFrom: compiled.kinds = MutationKind.deinitialization.bit; compiled.oldState = first
        }
        return compiled
    }

    /// Adds a subscription; its id is never 0 and never reused.
    func subscribe(_ filter: CompiledFilter, deferred: Bool, _ callback: HostCallback<uf_subscriber_fn>) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing(deferred ? "uf_subscribe_deferred" : "uf_subscribe")
        // Room first, so that a subscription is made whole or not at all.
        let reuse = registrations.freeSubscriptionSlots.last
        if reuse == nil { try hot.subscriptions.reserve(1) }
        let list: Int32? = try filter.key.map { (key) throws(UniFlowError) in try keyedList(InstanceName(feature: filter.feature, key: key)) }
        if let list { try hot.keyedLists.pointer(Int(list)).pointee.reserve(1) }
        else if filter.feature < 0 { try hot.anySubscribers.reserve(1) }
        else { try hot.features.pointer(Int(filter.feature)).pointee.subscribers.reserve(1) }

        let id = registrations.makeID()
        let slot = SubscriptionSlot(id: id, callback: callback, kinds: filter.kinds, feature: filter.feature,
                                    oldState: filter.oldState, newState: filter.newState,
                                    list: list ?? -1, deferred: deferred, alive: true, running: false)
        let index: Int32
        if let reused = reuse {
            registrations.freeSubscriptionSlots.removeLast()
            index = reused
            hot.subscriptions[Int(index)] = slot
        } else {
            index = Int32(hot.subscriptions.count)
            try! hot.subscriptions.append(slot)
        }
        if let list {
            try! hot.keyedLists.pointer(Int(list)).pointee.append(index)
        } else if filter.feature < 0 {
            try! hot.anySubscribers.append(index)
        } else {
            try! hot.features.pointer(Int(filter.feature)).pointee.subscribers.append(index)
        }
        registrations.byID[id] = .subscription(index)
        return id
    }

    /// The subscription list of one instance, made (and attached to the instance
    /// if it lives) the first time a filter names it.
    private func keyedList(_ name: InstanceName) throws(UniFlowError) -> Int32 {
        if let list = registrations.keyedLists[name] { return list }
        let list: Int32
        if let free = registrations.freeKeyedLists.popLast() {
            list = free
            registrations.keyedListNames[Int(list)] = name
        } else {
            try hot.keyedLists.append(SlotList())
            list = Int32(hot.keyedLists.count - 1)
            registrations.keyedListNames.append(name)
        }
        registrations.keyedLists[name] = list
        if let table = instanceTable(of: name.feature) {
            let slot = name.key.withCString { hot.instanceTables[Int(table)].find($0) }
            if slot >= 0 { hot.instanceTables[Int(table)].slots.pointer(Int(slot)).pointee.subscribers = list }
        }
        return list
    }

    /// A new instance finds the subscriptions that named it before it lived.
    func attachKeyedSubscribers(table: Int32, slot: Int32, feature: Int32) {
        guard !registrations.keyedLists.isEmpty, let key = hot.instanceTables[Int(table)].slots[Int(slot)].key else { return }
        let list = registrations.keyedLists[InstanceName(feature: feature, key: String(cString: key))] ?? -1
        hot.instanceTables[Int(table)].slots.pointer(Int(slot)).pointee.subscribers = list
    }

    /// Ends whatever the id names: a subscription, a watch or an interceptor.
    func unsubscribe(_ id: UInt64) throws(UniFlowError) {
        switch registrations.byID[id] {
        case .subscription(let index)?: end(subscription: index)
        case .watch(let index)?: endWatch(index)
        case .interceptor(let index)?: endInterceptor(index)
        case nil: throw UniFlowError(.notFound, "no subscription with id \(id)")
        }
    }

    /// Ends a subscription. Its `payload_free` runs now, or when its callback
    /// returns if it is running; a deferred one's pending deliveries are dropped.
    func end(subscription index: Int32) {
        let slot = hot.subscriptions.pointer(Int(index))
        slot.pointee.alive = false
        registrations.byID[slot.pointee.id] = nil
        if slot.pointee.deferred { dropDeliveries(of: index) }
        if !slot.pointee.running { releasePayload(ofSubscription: index) }
        if registrations.notifyingDepth > 0 {
            registrations.pendingRemovals.append(index)
        } else {
            removeFromList(index)
        }
    }

    func releasePayload(ofSubscription index: Int32) {
        hot.subscriptions.pointer(Int(index)).pointee.callback.release()
    }

    /// Releases every registration (`uf_dispatcher_free`).
    func releaseRegistrations() {
        for i in 0..<hot.subscriptions.count where hot.subscriptions[i].alive {
            hot.subscriptions.pointer(i).pointee.alive = false
            releasePayload(ofSubscription: Int32(i))
        }
        for i in registrations.watches.indices where registrations.watches[i].alive {
            registrations.watches[i].alive = false
            let release = registrations.watches[i].callback.takeRelease()
            release.run()
        }
        registrations.interceptorWalks += 1
        for i in registrations.interceptors.indices where registrations.interceptors[i].alive {
            registrations.interceptors[i].alive = false
            let release = registrations.interceptors[i].callback.takeRelease()
            release.run()
        }
        registrations.interceptorWalks -= 1
        registrations.byID.removeAll()
    }

    func removeFromList(_ index: Int32) {
        let slot = hot.subscriptions[Int(index)]
        if slot.list >= 0 {
            hot.keyedLists.pointer(Int(slot.list)).pointee.removeAll { $0 == index }
            if hot.keyedLists[Int(slot.list)].count == 0 { releaseKeyedList(registrations.keyedListNames[Int(slot.list)], slot.list) }
        } else if slot.feature < 0 {
            hot.anySubscribers.removeAll { $0 == index }
        } else {
            hot.features.pointer(Int(slot.feature)).pointee.subscribers.removeAll { $0 == index }
        }
        registrations.freeSubscriptionSlots.append(index)
    }

    /// An instance's list that no filter names any more: detached and reused.
    private func releaseKeyedList(_ name: InstanceName, _ list: Int32) {
        registrations.keyedLists[name] = nil
        registrations.freeKeyedLists.append(list)
        if let table = instanceTable(of: name.feature) {
            let slot = name.key.withCString { hot.instanceTables[Int(table)].find($0) }
            if slot >= 0 { hot.instanceTables[Int(table)].slots.pointer(Int(slot)).pointee.subscribers = -1 }
        }
    }

    /// Delivers a mutation to the subscribers whose filter matches, in
    /// subscription order: the feature's list, the instance's list and the
    /// `AnyMutation` list are merged by id. Lists are re-read on every step because
    /// a callback may subscribe (which can move them); subscriptions added since
    /// the mutation's announcement began (`limit`, the next id then: its bindings
    /// and their reports may subscribe too) wait for the next mutation, so a list
    /// empty when the delivery starts can be left out.
    @inline(__always)
    func deliver(_ record: inout MutationRecord, instanceList: Int32 = -1, subscribedBefore limit: UInt64) {
        let f = Int(record.feature)
        let ownAtStart = hot.features[f].subscribers.count
        let anyAtStart = hot.anySubscribers.count
        // The common case first: the feature's own list only, often of one
        // subscription. The other cases are out of line, so that this one keeps
        // few values across the callback (and saves few registers). The hint
        // makes the two tests two branches, which the compiler otherwise
        // computes both of and combines.
        if anyAtStart == 0, _fastPath(instanceList < 0) {
            if ownAtStart == 1 {
                deliver(&record, onlyTo: hot.features[f].subscribers[0], subscribedBefore: limit)
            } else if ownAtStart > 1 {
                deliver(&record, ownSubscribersOf: f, subscribedBefore: limit)
            }
            return
        }
        deliver(&record, instanceList: instanceList, subscribedBefore: limit, own: ownAtStart, any: anyAtStart)
    }

    /// `deliver` to a list of one subscription. Nothing leaves a list while a
    /// delivery walks it (removals wait for `flushPendingRemovals`), and what the
    /// callback subscribes is newer than `limit`: there is no next entry to call,
    /// so nothing needs re-reading once the callback returns.
    @inline(__always)
    private func deliver(_ record: inout MutationRecord, onlyTo index: Int32, subscribedBefore limit: UInt64) {
        registrations.notifyingDepth &+= 1
        withUnsafeMutablePointer(to: &record) { notify(index, $0, kindBit: $0.pointee.kindBit, limit: limit) }
        registrations.notifyingDepth &-= 1
        flushPendingRemovals()
    }

    /// `deliver` when only the feature's own list has subscribers (more than one).
    @inline(never)
    private func deliver(_ record: inout MutationRecord, ownSubscribersOf f: Int, subscribedBefore limit: UInt64) {
        registrations.notifyingDepth &+= 1
        let kindBit = record.kindBit
        withUnsafeMutablePointer(to: &record) { recordPointer in
            var i = 0
            repeat {
                notify(hot.features[f].subscribers[i], recordPointer, kindBit: kindBit, limit: limit)
                i &+= 1
            } while i < hot.features[f].subscribers.count
        }
        registrations.notifyingDepth &-= 1
        flushPendingRemovals()
    }

    /// `deliver` when the instance's or the `AnyMutation` list has subscribers
    /// (`own` and `any`: the lengths of the others at the start).
    @inline(never)
    private func deliver(_ record: inout MutationRecord, instanceList: Int32, subscribedBefore limit: UInt64,
                         own ownAtStart: Int, any anyAtStart: Int) {
        let f = Int(record.feature)
        let keyedAtStart = instanceList >= 0 ? hot.keyedLists[Int(instanceList)].count : 0
        if ownAtStart == 0 && anyAtStart == 0 && keyedAtStart == 0 { return }
        registrations.notifyingDepth &+= 1
        let kindBit = record.kindBit
        withUnsafeMutablePointer(to: &record) { recordPointer in
            if anyAtStart == 0 && keyedAtStart == 0 {
                var i = 0
                while i < hot.features[f].subscribers.count {
                    notify(hot.features[f].subscribers[i], recordPointer, kindBit: kindBit, limit: limit)
                    i += 1
                }
            } else if ownAtStart == 0 && keyedAtStart == 0 {
                var j = 0
                while j < hot.anySubscribers.count {
                    notify(hot.anySubscribers[j], recordPointer, kindBit: kindBit, limit: limit)
                    j += 1
                }
            } else {
                // Three lists, each in id order: take the smallest id each time.
                var positions = (0, 0, 0)
                while true {
                    let own = hot.features[f].subscribers
                    let any = hot.anySubscribers
                    let keyed = instanceList >= 0 ? hot.keyedLists[Int(instanceList)] : SlotList()
                    func id(_ list: SlotList, _ i: Int) -> UInt64 {
                        i < list.count ? hot.subscriptions[Int(list[i])].id : UInt64.max
                    }
                    let a = id(own, positions.0), b = id(any, positions.1), c = id(keyed, positions.2)
                    let smallest = min(a, b, c)
                    if smallest == UInt64.max { break }
                    let index: Int32
                    if smallest == a { index = own[positions.0]; positions.0 += 1 }
                    else if smallest == b { index = any[positions.1]; positions.1 += 1 }
                    else { index = keyed[positions.2]; positions.2 += 1 }
                    notify(index, recordPointer, kindBit: kindBit, limit: limit)
                }
            }
        }
        registrations.notifyingDepth &-= 1
        flushPendingRemovals()
    }

    /// Takes ended subscriptions out of their lists once no delivery walks them.
    @inline(__always)
    func flushPendingRemovals() {
        guard registrations.notifyingDepth == 0 && !registrations.pendingRemovals.isEmpty else { return }
        let removals = registrations.pendingRemovals
        registrations.pendingRemovals.removeAll()
        for index in removals { removeFromList(index) }
    }

    /// Calls one subscription (or, for a deferred one, keeps the mutation for the
    /// host's loop) if it is alive, older than the delivery and its filter
    /// matches (`kindBit`: the bit of the record's kind, which no callback
    /// changes); ends it if it asks to be ended.
    @inline(__always)
    private func notify(_ index: Int32, _ record: UnsafeMutablePointer<MutationRecord>, kindBit: UInt8, limit: UInt64) {
        let slot = hot.subscriptions[Int(index)]
        guard slot.alive, slot.id < limit, slot.kinds & kindBit != 0 else { return }
        // Most filters name no state: both are -1, the only negative value, so
        // one test of their AND skips both comparisons.
        if slot.oldState & slot.newState >= 0 {
            guard slot.oldState < 0 || slot.oldState == record.pointee.oldState,
                  slot.newState < 0 || slot.newState == record.pointee.newState else { return }
        }
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
        let slot = hot.subscriptions.pointer(Int(index))
        let callback = slot.pointee.callback
        slot.pointee.running = true
        let result = callback.function(OpaquePointer(record), callback.payload)
        // The callback may have subscribed: the table may have moved.
        let after = hot.subscriptions.pointer(Int(index))
        after.pointee.running = false
        if !after.pointee.alive {
            // Ended from inside its own callback: release it now that it returned.
            releasePayload(ofSubscription: index)
        } else if result == UF_STOP {
            end(subscription: index)
        }
    }
}
