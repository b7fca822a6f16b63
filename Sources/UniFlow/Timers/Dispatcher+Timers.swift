import CUniFlow
import Glibc

/// What the timer service (`time`) needs of the dispatcher: the model's places
/// and timer specs, and the sinks for what timers do.
extension Dispatcher: TimerContext {
    // MARK: Places

    @inline(__always)
    func timerField(_ place: Place) -> Int32 {
        slotValue(at: place, absent: -1, feature: \.timers, instance: \.timers)
    }

    @inline(__always)
    func setTimerField(_ place: Place, _ value: Int32) {
        let feature = hot.features.pointer(Int(place.feature))
        if feature.pointee.instances < 0 {
            feature.pointee.timers = value
        } else {
            hot.instanceTables.pointer(Int(feature.pointee.instances)).pointee.slots.pointer(Int(place.instance)).pointee.timers = value
        }
    }

    func place(feature: Int32, key: String?) -> Place {
        var place = Place(feature: feature)
        if let key, let table = instanceTable(of: feature) {
            place.instance = key.withCString { hot.instanceTables[Int(table)].find($0) }
        }
        return place
    }

    func forEachPlace(_ body: (Place) -> Void) {
        for f in 0..<Int32(hot.features.count) {
            if let table = instanceTable(of: f) {
                hot.instanceTables[Int(table)].forEach { slot, _ in body(Place(feature: f, instance: slot)) }
            } else {
                body(Place(feature: f))
            }
        }
    }

    func placeName(_ place: Place) -> String {
        var name = featureName(place.feature)
        if let key = key(at: place) { name += "[\(String(cString: key))]" }
        return name
    }

    // MARK: Timer specs

    func hasStateTimers(_ feature: Int32) -> Bool { hot.features[Int(feature)].timerSpecStarts >= 0 }

    @inline(__always)
    func timerCount(of state: Int32, in feature: Int32) -> Int {
        let slot = hot.features.pointer(Int(feature))
        return Int(hot.states.pointer(Int(slot.pointee.stateBase) &+ Int(state)).pointee.timerCount)
    }

    @inline(__always)
    func timerSpecs(of state: Int32, in feature: Int32) -> Range<Int> {
        let slot = hot.features.pointer(Int(feature))
        // The count first: most states have no timer (a feature without timers
        // has none at all, and no `timerSpecStarts`).
        let count = Int(hot.states.pointer(Int(slot.pointee.stateBase) &+ Int(state)).pointee.timerCount)
        guard count > 0 else { return 0..<0 }
        let start = Int(hot.timerSpecStarts[Int(slot.pointee.timerSpecStarts) &+ Int(state)])
        return start..<start &+ count
    }

    @inline(__always)
    func timerSpec(_ index: Int) -> TimerSpec { hot.timerSpecs[index] }

    // MARK: Sinks

    @inline(__always)
    var batching: Bool { batch != nil }

    @inline(__always)
    func recordUndo(_ entry: BatchLog.Undo) {
        // Kept apart as well: the batch frees them once it holds, without a
        // second walk over every undo entry (`releaseSuspendedTimers`).
        if case .timersDisarmed(_, let head) = entry { batch!.suspendedHeads.append(head) }
        batch!.undo.append(entry)
    }

    /// Whether timer lines are written: to the journal, or into a partitioned
    /// call's record.
    var journaling: Bool { journal != nil || staging != nil }

    func reportRejected(_ failure: UniFlowError, timer id: () -> String?) {
        guard reportingActive else { return }
        withTimerID(id()) { report(.timerRejected, action: nil, failure: failure, details: ReportDetails(timer: $0, aboutTimer: true)) }
    }

    @inline(__always)
    func deadlinesChanged() {
        // Without a descriptor (a host that polls `uf_loop_timeout`) there is nothing to update.
        if loop.descriptor != nil { loop.dirty = true }
    }

    func timerThreadBody(_ thread: TimerThread) -> () -> Void {
        // Unowned: the dispatcher outlives the thread (free joins it first), and a
        // forked child, where the thread does not exist, must still be able to free it.
        { [unowned self] in runTimerThread(thread) }
    }

}

/// The dispatcher's side of its timers, what only it can do because it runs
/// actions: checking an API timer's action before the service arms it, firing
/// due timers (each one an outer call through the pipeline), and the timer
/// thread's loop, which holds the dispatcher's lock. The rest is the timer
/// service's (`Timers/TimerService.swift`).
extension Dispatcher {
    // MARK: Calls the pipeline makes

    /// A place's state changed (`TimerService.stateChanged`).
    @inline(__always)
    func stateChanged(at place: Place, kind: MutationKind, into new: Int32, field: Int32) {
        // Nothing armed here and no state timers to arm (a statechart's numbers
        // are no flat states: `hasStateTimers`).
        guard field != -1 || hasStateTimers(place.feature) else { return }
        time.stateChanged(at: place, kind: kind, into: new, field: field, self)
    }

    /// A batch rolls back or holds (`Pipeline/Dispatcher+Batch.swift`).
    func unarmStateTimer(_ index: Int32, at place: Place) { time.unarmStateTimer(index, at: place, self) }
    func reviveStateTimers(at place: Place, head: Int32) { time.reviveStateTimers(at: place, head: head, self) }
    func releaseSuspendedTimers(_ heads: [Int32]) { time.releaseSuspendedTimers(heads) }
    func noteDisarmed() { time.noteDisarmed(self) }

    // MARK: API timers

    /// `uf_submit_after`: checks the action now, as `uf_submit` would up to its
    /// payload, then arms it (kept as its JSON text).
    func armAPITimer(json text: UnsafePointer<CChar>, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        // A payload_free run by uf_dispatcher_free must not arm what nobody would fire.
        try refuseWhileClosing("uf_submit_after")
        var partition: Int? = nil
        try JSONParser.withTree(text, levels: TimerService.maxActionDepth) { (root) throws(UniFlowError) in
            let action = try resolve(try BorrowedAction.decode(JanssonValue(root)), hasVia: false)
            partition = try timerPartition(of: action.header)
        }
        try timerCall(partition) { () throws(UniFlowError) in
            try time.armAPITimer(action: String(cString: text), delay: delay, id: id, keep: keep, self)
        }
    }

    /// `uf_dispatch_after`: checks the action now, then arms it as JSON text.
    func armAPITimer(action a: uf_action, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        try refuseWhileClosing("uf_dispatch_after")
        let action = try resolve(try DecodedAction(a), hasVia: false)
        let partition = try timerPartition(of: action.header)
        var object = actionDescription(action.header)
        // The payload it carried, not the defaults it would be given: they are filled
        // in when it fires, as for an action armed as JSON.
        if action.header.carriesPayload, let payload = action.payload { object["payload"] = .object(payload) }
        try timerCall(partition) { () throws(UniFlowError) in
            try time.armAPITimer(action: JSONValue.object(object).jsonText, delay: delay, id: id, keep: keep, self)
        }
    }

    /// On a partitioned dispatcher: the partition of an API timer's action,
    /// which this node must own (and, inside a call, the one the call writes).
    private func timerPartition(of action: ActionHeader) throws(UniFlowError) -> Int? {
        guard let table = partitioning else { return nil }
        if let failure = ownershipFailure(action, writing: false) { throw failure }
        return table.partition(ofKey: action.key)
    }

    /// Arming or cancelling an API timer from outside is an outer call of the
    /// timer's partition on a partitioned dispatcher: a record with its timer
    /// line, so that followers keep the timer. Inside a call (an interceptor,
    /// a handler) the line joins that call's record.
    private func timerCall(_ partition: Int?, _ body: () throws(UniFlowError) -> Void) throws(UniFlowError) {
        guard let partition, staging == nil else { return try body() }
        var failure: UniFlowError? = nil
        if case .refused(let refused) = runStaged(partition: partition, reporting: nil, {
            do throws(UniFlowError) { try body() } catch { failure = error }
        }) {
            throw refused
        }
        if let failure { throw failure }
    }

    /// `uf_timer_cancel`: on a partitioned dispatcher, only the owner of the
    /// timer's partition cancels it.
    func cancelTimer(_ id: String) throws(UniFlowError) {
        if let table = partitioning, let index = time.apiIDs[id], !ownsTimer(index) {
            let p = timerPartition(index)
            let owner = table[p].owner.map { "owned by node '\($0.node)'" } ?? "owned by no node"
            throw UniFlowError(.notOwner, "timer '\(id)' belongs to \(table.name(of: p)), \(owner)")
        }
        let partition = partitioning != nil ? time.apiIDs[id].map { timerPartition($0) } : nil
        try timerCall(partition) { () throws(UniFlowError) in try time.cancelTimer(id, self) }
    }

    // MARK: Firing

    /// Fires every timer due at or before `now`, in deadline order (arm order at
    /// one deadline). Each firing is one outer call; the firings at one instant
    /// count together toward `max_cascade`, past which the timers still due at
    /// that instant are dropped. `stop` ends it between two firings. Returns
    /// how many fired.
    @discardableResult
    func fireDueTimers(upTo now: UInt64, stop: (() -> Bool)? = nil) -> Int {
        var fired = 0
        var instant: UInt64? = nil
        while let top = time.nextDue(upTo: now) {
            if let stop, stop() { break }
            if top.deadline != instant {
                instant = top.deadline
                cascade = CascadeState()
            }
            if partitioning != nil && !ownsTimer(top.record) {
                // Only the owner fires a partition's timers: this one waits for a claim.
                time.store.setAsideTop()
                time.awaitingOwner.append((top.record, top.generation))
                continue
            }
            time.reach(top.deadline)
            if cascade.processed >= options.maxCascade {
                if partitioning != nil && staging == nil {
                    _ = runStaged(partition: timerPartition(top.record), reporting: nil) { dropTimer(top.record) }
                } else {
                    dropTimer(top.record)
                }
                continue
            }
            time.firing = top.deadline
            fire(top.record)
            fired += 1
            time.firing = nil
        }
        cascade = CascadeState()
        return fired
    }

    private func dropTimer(_ index: Int32) {
        let failure = UniFlowError(.loop, "cascade limit of \(options.maxCascade) actions reached at one instant; timer dropped")
        switch time.take(index, self) {
        case .state(_, let id, _, _):
            // Gone here, so gone after a replay too (which would otherwise arm it again).
            try? journalTimer(["timer": "dropped", "id": .string(id)])
            guard reportingActive else { return }
            withTimerID(id) { report(.dropped, action: nil, failure: failure, details: ReportDetails(timer: $0, aboutTimer: true)) }
        case .api(let text, let id, let serial):
            try? journalTimer(["timer": "dropped", "serial": .int(Int64(serial))])
            guard reportingActive else { return }
            withTimerID(id) { idPointer in
                let details = ReportDetails(timer: idPointer, aboutTimer: true)
                // An API timer's report names its action, as `timer_fired` would have:
                // an anonymous one has nothing else to tell it by.
                if (try? withTimerAction(text, id: idPointer) { (action) -> Bool in
                    report(.dropped, action: action.header, failure: failure, details: details)
                    return true
                }) == true {
                    return
                }
                report(.dropped, action: nil, failure: failure, details: details)
            }
        }
    }

    /// Fires one timer, taken out of the service first (its actions may arm it
    /// again): `timer_fired`, then its actions, processed like a submit from
    /// outside, then the queue and the watches.
    private func fire(_ index: Int32) {
        if partitioning != nil && staging == nil {
            fireStaged(index)
        } else {
            fireTaken(time.take(index, self))
        }
        if changes.any { settle() }
    }

    /// A timer taken out of the service, fired: its actions, the queue, and the line that says it fired.
    private func fireTaken(_ taken: TimerService.Taken) {
        switch taken {
        case .state(let record, let id, let place, let key):
            fireStateTimer(record, id: id, key: key)
            if !queue.isEmpty { drainQueue() }
            journalStateTimerFired(record, id: id, place: place, key: key)
        case .api(let text, let id, let serial):
            fireAPITimer(text, id: id)
            try? journalTimer(["timer": "fired", "serial": .int(Int64(serial))])
            if !queue.isEmpty { drainQueue() }
        }
    }

    /// On a partitioned dispatcher a firing is an outer call of the timer's
    /// partition: one record holds what its actions changed and the line that
    /// says it fired (so that followers drop it). When the sink refuses the
    /// record, the firing is undone and the timer armed again, with its serial,
    /// `Dispatcher.refusedFiringRetry` ms later.
    private func fireStaged(_ index: Int32) {
        let p = timerPartition(index)
        let ms = time.store.records[Int(index)].ms
        let taken = time.take(index, self)
        let outcome = runStaged(partition: p, reporting: nil) { fireTaken(taken) }
        if case .refused = outcome {
            let retry = time.clock.now() &+ Self.refusedFiringRetry
            switch taken {
            case .state(let record, _, _, let key):
                time.rearm([SavedStateTimer(feature: record.feature, key: key, after: Int(record.after),
                                            deadline: retry, serial: record.serial)], self)
            case .api(let text, let id, let serial):
                try? time.armRestoredAPITimer(action: text, ms: ms, id: id, deadline: retry, serial: serial, self)
            }
        }
        runHomeBindings()
    }

    /// How long a timer whose firing's record was refused waits before it fires again (ms).
    static let refusedFiringRetry: UInt64 = 1000

    /// A state timer's actions have run (the whole cascade). If its place is
    /// still in the timer's state without having armed it again, the journal
    /// says it fired, so that a replay does not arm it again; otherwise the
    /// mutation lines already say what a replay must arm. Written after the
    /// actions, so that a crash before it fires the timer again after replay
    /// (at least once, as API timers).
    private func journalStateTimerFired(_ record: TimerRecord, id: String, place: Place, key: String?) {
        guard journal != nil || staging != nil, state(at: place) == record.state, self.key(at: place).map({ String(cString: $0) }) == key,
              !time.hasArmed(after: record.after, at: place, self) else { return }
        try? journalTimer(["timer": "fired", "id": .string(id)])
    }

    private func fireAPITimer(_ text: String, id: String?) {
        withTimerID(id) { idPointer in
            do throws(UniFlowError) {
                try withTimerAction(text, id: idPointer) { action in
                    if reportingActive { report(.timerFired, action: action.header, details: ReportDetails(timer: idPointer, aboutTimer: true)) }
                    // A partitioned firing's record is written after this returns
                    // (`fireStaged`): its mutations' action must outlive the timer's text.
                    _ = process(partitioning == nil ? action : ((try? action.owned()) ?? action))
                }
            } catch {
                if reportingActive { report(.timerRejected, action: nil, failure: error, details: ReportDetails(timer: idPointer, aboutTimer: true)) }
            }
        }
    }

    /// An API timer's action, resolved from its text and marked as the timer's
    /// (`id`: its id, nil when anonymous), for `body`, while its text lives.
    private func withTimerAction<R>(_ text: String, id: UnsafePointer<CChar>?,
                                    _ body: (ResolvedAction) -> R) throws(UniFlowError) -> R {
        try text.withCName { (c) throws(UniFlowError) in
            try JSONParser.withTree(c!) { (root) throws(UniFlowError) in
                var action = try resolve(try BorrowedAction.decode(JanssonValue(root)), hasVia: false)
                action.header.byTimer = true
                action.header.timer = id
                return body(action)
            }
        }
    }

    private func fireStateTimer(_ record: TimerRecord, id: String, key: String?) {
        let timer = stateDefinition(record.state, of: record.feature).timers[Int(record.after)]
        var timerObject: JSONObject = ["id": .string(id), "feature": .string(featureName(record.feature)),
                                       "state": .string(stateName(record.state, feature: record.feature))]
        if let key { timerObject["key"] = .string(key) }
        timerObject["ms"] = .int(Int64(clamping: record.ms))
        id.withCString { idPointer in
            if reportingActive { report(.timerFired, action: nil, details: ReportDetails(timer: idPointer, aboutTimer: true)) }
            let data = ruleData(["model": lazyModel(), "timer": JSValue(wrapping: .object(timerObject))])
            do throws(UniFlowError) {
                var actions = try templateActions(timer.compiled, data: data, ownFeature: key.map { _ in record.feature },
                                                  ownKey: key, path: "submit")
                for i in actions.indices {
                    actions[i].header.byTimer = true
                    actions[i].header.timer = try ActionExtras.make(&actions[i].extras).own(id)
                }
                for action in actions { queue.append(action) }
            } catch {
                if reportingActive { report(.timerRejected, action: nil, failure: error, details: ReportDetails(timer: idPointer, aboutTimer: true)) }
            }
        }
    }

    /// `uf_clock_advance`: fires, in deadline order, every timer due by the
    /// manual clock plus `ms`, the clock reading each one's deadline while it
    /// fires, then sets the clock to the end.
    func advanceClock(by ms: UInt64) throws(UniFlowError) {
        guard time.clock.kind == .manual else {
            throw UniFlowError(.misuse, "uf_clock_advance needs a dispatcher made with \"clock\": \"manual\"")
        }
        try refuseInsideCallbacks("uf_clock_advance")
        try exclusive { () throws(UniFlowError) in
            let end = try time.manualEnd(advancingBy: ms)
            fireDueTimers(upTo: end)
            time.clock.manual = end
        }
    }

    // MARK: The timer thread

    /// The thread's loop: it holds the lock except while it sleeps, and fires as
    /// any caller processes (owner of the dispatcher, callbacks re-entrant).
    private func runTimerThread(_ thread: TimerThread) {
        _ = lock.take()
        let stopRequested = { thread.stopRequested.load(ordering: .relaxed) }
        while !thread.stopping && !stopRequested() {
            switch time.nextThreadStep(thread) {
            case .sleep(let deadline):
                sleep(thread, until: deadline)
            case .fire(let now):
                becomeOwner()
                fireDueTimers(upTo: now, stop: stopRequested)
                finishOuterCall()
                resignOwner()
            }
        }
        lock.release()
    }

    /// Lets go of the lock while the timer thread sleeps; a wake-up that comes
    /// after the thread last looked at its timers ends the sleep at once.
    private func sleep(_ thread: TimerThread, until deadline: timespec?) {
        let seen = thread.wakeCount
        lock.release()
        thread.sleep(unlessWokenSince: seen, until: deadline)
        _ = lock.take()
    }

    /// Stops the timer thread and waits for a firing under way; nothing fires
    /// after. The request comes before the lock, so that timers falling due
    /// while that firing runs are not fired before the thread lets go.
    func stopTimerThread() {
        guard let thread = time.thread else { return }
        thread.stopRequested.store(true, ordering: .relaxed)
        _ = lock.take()
        thread.stopping = true
        thread.wake()
        lock.release()
        thread.join()
        time.thread = nil
    }
}

/// Runs `body` with a timer id as a C string (nil: anonymous).
private func withTimerID<R>(_ id: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let id else { return body(nil) }
    return id.withCString { body($0) }
}
