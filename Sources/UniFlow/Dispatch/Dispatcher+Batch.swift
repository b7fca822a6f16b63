/// Transactions and snapshots (SPEC 10): `uf_submit_batch`, `uf_state_restore`,
/// `uf_replay_file`. None may run inside a callback: they replace or roll back
/// the model that callback is looking at.
extension Dispatcher {
    func refuseInsideCallbacks(_ function: String) throws(UniFlowError) {
        if isProcessingOnCurrentThread {
            throw UniFlowError(.misuse, "\(function) is not allowed inside a callback of the same dispatcher")
        }
    }

    /// Applies every action in order, or none: the first that fails rolls the
    /// model back and is the call's failure (`batch[i]: ...`). On success the
    /// bindings and subscribers see each mutation in order, against the committed model.
    func submitBatch(_ requests: [ActionRequest]) throws(UniFlowError) {
        try refuseInsideCallbacks("uf_submit_batch")
        try exclusive { () throws(UniFlowError) in
            var actions: [ResolvedAction] = []
            for (i, request) in requests.enumerated() {
                do throws(UniFlowError) {
                    actions.append(try resolve(request, hasVia: false))
                } catch {
                    throw error.prefixed("batch[\(i)]")
                }
            }
            let before = ModelSnapshot(of: self)
            let seqBefore = seq
            let journaling = hot.journaling
            // Journal the batch only once it holds: a crash mid-batch must not replay half of it.
            hot.journaling = false
            var committed: [CommittedMutation] = []
            for (i, action) in actions.enumerated() {
                let feature = hot.features[Int(action.feature)]
                if let failure = checkBatchPrecondition(action, feature) {
                    install(before)
                    seq = seqBefore
                    hot.journaling = journaling
                    cascade.processed += 1
                    if reportingActive { report(.rejected, action: action.header, failure: failure) }
                    throw failure.prefixed("batch[\(i)]")
                }
                if action.kind != .trigger {
                    // Not journaled here (journaling is off until the batch holds): cannot fail.
                    committed.append(try commit(action, feature: feature, payload: action.payload))
                }
            }
            hot.journaling = journaling
            if journaling {
                do throws(UniFlowError) {
                    try journalBatch(committed)
                } catch {
                    install(before)
                    seq = seqBefore
                    cascade.processed += 1
                    if reportingActive, let last = actions.last { report(.rejected, action: last.header, failure: error) }
                    throw error
                }
            }
            cascade.processed += actions.count
            var next = 0
            for action in actions {
                if action.kind == .trigger {
                    if reportingActive { report(.processed, action: action.header) }
                    for queued in action.extras?.submit ?? [] { queue.append(queued) }
                } else {
                    announce(committed[next])
                    next += 1
                }
            }
        }
    }

    /// The precondition of one batch action (a batch has no via callbacks).
    private func checkBatchPrecondition(_ action: ResolvedAction, _ feature: FeatureSlot) -> UniFlowError? {
        preconditionFailure(action, feature)
    }

    /// Replaces the model with a validated one; nobody is notified. Restored
    /// features' model bindings are active from now on.
    func restore(_ json: JSONValue) throws(UniFlowError) {
        try refuseInsideCallbacks("uf_state_restore")
        try exclusive { () throws(UniFlowError) in
            try installJournaled(try validatedModel(json), replacing: ModelSnapshot(of: self))
        }
    }
}
