import CUniFlow

/// The processing order (`docs/processing.md`): precondition, a send's target,
/// interceptors, via callback, payload, mutation applied; then model bindings,
/// subscribers and the reporter; then the queue.
extension Dispatcher {
    /// Submits an action: processes it now (and then the queue), or queues it when
    /// called from inside one of this dispatcher's callbacks. `resolve` runs with
    /// the dispatcher to itself; `via` is released exactly once, whatever happens.
    /// Returns `.ok` or `.queued`; a failure is thrown. Unless `waiting`, a call
    /// from another thread while this one is processing does nothing and returns
    /// `.busy` (`uf_dispatch_try`).
    @inline(__always)
    func submit(via: HostCallback<uf_via_fn>?, waiting: Bool = true,
                _ resolve: () throws(UniFlowError) -> ResolvedAction) throws(UniFlowError) -> Status {
        var via = via
        if isProcessingOnCurrentThread {
            do throws(UniFlowError) {
                if closing { throw UniFlowError(.misuse, "the dispatcher is being freed") }
                if cascade.dropping {
                    throw UniFlowError(.loop, "the cascade limit (\(options.maxCascade)) was reached; action refused")
                }
                var action = try resolve().owned()
                action.header.via = via
                queue.append(action)
                return .queued
            } catch {
                via?.release()
                throw error
            }
        }
        func processNow() throws(UniFlowError) -> Status {
            var action: ResolvedAction
            do throws(UniFlowError) {
                action = try resolve()
            } catch {
                via?.release()
                throw error
            }
            action.header.via = via
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
        var via = action.header.via
        via?.release()
    }

    /// Processes one action. Returns nil when it was applied (or, for a trigger,
    /// processed), otherwise the failure, which has been reported.
    func process(_ action: ResolvedAction) -> UniFlowError? {
        var via = action.header.via
        defer { via?.release() }
        cascade.processed += 1
        var header = action.header
        let place = place(of: header)
        let current = state(at: place)
        func rejected(_ failure: UniFlowError) -> UniFlowError {
            if reportingActive { report(.rejected, action: header, failure: failure) }
            return failure
        }
        if let failure = checkPrecondition(header, current: current) { return rejected(failure) }

        var kind = MutationKind(applying: header.kind)
        var newPayload = action.payload
        if header.kind == .send {
            switch chooseTarget(header, place: place, current: current, eventPayload: action.payload ?? JSONObject()) {
            case .failure(let failure):
                return rejected(failure)
            case .success(let choice):
                header.into = choice.into
                if choice.actualize { kind = .actualization }
                newPayload = choice.payload
            }
        }
        if interceptorsApply(to: header.feature), let failure = intercept(header, current: current, payload: action.payload) {
            return rejected(failure)
        }
        if let callback = via {
            switch runVia(callback, action: header, place: place, current: current, given: action.payload) {
            case .failure(let failure):
                return rejected(failure)
            case .success(let became):
                if let became { newPayload = became }
            }
        }
        if header.kind == .trigger {
            if reportingActive { report(.processed, action: header) }
            for queued in action.extras?.submit ?? [] { queue.append(queued) }
            return nil
        }
        do throws(UniFlowError) {
            announce(try commit(header, kind: kind, at: place, from: current, payload: newPayload))
        } catch {
            return rejected(error)
        }
        return nil
    }

    /// What messages call the action's subject: `Feature`, or `Feature[key]`.
    func subject(_ action: ActionHeader) -> String {
        guard let key = action.key else { return featureName(action.feature) }
        return "\(featureName(action.feature))[\(String(cString: key))]"
    }

    /// The precondition, `initial` and `transitions` included. `current` is the
    /// state at the action's place (-1: absent).
    func checkPrecondition(_ action: ActionHeader, current: Int32) -> UniFlowError? {
        let feature = hot.features[Int(action.feature)]
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
        case .send:
            if current < 0 { return rejection(action, "is not initialized") }
        }
        return nil
    }

    func rejection(_ action: ActionHeader, _ text: String) -> UniFlowError {
        UniFlowError(.rejected, "\(subject(action)) \(text)")
    }

    private func notIn(_ action: ActionHeader, _ required: Int32, _ current: Int32) -> UniFlowError {
        let wanted = stateName(required, feature: action.feature)
        if current < 0 { return rejection(action, "is not initialized (expected state \(wanted))") }
        return rejection(action, "is in state \(stateName(current, feature: action.feature)), not \(wanted)")
    }

    /// Journals the mutation, then stores the new state and payload (making or
    /// ending an instance); nobody is told yet. Fails, changing nothing, when the
    /// journal cannot be written (`UF_EIO`) or an instance cannot be made (`UF_ENOMEM`).
    func commit(_ action: ActionHeader, kind: MutationKind, at given: Place, from current: Int32,
                payload: JSONObject?) throws(UniFlowError) -> CommittedMutation {
        var place = given
        let newState: Int32 = kind == .deinitialization ? -1 : action.into
        var newPayload: JSONObject? = nil
        if newState >= 0 {
            if let payload {
                newPayload = payload.isEmpty ? nil : payload
            } else if stateSlot(newState, of: hot.features[Int(action.feature)]).hasFields {
                // Entered automatically: an auto state's defaults fill in.
                let defaults = (try? stateDefinition(newState, of: action.feature).checkPayload(nil, feature: featureName(action.feature))) ?? JSONObject()
                newPayload = defaults.isEmpty ? nil : defaults
            }
        }
        let oldPayload = current >= 0 ? storedPayload(at: place) : nil
        let keyed = hot.features[Int(action.feature)].instances >= 0
        if keyed && kind == .initialization { place = try createInstance(action.key!, of: action.feature) }
        var mutation = CommittedMutation(
            record: MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: model.seq &+ 1, kind: kind,
                                   feature: action.feature, oldState: current, newState: newState, key: key(at: place)),
            action: action, place: place)
        mutation.oldPayload = oldPayload
        mutation.newPayload = newPayload
        if hot.journaling {
            do throws(UniFlowError) {
                try journalMutation(mutation)
            } catch {
                if keyed && kind == .initialization { discardInstance(at: place) }
                throw error
            }
        }
        if batch != nil && !(keyed && kind == .deinitialization) {
            batch!.undo.append(kind == .initialization && keyed
                ? .created(table: hot.features[Int(action.feature)].instances, slot: place.instance)
                : .stored(place, state: current, payload: oldPayload))
        }
        // State timers first: an instance's are found through its slot, which a
        // deinitialization frees (a rolled-back batch undoes both).
        stateChanged(at: place, kind: kind, into: newState, field: timerField(place))
        if keyed && kind == .deinitialization {
            removeInstance(at: place)
        } else {
            store(newState, payload: newPayload, at: place)
        }
        model.seq &+= 1
        if batch == nil { noteCommitted(mutation) }
        return mutation
    }

    /// Tells the watches that read the feature (a batch does once it holds).
    @inline(__always)
    func noteCommitted(_ mutation: CommittedMutation) {
        if hot.features[Int(mutation.record.feature)].watched || hot.watchingAll { noteChange(of: mutation.record.feature) }
    }

    /// Ends an instance made for a mutation that then failed: nobody saw it.
    private func discardInstance(at place: Place) {
        let table = Int(hot.features[Int(place.feature)].instances)
        free(hot.instanceTables.pointer(table).pointee.remove(place.instance))
    }

    /// Runs the model bindings, the subscribers and the reporter for a committed mutation.
    @inline(__always)
    func announce(_ mutation: CommittedMutation) {
        var record = mutation.record
        if mutation.oldPayload != nil || mutation.newPayload != nil {
            scratch.delivery.oldPayload = mutation.oldPayload
            scratch.delivery.newPayload = mutation.newPayload
        }
        scratch.delivery.action = mutation.action
        let kindBit = MutationKind.bit(record.kind)
        let subscribedBefore = registrations.nextID
        if (hot.features[Int(record.feature)].bindingKinds | hot.anyBindingKinds) & kindBit != 0 { runBindings(record) }
        deliver(&record, instanceList: instanceList(of: record), subscribedBefore: subscribedBefore)
        if reportingActive { report(.processed, action: mutation.action, mutation: record) }
        scratch.delivery.reset()
    }
}

extension Dispatcher {
    /// The `F[key]` subscription list of a mutation's instance, or -1, found by
    /// its key when the mutation is announced: a batch announces its mutations
    /// after committing them all, and meanwhile subscribers may have made,
    /// ended or reused lists (the hot path reads the slot's, as it announces at once).
    func instanceList(of record: MutationRecord) -> Int32 {
        guard let key = record.key, !registrations.keyedLists.isEmpty else { return -1 }
        return registrations.keyedLists[InstanceName(feature: record.feature, key: String(cString: key))] ?? -1
    }
}

/// A mutation applied to the model, waiting to be announced.
struct CommittedMutation {
    var record: MutationRecord
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var action: ActionHeader
    /// Where it happened (the instance's slot, for a keyed feature).
    var place: Place

    init(record: MutationRecord, action: ActionHeader, place: Place) {
        self.record = record
        self.action = action
        self.place = place
    }
}

import Glibc
