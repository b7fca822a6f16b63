import CUniFlow

/// How the pipeline makes an action's changes visible. The steps of an action
/// are the same under every policy (`runSteps`); what differs is when its
/// mutation is announced and whether it can still be undone.
enum CommitPolicy {
    /// An outer call or a queued action: announced as soon as it is applied.
    case immediate
    /// One action of `uf_submit_batch`: applied with undo entries
    /// (`Dispatcher.batch`), announced only once every action of the batch holds.
    case batch
    /// An action of a partitioned dispatcher's outer call (its own or one its
    /// cascade queued): applied with undo entries, its model bindings run at
    /// once, its subscribers and reporter only once the call's record is
    /// accepted by the record sink (`Partitions/Dispatcher+Records.swift`).
    case staged
}

/// What the steps made of one action.
enum StepOutcome {
    /// Applied: the mutation, committed to the model and not yet announced.
    case committed(CommittedMutation)
    /// A trigger whose precondition held (and whose via did not decline): it
    /// applies nothing; its `submit` list is queued when it is announced.
    case triggered(ActionHeader)
    /// Refused by a step; nothing changed. The header is the action as the step
    /// saw it (a send with its chosen target), for the report.
    case failed(UniFlowError, ActionHeader)
}

/// The one sequence every action goes through on the general path, in the
/// order docs/processing.md gives: (on a partitioned dispatcher, ownership of
/// the action's partition,) precondition, a send's target,
/// interceptors, via callback, commit; then announcement (model bindings,
/// subscribers, the reporter). `process` (an outer call or a queued action)
/// and the batch (Dispatcher+Batch.swift) differ only by their `CommitPolicy`.
/// The hot path (Dispatcher+HotPath.swift) is a guard in front of these steps:
/// it proves that nothing unusual applies and then uses the same building
/// blocks (interceptors, state timers, watches, delivery) on flat storage.
extension Dispatcher {
    /// Processes one action under `policy`: runs its steps and, unless the
    /// policy defers it, announces what they committed. Returns nil when it was
    /// applied (or, for a trigger, processed), otherwise the failure, which has
    /// been reported. `via` is released exactly once.
    func process(_ action: ResolvedAction, policy: CommitPolicy = .immediate) -> UniFlowError? {
        // A partitioned dispatcher stages every outer call into one record; an
        // action inside a staged call (a timer's, a handler's) joins it.
        if partitioning != nil && policy == .immediate {
            return staging == nil ? processStaged(action) : process(action, policy: .staged)
        }
        var via = action.header.via
        defer { via?.release() }
        cascade.processed += 1
        switch runSteps(action, via: via, policy: policy) {
        case .failed(let failure, let header):
            if reportingActive { report(.rejected, action: header, failure: failure) }
            if charts.any { finishStatechartAction(action, policy: policy) }
            return failure
        case .triggered(let header):
            announceTrigger(header, submitting: action.extras?.submit)
        case .committed(let mutation):
            if policy == .staged {
                staging!.actions.append(action)
                staging!.committed.append((mutation, registrationIDs.next))
                announceToBindings(mutation)
            } else {
                announce(mutation)
            }
            if charts.any { finishStatechartAction(action, policy: policy) }
        }
        return nil
    }

    /// Precondition, a send's target, interceptors, via and commit: everything
    /// up to the announcement. Changes nothing unless it returns `.committed`
    /// (an interceptor or a via may have queued actions or armed timers; the
    /// caller decides what becomes of those).
    func runSteps(_ action: ResolvedAction, via: HostCallback<uf_via_fn>?, policy: CommitPolicy) -> StepOutcome {
        var header = action.header
        if partitioning != nil, let failure = ownershipFailure(header) { return .failed(failure, header) }
        if charts.any, let table = charts[header.feature] { return runStatechartSteps(action, table: table, via: via, policy: policy) }
        let place = place(of: header)
        let current = state(at: place)
        if let failure = checkPrecondition(header, current: current) { return .failed(failure, header) }

        var kind = MutationKind(applying: header.kind)
        var newPayload = action.payload
        if header.kind == .send {
            switch chooseTarget(header, place: place, current: current, eventPayload: action.payload ?? JSONObject()) {
            case .failure(let failure):
                return .failed(failure, header)
            case .success(let choice):
                header.into = choice.into
                if choice.actualize { kind = .actualization }
                newPayload = choice.payload
            }
        }
        if interceptorsApply(to: header.feature), let failure = intercept(header, current: current, payload: action.payload) {
            return .failed(failure, header)
        }
        if let via {
            switch runVia(via, action: header, place: place, current: current, given: action.payload) {
            case .failure(let failure):
                return .failed(failure, header)
            case .success(let became):
                if let became { newPayload = became }
            }
        }
        if header.kind == .trigger { return .triggered(header) }
        do throws(UniFlowError) {
            return .committed(try commit(header, kind: kind, at: place, from: current, payload: newPayload, policy: policy))
        } catch {
            return .failed(error, header)
        }
    }

    /// A trigger's announcement: its report, then its `submit` list queued.
    func announceTrigger(_ header: ActionHeader, submitting submit: [ResolvedAction]?) {
        if reportingActive { report(.processed, action: header) }
        for queued in submit ?? [] { queue.append(queued) }
    }
}
