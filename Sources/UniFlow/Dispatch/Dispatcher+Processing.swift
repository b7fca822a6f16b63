import CUniFlow

/// The processing order of SPEC section 7: precondition, via callback, payload,
/// mutation applied; then subscribers, then the reporter; then the queue.
extension Dispatcher {
    /// Submits an action: processes it now (and then the queue), or queues it when
    /// called from inside one of this dispatcher's callbacks. `resolve` runs with
    /// the dispatcher to itself; `via` is released exactly once, whatever happens.
    /// Returns `.ok` or `.queued`; a failure is thrown. Unless `waiting`, a call
    /// from another thread while this one is processing does nothing and returns
    /// `.busy` (`uf_dispatch_try`).
    @inline(__always)
    func submit(via: ViaCallback?, waiting: Bool = true,
                _ resolve: () throws(UniFlowError) -> ResolvedAction) throws(UniFlowError) -> Status {
        if isProcessingOnCurrentThread {
            var action: ResolvedAction
            do throws(UniFlowError) {
                if closing { throw UniFlowError(.misuse, "the dispatcher is being freed") }
                if cascade.dropping {
                    throw UniFlowError(.loop, "the cascade limit (\(options.maxCascade)) was reached; action refused")
                }
                action = try resolve()
            } catch {
                via?.release()
                throw error
            }
            action.via = via
            queue.append(action.owned())
            return .queued
        }
        func processNow() throws(UniFlowError) -> Status {
            var action: ResolvedAction
            do throws(UniFlowError) {
                action = try resolve()
            } catch {
                via?.release()
                throw error
            }
            action.via = via
            if let failure = process(action) { throw failure }
            return .ok
        }
        if waiting { return try exclusive(processNow) }
        if let status = try exclusiveUnlessBusy(processNow) { return status }
        via?.release()
        return .busy
    }

    /// Processes queued actions in order until none is left, dropping what exceeds
    /// `max_cascade`.
    func drainQueue() {
        while let next = queue.popFirst() {
            if cascade.processed >= options.maxCascade {
                cascade.dropping = true
                drop(next)
            } else {
                _ = process(next)
            }
        }
        cascade.dropping = false
    }

    private func drop(_ action: ResolvedAction) {
        if reportingActive {
            report(.dropped, action: action.header, failure: UniFlowError(.loop, "cascade limit of \(options.maxCascade) actions reached; action dropped"))
        }
        action.via?.release()
    }

    /// Processes one action. Returns nil when it was applied (or, for a trigger,
    /// processed), otherwise the failure, which has been reported.
    func process(_ action: ResolvedAction) -> UniFlowError? {
        defer { action.via?.release() }
        cascade.processed += 1
        let feature = hot.features[Int(action.feature)]
        if let failure = checkPrecondition(action, feature) {
            if reportingActive { report(.rejected, action: action.header, failure: failure) }
            return failure
        }
        var newPayload = action.payload
        if let callback = action.via {
            switch runVia(callback, action: action, feature: feature) {
            case .failure(let failure):
                if reportingActive { report(.rejected, action: action.header, failure: failure) }
                return failure
            case .success(let became):
                if let became { newPayload = became }
            }
        }
        if action.kind == .trigger {
            if reportingActive { report(.processed, action: action.header) }
            for queued in action.extras?.submit ?? [] { queue.append(queued) }
            return nil
        }
        do throws(UniFlowError) {
            announce(try commit(action, feature: feature, payload: newPayload))
        } catch {
            if reportingActive { report(.rejected, action: action.header, failure: error) }
            return error
        }
        return nil
    }

    /// The precondition's failure, if it does not hold (for batches).
    func preconditionFailure(_ action: ResolvedAction, _ feature: FeatureSlot) -> UniFlowError? {
        checkPrecondition(action, feature)
    }

    /// The precondition of SPEC section 3, `initial` and `transitions` included.
    @inline(__always)
    private func checkPrecondition(_ action: ResolvedAction, _ feature: FeatureSlot) -> UniFlowError? {
        let current = feature.state
        switch action.kind {
        case .initialize:
            if current >= 0 { return rejection(action, "is already initialized (in state \(stateName(current, feature: action.feature)))") }
            if !stateSlot(action.into, of: feature).isInitial {
                return rejection(action, "cannot be initialized into \(stateName(action.into, feature: action.feature)): not an initial state")
            }
        case .actualize:
            if current != action.into { return notIn(action, action.into, current) }
        case .transition:
            if action.from >= 0 {
                if current != action.from { return notIn(action, action.from, current) }
            } else if current < 0 {
                return rejection(action, "is not initialized")
            } else if current == action.into && !action.same {
                return rejection(action, "is already in state \(stateName(current, feature: action.feature))")
            }
            if current >= 0 && !hot.allowsTransition(feature, from: current, into: action.into) {
                return rejection(action, "cannot transition from \(stateName(current, feature: action.feature)) into \(stateName(action.into, feature: action.feature)): not a declared transition")
            }
        case .deinitialize:
            if action.from >= 0 {
                if current != action.from { return notIn(action, action.from, current) }
            } else if current < 0 {
                return rejection(action, "is not initialized")
            }
        case .trigger:
            if action.from >= 0 {
                if current != action.from { return notIn(action, action.from, current) }
            } else if action.uninitialized {
                if current >= 0 { return rejection(action, "is initialized (in state \(stateName(current, feature: action.feature))), not absent") }
            } else if current < 0 {
                return rejection(action, "is not initialized")
            }
        }
        return nil
    }

    private func rejection(_ action: ResolvedAction, _ text: String) -> UniFlowError {
        UniFlowError(.rejected, "\(featureName(action.feature)) \(text)")
    }

    private func notIn(_ action: ResolvedAction, _ required: Int32, _ current: Int32) -> UniFlowError {
        let wanted = stateName(required, feature: action.feature)
        if current < 0 { return rejection(action, "is not initialized (expected state \(wanted))") }
        return rejection(action, "is in state \(stateName(current, feature: action.feature)), not \(wanted)")
    }

    /// Journals the mutation, then stores the new state and payload; nobody is
    /// told yet. Fails (`UF_EIO`), changing nothing, when the journal cannot be written.
    @inline(__always)
    func commit(_ action: ResolvedAction, feature: FeatureSlot, payload given: JSONObject?) throws(UniFlowError) -> CommittedMutation {
        let f = Int(action.feature)
        let newState: Int32 = action.kind == .deinitialize ? -1 : action.into
        var newPayload: JSONObject? = nil
        if newState >= 0 {
            if let given {
                newPayload = given.isEmpty ? nil : given
            } else if stateSlot(newState, of: feature).hasFields {
                // Entered automatically: an auto state's defaults fill in.
                let defaults = (try? stateDefinition(newState, of: action.feature).checkPayload(nil, feature: featureName(action.feature))) ?? JSONObject()
                newPayload = defaults.isEmpty ? nil : defaults
            }
        }
        let kind: UInt32
        switch action.kind {
        case .initialize: kind = UF_MUTATION_INITIALIZATION.rawValue
        case .actualize: kind = UF_MUTATION_ACTUALIZATION.rawValue
        case .transition: kind = UF_MUTATION_TRANSITION.rawValue
        default: kind = UF_MUTATION_DEINITIALIZATION.rawValue
        }
        let hadPayload = feature.hasPayload
        var mutation = CommittedMutation(
            record: MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: seq &+ 1, kind: Int32(kind),
                                   feature: action.feature, oldState: feature.state, newState: newState),
            action: action.header)
        if hadPayload || newPayload != nil {
            mutation.oldPayload = hadPayload ? payloads[f] : nil
            mutation.newPayload = newPayload
        }
        if hot.journaling { try journalMutation(mutation) }
        let slot = hot.features.pointer(f)
        slot.pointee.state = newState
        slot.pointee.hasPayload = newPayload != nil
        if hadPayload || newPayload != nil { payloads[f] = newPayload }
        seq &+= 1
        return mutation
    }

    /// Runs the model bindings, the subscribers and the reporter for a committed mutation.
    @inline(__always)
    func announce(_ mutation: CommittedMutation) {
        var record = mutation.record
        if mutation.oldPayload != nil || mutation.newPayload != nil {
            delivery.oldPayload = mutation.oldPayload
            delivery.newPayload = mutation.newPayload
        }
        delivery.action = mutation.action
        let kindBit: UInt8 = 1 << UInt8(truncatingIfNeeded: record.kind)
        if (hot.features[Int(record.feature)].bindingKinds | hot.anyBindingKinds) & kindBit != 0 { runBindings(record) }
        deliver(&record)
        if reportingActive { report(.processed, action: mutation.action, mutation: record) }
        delivery.reset()
    }
}

/// A mutation applied to the model, waiting to be announced.
struct CommittedMutation {
    var record: MutationRecord
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var action: ActionHeader

    init(record: MutationRecord, action: ActionHeader) {
        self.record = record
        self.action = action
    }
}
