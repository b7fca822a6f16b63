import Glibc

/// What a batch changed so far, so that a failure can undo it exactly: the
/// entries are undone in reverse order.
struct BatchLog {
    enum Undo {
        /// A state and payload were stored at a place that had these.
        case stored(Place, state: Int32, payload: JSONObject?)
        /// An instance was made in that slot.
        case created(table: Int32, slot: Int32)
        /// An instance was removed from its place, where it was like this.
        case removed(Place, InstanceSlot, payload: JSONObject?)
        /// A state timer was armed at a place.
        case timerArmed(Int32, place: Place)
        /// A place's state timers were disarmed (suspended, still linked from `head`).
        case timersDisarmed(Place, head: Int32)
        /// An API timer was armed (by an interceptor, during the batch).
        case apiArmed(Int32, id: String?)
        /// An API timer was cancelled or replaced (suspended).
        case apiCancelled(Int32, id: String)
    }

    var undo: [Undo] = []
    /// The heads of the state timers disarmed (`.timersDisarmed`), freed once the batch holds.
    var suspendedHeads: [Int32] = []
    var seq: UInt64
    /// Mutations applied so far, and the journal's timer lines (what
    /// interceptors armed or cancelled) with the number of mutations before
    /// each: the batch's one journal line holds both, in order, once it holds.
    var committed = 0
    var timerLines: [(after: Int, line: JSONObject)] = []
    /// A callback (an interceptor) added a watch, whose first value was read from
    /// the batch's model as it stood.
    var watchAdded = false
}

/// Transactions (`uf_submit_batch`): every action in order, or none.
extension Dispatcher {
    /// Applies every action in order, or none: the first that fails rolls the
    /// model back and is the call's failure (`batch[i]: ...`). On success the
    /// bindings and subscribers see each mutation in order, against the committed
    /// model, and timers and watches see the result.
    ///
    /// The actions are read straight from jansson's tree, as `uf_submit` reads
    /// one; the tree lives until the batch is announced.
    func submitBatch(_ text: UnsafePointer<CChar>) throws(UniFlowError) {
        try refuseInsideCallbacks("uf_submit_batch")
        try JSONParser.withTree(text) { (root) throws(UniFlowError) in
            guard let items = JanssonValue(root).elements else {
                throw UniFlowError(.schema, "a batch must be an array of actions, got \(JSONParser.typeName(of: root))")
            }
            try exclusive { () throws(UniFlowError) in
                try apply(try resolveBatch(items))
            }
        }
    }

    /// Decodes and resolves each action in one pass: a decoded action is lent to
    /// `resolve` and dropped, never kept in a list (copying one in and out cost
    /// more than resolving it). The first action that does not decode is the
    /// failure even when an earlier one does not resolve, as if every action
    /// were decoded first.
    private func resolveBatch(_ items: [JanssonValue]) throws(UniFlowError) -> [ResolvedAction] {
        var actions: [ResolvedAction] = []
        actions.reserveCapacity(items.count)
        var unresolved: UniFlowError? = nil
        for i in items.indices {
            let request: BorrowedAction
            do throws(UniFlowError) {
                request = try BorrowedAction.decode(items[i])
            } catch {
                throw error.prefixed("batch[\(i)]")
            }
            guard unresolved == nil else { continue }
            do throws(UniFlowError) {
                actions.append(try resolve(request, hasVia: false))
            } catch {
                unresolved = error.prefixed("batch[\(i)]")
            }
        }
        if let unresolved { throw unresolved }
        return actions
    }

    private func apply(_ actions: [ResolvedAction]) throws(UniFlowError) {
        // A partitioned dispatcher's batch is one staged call (its bindings
        // cascade into its record): Partitions/Dispatcher+Records.swift.
        if partitioning != nil { return try applyStaged(actions) }
        let journaling = hot.journaling
        // Journal the batch only once it holds: a crash mid-batch must not replay half of it.
        hot.journaling = false
        // Reserved once: growing these lists cost more allocations than the rest of a small batch.
        var log = BatchLog(seq: model.seq)
        log.undo.reserveCapacity(2 * actions.count)
        batch = log
        /// Undoes the batch and reports its one rejection; returns the failure
        /// as the call gives it (with the action's index, when there is one).
        func rollBack(_ failure: UniFlowError, at index: Int?, reporting action: ActionHeader?) -> UniFlowError {
            undoBatch()
            hot.journaling = journaling
            cascade.processed += 1
            // What interceptors queued for actions that never happened goes too.
            while let queued = queue.popFirst() { var via = queued.header.via; via?.release() }
            if reportingActive, let action { report(.rejected, action: action, failure: failure) }
            return index.map { failure.prefixed("batch[\($0)]") } ?? failure
        }
        var committed: [CommittedMutation] = []
        committed.reserveCapacity(actions.count)
        // Statechart services stop and start once the whole batch holds.
        var services: [StagedCharts.Services] = []
        for i in actions.indices {
            switch runSteps(actions[i], via: nil, policy: .batch) {
            case .failed(let failure, let header):
                charts.pending.removeAll()
                charts.pendingServices.removeAll()
                throw rollBack(failure, at: i, reporting: header)
            case .triggered:
                break
            case .committed(let mutation):
                // Not journaled here (journaling is off until the batch holds).
                committed.append(mutation)
                // A statechart's later microsteps are mutations of the batch too.
                if !charts.pending.isEmpty { committed += charts.pending; charts.pending.removeAll() }
                if !charts.pendingServices.isEmpty { services += takePendingServices(after: 0) }
                batch!.committed = committed.count
            }
        }
        hot.journaling = journaling
        if journal != nil {
            // What its services leave each instance running, once they run.
            if !services.isEmpty { batch!.timerLines += journalInvocationLines(StagedCharts(services: services)).map { (committed.count, $0) } }
            do throws(UniFlowError) {
                try journalBatch(committed, timerLines: batch!.timerLines)
            } catch {
                throw rollBack(error, at: nil, reporting: actions.last?.header)
            }
        }
        commitBatch()
        cascade.processed += actions.count
        for mutation in committed { noteCommitted(mutation) }
        // The model is the committed one now, but a binding's owner the batch began
        // or ended is active only where its mutations fall: counted back from now
        // to before the batch, then forward as each mutation is announced.
        bindings.beginBatchAnnouncement(committed, context: self)
        var next = 0
        for i in actions.indices {
            if actions[i].kind == .trigger {
                announceTrigger(actions[i].header, submitting: actions[i].extras?.submit)
            } else {
                bindings.announcingInBatch(committed[next].record)
                announce(committed[next])
                next += 1
            }
        }
        bindings.endBatchAnnouncement()
        if !services.isEmpty { runDeferredServices(services) }
    }

    /// Puts back everything the batch changed, in reverse order.
    func undoBatch() {
        guard let log = batch else { return }
        batch = nil
        for entry in log.undo.reversed() {
            switch entry {
            case .stored(let place, let state, let payload):
                store(state, payload: state >= 0 ? payload : nil, at: place)
            case .created(let table, let slot):
                free(hot.instanceTables.pointer(Int(table)).pointee.remove(slot))
                model.instancePayloads[Int(table)][Int(slot)] = nil
            case .removed(let place, var instance, let payload):
                let table = hot.features[Int(place.feature)].instances
                // Its `F[key]` list may have ended, been reused or begun while the
                // instance was gone: found again by its key, as a new instance's is.
                instance.subscribers = -1
                hot.instanceTables.pointer(Int(table)).pointee.restore(instance, at: place.instance)
                model.instancePayloads[Int(table)][Int(place.instance)] = payload
                attachKeyedSubscribers(table: table, slot: place.instance, feature: place.feature)
            case .timerArmed(let index, let place):
                unarmStateTimer(index, at: place)
            case .timersDisarmed(let place, let head):
                reviveStateTimers(at: place, head: head)
            case .apiArmed(let index, let id):
                noteDisarmed()
                if let id { time.apiIDs[id] = nil }
                free(time.store.records[Int(index)].action)
                free(time.store.records[Int(index)].id)
                time.store.free(index)
            case .apiCancelled(let index, let id):
                time.store.revive(index)
                time.apiIDs[id] = index
            }
        }
        model.seq = log.seq
        // A watch added during the batch saw a model that is gone: every watch is
        // evaluated again, and those whose value differs from the one they saw are called.
        if log.watchAdded {
            changes.everything = true
            changes.any = true
        }
    }

    /// The batch holds: keys of the instances it ended are freed with the outer call.
    func commitBatch() {
        guard let log = batch else { return }
        batch = nil
        for entry in log.undo {
            switch entry {
            case .removed(let place, let instance, _):
                changes.retiredKeys.append(instance.key!)
                changes.emptiedTables.append(hot.features[Int(place.feature)].instances)
                changes.any = true
            case .apiCancelled(let index, _):
                free(time.store.records[Int(index)].action)
                free(time.store.records[Int(index)].id)
                time.store.release(suspended: index)
            default:
                break
            }
        }
        releaseSuspendedTimers(log.suspendedHeads)
    }

    /// Replaces the model with a validated one; nobody is notified. Restored
    /// features' model bindings are active from now on, and their state timers armed afresh.
    func restore(_ json: JSONValue) throws(UniFlowError) {
        try refuseInsideCallbacks("uf_state_restore")
        try exclusive { () throws(UniFlowError) in
            // Its state timers are armed afresh; API timers stay as they are.
            try installJournaled(try validatedModel(json), replacing: ModelSnapshot(of: self))
        }
    }
}
