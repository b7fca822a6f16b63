import CUniFlow

/// Observer bindings (SPEC 4.5). Subscriptions are indexed by the feature their
/// filter names, so a mutation only looks at its own feature's list and the
/// `AnyMutation` list, never at every subscription.
extension Dispatcher {
    /// A filter compiled to indices.
    struct CompiledFilter {
        var kinds: UInt8
        var feature: Int32
        var oldState: Int32 = -1
        var newState: Int32 = -1
    }

    /// Resolves a parsed filter against the registered features.
    func compile(_ filter: FilterExpression) throws(UniFlowError) -> CompiledFilter {
        try compile(filter) { name in
            featureIndex(named: name).map { feature in (feature, { self.stateIndex(named: $0, feature: feature).map(Int.init) }) }
        }
    }

    /// Resolves a parsed filter with `lookup` giving a feature's index and a
    /// function that finds its states by name.
    func compile(_ filter: FilterExpression,
                 lookup: (String) -> (Int32, (String) -> Int?)?) throws(UniFlowError) -> CompiledFilter {
        let initialization: UInt8 = 1 << 1, actualization: UInt8 = 1 << 2
        let transition: UInt8 = 1 << 3, deinitialization: UInt8 = 1 << 4
        let all = initialization | actualization | transition | deinitialization
        guard let featureName = filter.feature else { return CompiledFilter(kinds: all, feature: -1) }
        guard let (feature, stateIndex) = lookup(featureName) else {
            throw UniFlowError(.notFound, "filter '\(filter.text)': unknown feature '\(featureName)'")
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
        var compiled = CompiledFilter(kinds: all, feature: feature)
        switch filter.form {
        case .anyMutation, .anyMutationOf: break
        case .anyUpdateOf: compiled.kinds = actualization | transition
        case .anySettingOf: compiled.kinds = initialization | actualization | transition
        case .settingInto: compiled.kinds = initialization | actualization | transition; compiled.newState = first
        case .initialization: compiled.kinds = initialization
        case .actualization: compiled.kinds = actualization
        case .transition: compiled.kinds = transition
        case .deinitialization: compiled.kinds = deinitialization
        case .initializationInto: compiled.kinds = initialization; compiled.newState = first
        case .actualizationIn: compiled.kinds = actualization; compiled.newState = first
        case .transitionInto: compiled.kinds = transition; compiled.newState = first
        case .transitionFrom: compiled.kinds = transition; compiled.oldState = first
        case .transitionBetween: compiled.kinds = transition; compiled.oldState = first; compiled.newState = second
        case .deinitializationFrom: compiled.kinds = deinitialization; compiled.oldState = first
        }
        return compiled
    }

    /// Adds a subscription; its id is never 0 and never reused.
    func subscribe(_ filter: CompiledFilter, fn: uf_subscriber_fn, payload: UnsafeMutableRawPointer?,
                   payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing("uf_subscribe")
        let id = nextSubscriptionID
        nextSubscriptionID += 1
        let slot = SubscriptionSlot(id: id, fn: fn, payload: payload, payloadFree: payloadFree, kinds: filter.kinds,
                                    feature: filter.feature, oldState: filter.oldState, newState: filter.newState,
                                    alive: true, running: false)
        let index: Int32
        if let reused = freeSubscriptionSlots.popLast() {
            index = reused
            hot.subscriptions[Int(index)] = slot
        } else {
            index = Int32(hot.subscriptions.count)
            hot.subscriptions.append(slot)
        }
        if filter.feature < 0 {
            hot.anySubscribers.append(index)
        } else {
            hot.features.pointer(Int(filter.feature)).pointee.subscribers.append(index)
        }
        subscriptionSlots[id] = index
        return id
    }

    /// Ends a subscription. Its `payload_free` runs now, or when its callback
    /// returns if it is running.
    func unsubscribe(_ id: UInt64) throws(UniFlowError) {
        guard let index = subscriptionSlots[id], hot.subscriptions[Int(index)].alive else {
            throw UniFlowError(.notFound, "no subscription with id \(id)")
        }
        end(subscription: index)
    }

    private func end(subscription index: Int32) {
        let slot = hot.subscriptions.pointer(Int(index))
        slot.pointee.alive = false
        subscriptionSlots[slot.pointee.id] = nil
        if !slot.pointee.running { releasePayload(ofSubscription: index) }
        if notifyingDepth > 0 {
            pendingRemovals.append(index)
        } else {
            removeFromList(index)
        }
    }

    func releasePayload(ofSubscription index: Int32) {
        let slot = hot.subscriptions[Int(index)]
        hot.subscriptions.pointer(Int(index)).pointee.payloadFree = nil
        slot.payloadFree?(slot.payload)
    }

    private func removeFromList(_ index: Int32) {
        let feature = hot.subscriptions[Int(index)].feature
        if feature < 0 {
            hot.anySubscribers.removeAll { $0 == index }
        } else {
            hot.features.pointer(Int(feature)).pointee.subscribers.removeAll { $0 == index }
        }
        freeSubscriptionSlots.append(index)
    }

    /// Delivers a mutation to the subscribers whose filter matches, in
    /// subscription order: the feature's list and the `AnyMutation` list are
    /// merged by id. Lists are re-read on every step because a callback may
    /// subscribe (which can move them); subscriptions added during the delivery
    /// have ids at or above `limit` and wait for the next mutation, so a list
    /// empty when the delivery starts can be left out.
    @inline(__always)
    func deliver(_ record: inout MutationRecord) {
        let f = Int(record.feature)
        let ownAtStart = hot.features[f].subscribers.count
        let anyAtStart = hot.anySubscribers.count
        if ownAtStart == 0 && anyAtStart == 0 { return }
        let limit = nextSubscriptionID
        notifyingDepth += 1
        withUnsafeMutablePointer(to: &record) { recordPointer in
            if anyAtStart == 0 {
                var i = 0
                while i < hot.features[f].subscribers.count {
                    notify(hot.features[f].subscribers[i], recordPointer, limit: limit)
                    i += 1
                }
            } else if ownAtStart == 0 {
                var j = 0
                while j < hot.anySubscribers.count {
                    notify(hot.anySubscribers[j], recordPointer, limit: limit)
                    j += 1
                }
            } else {
                var i = 0
                var j = 0
                while true {
                    let own = hot.features[f].subscribers
                    let any = hot.anySubscribers
                    let index: Int32
                    if i < own.count && (j >= any.count || hot.subscriptions[Int(own[i])].id < hot.subscriptions[Int(any[j])].id) {
                        index = own[i]
                        i += 1
                    } else if j < any.count {
                        index = any[j]
                        j += 1
                    } else {
                        break
                    }
                    notify(index, recordPointer, limit: limit)
                }
            }
        }
        notifyingDepth -= 1
        if notifyingDepth == 0 && !pendingRemovals.isEmpty {
            let removals = pendingRemovals
            pendingRemovals.removeAll()
            for index in removals { removeFromList(index) }
        }
    }

    /// Calls one subscription if it is alive, older than the delivery and its
    /// filter matches; ends it if it asks to be ended.
    @inline(__always)
    private func notify(_ index: Int32, _ record: UnsafeMutablePointer<MutationRecord>, limit: UInt64) {
        let slot = hot.subscriptions[Int(index)]
        let kindBit: UInt8 = 1 << UInt8(truncatingIfNeeded: record.pointee.kind)
        guard slot.alive, slot.id < limit, slot.kinds & kindBit != 0,
              slot.oldState < 0 || slot.oldState == record.pointee.oldState,
              slot.newState < 0 || slot.newState == record.pointee.newState,
              let fn = slot.fn else { return }
        record.pointee.subscriptionID = slot.id
        hot.subscriptions.pointer(Int(index)).pointee.running = true
        let result = fn(OpaquePointer(record), slot.payload)
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
