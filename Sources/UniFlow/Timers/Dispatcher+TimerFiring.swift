import CUniFlow
import Glibc

/// Firing timers (`docs/time.md`): who is told of deadlines (the timer thread or
/// the host's loop), and what a due timer does.
extension Dispatcher {
    /// A timer was disarmed: the host's loop may be waiting for its deadline,
    /// and must not wake for it (nor stay readable for a due one).
    @inline(__always)
    func noteDisarmed() {
        // Without a descriptor (a host that polls `uf_loop_timeout`) there is nothing to update.
        if options.timers == .host && loop.descriptor != nil { loop.dirty = true }
    }

    /// Someone must know of a new deadline: the timer thread (started on the
    /// first timer), or the host's loop.
    @inline(__always)
    func noteArmed(_ deadline: UInt64, timer index: Int32) {
        guard time.clock.kind == .monotonic else { return }
        if options.timers == .thread {
            if let thread = time.thread {
                if let waiting = thread.waitingUntil, waiting <= deadline { return }
                thread.wake()
            } else {
                startTimerThread(for: index)
            }
        } else if loop.descriptor != nil {
            loop.dirty = true
        }
    }

    /// Fires every timer due at or before `now`, in deadline order (arm order at
    /// one deadline). Each firing is one outer call; the firings at one instant
    /// count together toward `max_cascade`, past which the timers still due at
    /// that instant are dropped. `stop` ends it between two firings. Returns
    /// how many fired.
    @discardableResult
    func fireDueTimers(upTo now: UInt64, stop: (() -> Bool)? = nil) -> Int {
        var fired = 0
        var instant: UInt64? = nil
        while let top = time.store.peek(), top.deadline <= now {
            if let stop, stop() { break }
            if top.deadline != instant {
                instant = top.deadline
                cascade = CascadeState()
            }
            if time.clock.kind == .manual { time.clock.manual = max(time.clock.manual, top.deadline) }
            if cascade.processed >= options.maxCascade {
                dropTimer(top.record)
                continue
            }
            time.firing = top.deadline
            let stateTimer = fire(top.record)
            fired += 1
            if !queue.isEmpty { drainQueue() }
            if let stateTimer { journalStateTimerFired(stateTimer) }
            if changes.any { settle() }
            time.firing = nil
        }
        cascade = CascadeState()
        return fired
    }

    private func dropTimer(_ index: Int32) {
        let record = time.store.records[Int(index)]
        let id = timerID(index)
        let text = record.isState ? nil : String(cString: record.action!)
        let failure = UniFlowError(.loop, "cascade limit of \(options.maxCascade) actions reached at one instant; timer dropped")
        releaseFiredTimer(index)
        // Gone here, so gone after a replay too (which would otherwise arm it again).
        try? journalTimer(record.isState ? ["timer": "dropped", "id": .string(id!)]
                                         : ["timer": "dropped", "serial": .int(Int64(record.serial))])
        guard reportingActive else { return }
        withTimerID(id) { idPointer in
            let details = ReportDetails(timer: idPointer, aboutTimer: true)
            // An API timer's report names its action, as `timer_fired` would have:
            // an anonymous one has nothing else to tell it by.
            if let text, (try? withTimerAction(text, id: idPointer) { (action) -> Bool in
                report(.dropped, action: action.header, failure: failure, details: details)
                return true
            }) == true {
                return
            }
            report(.dropped, action: nil, failure: failure, details: details)
        }
    }

    /// Takes a timer out of the store as it fires: its id and place forget it.
    private func releaseFiredTimer(_ index: Int32) {
        let record = time.store.records[Int(index)]
        if record.isState {
            let place = Place(feature: record.feature, instance: record.instance)
            let head = timerHead(place)
            if head == index {
                setTimerHead(place, record.next)
            } else {
                var previous = head
                while previous >= 0 && time.store.records[Int(previous)].next != index { previous = time.store.records[Int(previous)].next }
                if previous >= 0 { time.store.records.pointer(Int(previous)).pointee.next = record.next }
            }
        } else {
            if let id = record.id { time.apiIDs[String(cString: id)] = nil }
            free(record.action)
            free(record.id)
        }
        time.store.free(index)
    }

    /// Fires one timer: `timer_fired`, then its actions, processed like a submit
    /// from outside (the queue and the watches are the caller's). The timer is
    /// gone before its actions run: they may arm it again. Returns what a state
    /// timer's fired line needs once its actions have run.
    private func fire(_ index: Int32) -> FiredStateTimer? {
        let record = time.store.records[Int(index)]
        let id = timerID(index)
        if record.isState {
            let place = Place(feature: record.feature, instance: record.instance)
            let key = self.key(at: place).map { String(cString: $0) }
            releaseFiredTimer(index)
            fireStateTimer(record, id: id!, key: key)
            return FiredStateTimer(id: id!, place: place, key: key, state: record.state, after: record.after)
        } else {
            let text = String(cString: record.action!)
            let serial = record.serial
            releaseFiredTimer(index)
            fireAPITimer(text, id: id)
            try? journalTimer(["timer": "fired", "serial": .int(Int64(serial))])
            return nil
        }
    }

    /// A state timer's actions have run (the whole cascade). If its place is
    /// still in the timer's state without having armed it again, the journal
    /// says it fired, so that a replay does not arm it again; otherwise the
    /// mutation lines already say what a replay must arm. Written after the
    /// actions, so that a crash before it fires the timer again after replay
    /// (at least once, as API timers).
    private func journalStateTimerFired(_ fired: FiredStateTimer) {
        guard journal != nil, state(at: fired.place) == fired.state,
              key(at: fired.place).map({ String(cString: $0) }) == fired.key else { return }
        var index = timerHead(fired.place)
        while index >= 0 {
            if time.store.records[Int(index)].after == fired.after { return }
            index = time.store.records[Int(index)].next
        }
        try? journalTimer(["timer": "fired", "id": .string(fired.id)])
    }

    /// Runs `body` with a timer id as a C string (nil: anonymous).
    private func withTimerID<R>(_ id: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
        guard let id else { return body(nil) }
        return id.withCString { body($0) }
    }

    private func fireAPITimer(_ text: String, id: String?) {
        withTimerID(id) { idPointer in
            do throws(UniFlowError) {
                try withTimerAction(text, id: idPointer) { action in
                    if reportingActive { report(.timerFired, action: action.header, details: ReportDetails(timer: idPointer, aboutTimer: true)) }
                    _ = process(action)
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
            // Past 2^53 ms its readings would no longer be exact JSON integers.
            let limit = DefinitionParser.maxTimerMilliseconds
            guard ms <= limit && time.clock.manual <= limit - ms else {
                throw UniFlowError(.invalidArgument, "uf_clock_advance: the clock reads \(time.clock.manual) ms; moving it \(ms) ms would pass 2^53 ms")
            }
            let end = time.clock.manual + ms
            fireDueTimers(upTo: end)
            time.clock.manual = end
        }
    }

    // MARK: The timer thread

    /// Starts the library's timer thread for the first timer armed. A state timer
    /// armed when it cannot start is reported, by its id; the next timer armed
    /// tries again.
    @inline(never)
    private func startTimerThread(for index: Int32) {
        do throws(UniFlowError) {
            try startTimerThreadIfNeeded()
        } catch {
            guard reportingActive else { return }
            func rejected(_ id: UnsafePointer<CChar>?) {
                report(.timerRejected, action: nil, failure: error, details: ReportDetails(timer: id, aboutTimer: true))
            }
            if let id = timerID(index) { id.withCString(rejected) } else { rejected(nil) }
        }
    }

    /// Starts the timer thread if timers need it and it does not run yet: an
    /// API timer is armed only once something can fire it.
    func startTimerThreadIfNeeded() throws(UniFlowError) {
        guard options.timers == .thread, time.clock.kind == .monotonic, time.thread == nil else { return }
        let thread = TimerThread()
        time.thread = thread
        do throws(UniFlowError) {
            // Unowned: the dispatcher outlives the thread (free joins it first), and a
            // forked child, where the thread does not exist, must still be able to free it.
            try thread.start { [unowned self] in runTimerThread(thread) }
        } catch {
            time.thread = nil
            throw error
        }
    }

    /// The thread's loop: it holds the lock except while it sleeps, and fires as
    /// any caller processes (owner of the dispatcher, callbacks re-entrant).
    private func runTimerThread(_ thread: TimerThread) {
        _ = lock.take()
        let stopRequested = { thread.stopRequested.load(ordering: .relaxed) }
        while !thread.stopping && !stopRequested() {
            guard let next = time.store.peek()?.deadline else {
                thread.waitingUntil = nil
                sleep(thread, until: nil)
                continue
            }
            let now = time.clock.now()
            if next > now {
                thread.waitingUntil = next
                let at = time.clock.monotonicNanoseconds(at: next)
                sleep(thread, until: timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000)))
                continue
            }
            thread.waitingUntil = nil
            becomeOwner()
            fireDueTimers(upTo: now, stop: stopRequested)
            finishOuterCall()
            resignOwner()
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
