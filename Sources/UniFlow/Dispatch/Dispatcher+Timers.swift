import CUniFlow
import Glibc

/// A state timer that fired: where, so that its fired line can be written once its actions ran.
struct FiredStateTimer {
    var id: String
    var place: Place
    var key: String?
    var state: Int32
    var after: Int32
}

/// A timer a restore or a replay arms, in the order the timers were first armed.
struct PlannedTimer {
    enum Kind {
        case state(Place, after: Int)
        /// The action's JSON text and the id (nil: anonymous).
        case api(action: String, id: String?)
    }
    var kind: Kind
    var deadline: UInt64
    var ms: UInt64
}

/// A state timer kept aside while a model is installed, by key rather than slot.
struct SavedStateTimer {
    var feature: Int32
    var key: String?
    var after: Int
    var deadline: UInt64
    var serial: UInt64
}

/// The deadlines of timers armed now: from the firing timer's deadline while
/// one fires, else from now (a long delay may count from the coarse clock,
/// `DispatcherClock.base(forDelay:)`).
struct TimerDeadlines {
    let clock: DispatcherClock
    let firing: UInt64?

    @inline(__always)
    func after(_ ms: UInt64) -> UInt64 { (firing ?? clock.base(forDelay: ms)) &+ ms }
}

/// A dispatcher's time: its clock, its armed timers, and who fires them.
struct TimeRegistry {
    var clock: DispatcherClock
    var store = TimerStore()
    /// API timers armed under an id.
    var apiIDs: [String: Int32] = [:]
    /// The deadline of the timer being fired: timers armed meanwhile count their
    /// delay from it, so that chains do not drift.
    var firing: UInt64?
    /// The library's timer thread, once a timer was armed (`"timers": "thread"`).
    var thread: TimerThread?

    init(_ kind: DispatcherClock.Kind) { clock = DispatcherClock(kind) }
}

/// Timers (`docs/time.md`): state timers declared with `after`, armed while their
/// state lasts; API timers armed by `uf_submit_after` and `uf_dispatch_after`.
extension Dispatcher {
    /// Where delays count from: the firing timer's deadline while one fires, else now.
    @inline(__always)
    var armBase: UInt64 { time.firing ?? time.clock.now() }

    /// Where delays armed now count from, as a value: a closure that read them
    /// through the dispatcher would retain it.
    @inline(__always)
    var deadlines: TimerDeadlines { TimerDeadlines(clock: time.clock, firing: time.firing) }

    // MARK: State timers

    /// A place's timer field (`FeatureSlot.timers`, `InstanceSlot.timers`): its
    /// first armed state timer when >= 0; -1: none; -2 - n: none armed, and its
    /// timers parked since it left their state, n the first (`TimerStore.park`).
    @inline(__always)
    func timerField(_ place: Place) -> Int32 {
        let feature = hot.features[Int(place.feature)]
        if feature.instances < 0 { return feature.timers }
        guard place.instance >= 0 else { return -1 }
        return hot.instanceTables[Int(feature.instances)].slots[Int(place.instance)].timers
    }

    /// The first armed state timer of a place (-1: none).
    @inline(__always)
    func timerHead(_ place: Place) -> Int32 { max(timerField(place), -1) }

    /// Sets a place's first armed timer (-1: none); timers parked there are freed.
    @inline(__always)
    private func setTimerHead(_ place: Place, _ head: Int32) {
        let parked = timerField(place)
        if parked <= -2 { freeTimers(from: -2 - parked) }
        setTimerField(place, head)
    }

    @inline(__always)
    private func setTimerField(_ place: Place, _ value: Int32) {
        let feature = hot.features.pointer(Int(place.feature))
        if feature.pointee.instances < 0 {
            feature.pointee.timers = value
        } else {
            hot.instanceTables.pointer(Int(feature.pointee.instances)).pointee.slots.pointer(Int(place.instance)).pointee.timers = value
        }
    }

    /// Arms, disarms or re-arms a place's state timers for a mutation: armed on
    /// entering a state (a transition into the same state included), disarmed on
    /// leaving it, re-armed by an actualization for those with `"reset": "update"`
    /// (the others keep their deadline, and one that fired stays fired).
    /// `field`: the place's `timerField`, which the hot path has already read.
    /// Inlined: the hot path then keeps its values in registers across it, and
    /// every action is cheaper (uf_short 632 -> 624 instructions).
    @inline(__always)
    func stateChanged(at place: Place, kind: MutationKind, into new: Int32, field: Int32) {
        switch kind {
        case .initialization:
            armEntered(new, at: place, parked: field <= -2 ? -2 - field : -1)
        case .transition:
            // A place that goes back and forth between a state with a timer and
            // one without (a toggle, a retry loop) parks and re-arms the same record.
            var parked = field <= -2 ? -2 - field : -1
            if field >= 0 { parked = leaveStateTimers(at: place, head: field) }
            armEntered(new, at: place, parked: parked)
        case .actualization:
            rearmUpdated(new, at: place)
        case .deinitialization:
            if field >= 0 {
                disarmStateTimers(at: place, head: field)
            } else if field <= -2 {
                setTimerHead(place, -1)
            }
        }
    }

    /// Re-arms the timers with `"reset": "update"` of a state actualized. Out of
    /// line: its dictionaries would make every transition's call save registers.
    @inline(never)
    private func rearmUpdated(_ state: Int32, at place: Place) {
        let specs = timerSpecs(of: state, in: place.feature)
        guard specs.contains(where: { hot.timerSpecs[$0].resetOnUpdate }) else { return }
        let deadlines = self.deadlines
        // The entry timers still armed keep their deadline and their place in arm order.
        var kept: [Int: (deadline: UInt64, serial: UInt64)] = [:]
        var index = timerHead(place)
        while index >= 0 {
            let record = time.store.records[Int(index)]
            if !record.resetOnUpdate { kept[Int(record.after)] = (record.deadline, record.serial) }
            index = record.next
        }
        disarmStateTimers(at: place)
        armStateTimers(at: place, state: state, keepingSerials: kept.mapValues(\.serial)) { i, timer in
            timer.resetOnUpdate ? deadlines.after(timer.ms) : kept[i]?.deadline
        }
    }

    /// Arms the timers of a state just entered, their delays counted from now.
    /// The clock is read only here, to arm: a read of the precise clock costs
    /// more than half of a toggle (bench/README.md, `c_clock_read`).
    /// `parked`: the place's first parked timer (-1: none).
    @inline(__always)
    private func armEntered(_ state: Int32, at place: Place, parked: Int32) {
        let specs = timerSpecs(of: state, in: place.feature)
        // A place entering a state has no timer armed: leaving its last state
        // disarmed them, and a new one never had any.
        assert(timerHead(place) < 0, "a place entered a state with timers still armed")
        if specs.isEmpty { return }
        if parked >= 0 {
            rearmParked(parked, specs, of: state, at: place)
        } else {
            armStateTimersFromNow(specs, of: state, at: place, before: -1)
        }
    }

    /// Arms a state's timers (`specs`) from now at a place with timers parked
    /// (`parked`, the first): the parked one again, in place, when it is this
    /// state's only timer; new ones otherwise (the parked ones are freed).
    @inline(never)
    private func rearmParked(_ parked: Int32, _ specs: Range<Int>, of state: Int32, at place: Place) {
        let record = time.store.records.pointer(Int(parked))
        guard specs.count == 1 && record.pointee.next < 0 && record.pointee.state == state else {
            setTimerHead(place, -1)
            armStateTimersFromNow(specs, of: state, at: place, before: -1)
            return
        }
        let spec = hot.timerSpecs[specs.lowerBound]
        let due = deadlines.after(spec.ms)
        do throws(UniFlowError) {
            try time.store.rearm(parked, deadline: due, spec)
        } catch {
            setTimerHead(place, -1)
            timerNotArmed()
            return
        }
        setTimerField(place, parked)
        if batch != nil { batch!.undo.append(.timerArmed(parked, place: place)) }
        noteArmed(due)
    }

    /// Arms every timer of a state at a place from now, each last in arm order,
    /// linked before `head` (the place's first armed timer): `armStateTimers`
    /// without its deadline closure and serials to keep, for the hot path (a
    /// third fewer instructions).
    /// `specs`: the state's, as `timerSpecs(of:in:)` gives them.
    func armStateTimersFromNow(_ specs: Range<Int>, of state: Int32, at place: Place, before head: Int32) {
        var head = head
        for s in specs {
            let due = deadlines.after(hot.timerSpecs[s].ms)
            head = armStateTimer(s, of: specs, deadline: due, serial: nil, state: state, at: place, before: head)
        }
        setTimerHead(place, head)
    }

    /// Arms the state's timers at a place; `deadline` gives each one's deadline
    /// (nil: leave that one unarmed). A timer armed again that must keep its
    /// place in arm order (an entry timer an actualization moves) keeps its
    /// serial (`keepingSerials`, by `after` index).
    func armStateTimers(at place: Place, state: Int32, keepingSerials serials: [Int: UInt64]? = nil,
                        deadline: (Int, TimerSpec) -> UInt64?) {
        let specs = timerSpecs(of: state, in: place.feature)
        var head = timerHead(place)
        for s in specs {
            let i = s &- specs.lowerBound
            guard let due = deadline(i, hot.timerSpecs[s]) else { continue }
            head = armStateTimer(s, of: specs, deadline: due, serial: serials?[i], state: state, at: place, before: head)
        }
        setTimerHead(place, head)
    }

    /// Arms the timer of spec `s` (one of a state's `specs`) at a place, linked
    /// before `head`, and returns the place's new first timer: `head` again
    /// when it could not be armed, which is reported. The body of both loops above.
    @inline(__always)
    private func armStateTimer(_ s: Int, of specs: Range<Int>, deadline due: UInt64, serial: UInt64?,
                               state: Int32, at place: Place, before head: Int32) -> Int32 {
        guard let index = try? time.store.armState(deadline: due, hot.timerSpecs[s], at: place, state: state,
                                                   after: Int32(truncatingIfNeeded: s &- specs.lowerBound),
                                                   next: head, serial: serial) else {
            timerNotArmed()
            return head
        }
        if batch != nil { batch!.undo.append(.timerArmed(index, place: place)) }
        noteArmed(due)
        return index
    }

    /// A state timer that could not be armed (no memory for the tables): reported.
    @inline(never)
    private func timerNotArmed() {
        guard reportingActive else { return }
        report(.timerRejected, action: nil, failure: Memory.outOfMemory("a timer"), details: ReportDetails(aboutTimer: true))
    }

    /// Where a state's timer specs are in `hot.timerSpecs`.
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

    /// Disarms every state timer of a place, and frees those parked there.
    @inline(__always)
    func disarmStateTimers(at place: Place) {
        let field = timerField(place)
        if field >= 0 {
            disarmStateTimers(at: place, head: field)
        } else if field <= -2 {
            setTimerHead(place, -1)
        }
    }

    private func disarmStateTimers(at place: Place, head: Int32) {
        noteDisarmed()
        if batch != nil {
            // Kept, linked, until the batch holds: a rollback makes them live again.
            var index = head
            while index >= 0 {
                time.store.suspend(index)
                index = time.store.records[Int(index)].next
            }
            batch!.undo.append(.timersDisarmed(place, head: head))
        } else {
            freeTimers(from: head)
        }
        setTimerField(place, -1)
    }

    /// Frees a list of state timers, armed or parked.
    private func freeTimers(from head: Int32) {
        // `next` is read before the record is freed: a freed record's `next`
        // links the free list.
        var index = head
        while index >= 0 {
            let next = time.store.records[Int(index)].next
            time.store.free(index)
            index = next
        }
    }

    /// Disarms the state timers of a place leaving their state (`head`, its first
    /// armed one) and returns the first of those it parked there, or -1: a batch
    /// that may roll back suspends them instead, and frees them once it holds.
    private func leaveStateTimers(at place: Place, head: Int32) -> Int32 {
        if batch != nil {
            disarmStateTimers(at: place, head: head)
            return -1
        }
        noteDisarmed()
        var index = head
        while index >= 0 {
            time.store.park(index)
            index = time.store.records[Int(index)].next
        }
        setTimerField(place, -2 - head)
        return head
    }

    /// Undoes `disarmStateTimers` of a rolled-back batch.
    func reviveStateTimers(at place: Place, head: Int32) {
        var index = head
        while index >= 0 {
            time.store.revive(index)
            index = time.store.records[Int(index)].next
        }
        setTimerHead(place, head)
    }

    /// Undoes the arming of a state timer (a rolled-back batch).
    func unarmStateTimer(_ index: Int32, at place: Place) {
        setTimerHead(place, time.store.records[Int(index)].next)
        time.store.free(index)
        noteDisarmed()
    }

    /// Frees the records a batch that holds had suspended.
    func releaseSuspendedTimers(_ undo: [BatchLog.Undo]) {
        for entry in undo {
            if case .timersDisarmed(_, let head) = entry {
                var list: [Int32] = []
                var index = head
                while index >= 0 {
                    list.append(index)
                    index = time.store.records[Int(index)].next
                }
                for index in list { time.store.release(suspended: index) }
            }
        }
    }

    /// Disarms every state timer (a model installed whole).
    func disarmAllStateTimers() {
        for f in 0..<Int32(hot.features.count) {
            if let table = instanceTable(of: f) {
                hot.instanceTables[Int(table)].forEach { slot, instance in
                    if instance.timers != -1 { disarmStateTimers(at: Place(feature: f, instance: slot)) }
                }
            } else if hot.features[Int(f)].timers != -1 {
                disarmStateTimers(at: Place(feature: f))
            }
        }
    }

    /// Calls `body` for every live place whose state has timers, in feature
    /// registration order and then instance creation order.
    func forEachTimedPlace(_ body: (Place, _ state: Int32, [StateTimer]) -> Void) {
        for f in 0..<Int32(hot.features.count) {
            func visit(_ place: Place) {
                let state = self.state(at: place)
                guard state >= 0, stateSlot(state, of: hot.features[Int(f)]).hasTimers else { return }
                body(place, state, stateDefinition(state, of: f).timers)
            }
            if let table = instanceTable(of: f) {
                hot.instanceTables[Int(table)].forEach { slot, _ in visit(Place(feature: f, instance: slot)) }
            } else {
                visit(Place(feature: f))
            }
        }
    }

    /// Every state timer armed afresh for its full delay (`uf_state_restore`).
    func armAllStateTimersAfresh() {
        forEachTimedPlace { place, state, _ in
            armStateTimersFromNow(timerSpecs(of: state, in: place.feature), of: state, at: place, before: timerHead(place))
        }
    }

    /// Arms a timer a restore or a replay planned. Each arms exactly one record,
    /// so the serials it takes can be told in advance (`installJournaled`).
    func arm(_ planned: PlannedTimer) {
        switch planned.kind {
        case .state(let place, let after):
            armStateTimers(at: place, state: state(at: place)) { i, _ in i == after ? planned.deadline : nil }
        case .api(let action, let id):
            try? armRestoredAPITimer(action: action, ms: planned.ms, id: id, deadline: planned.deadline)
        }
    }

    /// The state timers armed now, by feature, key and `after` index, so that a
    /// model installed again (a restore whose journal line failed) gets them back
    /// exactly: same deadline, same place in arm order.
    func savedStateTimers() -> [SavedStateTimer] {
        var saved: [SavedStateTimer] = []
        for index in time.store.sortedLive() where time.store.records[Int(index)].isState {
            let record = time.store.records[Int(index)]
            let place = Place(feature: record.feature, instance: record.instance)
            saved.append(SavedStateTimer(feature: record.feature, key: key(at: place).map { String(cString: $0) },
                                         after: Int(record.after), deadline: record.deadline, serial: record.serial))
        }
        return saved
    }

    func rearm(_ saved: [SavedStateTimer]) {
        for timer in saved {
            var place = Place(feature: timer.feature)
            if let key = timer.key, let table = instanceTable(of: timer.feature) {
                place.instance = key.withCString { hot.instanceTables[Int(table)].find($0) }
            }
            let state = self.state(at: place)
            guard state >= 0 else { continue }
            armStateTimers(at: place, state: state, keepingSerials: [timer.after: timer.serial]) { i, _ in
                i == timer.after ? timer.deadline : nil
            }
        }
    }

    /// A timer's id: the API id, or `Feature.State.after[i]` (`Feature[key]...`
    /// for an instance); nil for an anonymous API timer.
    func timerID(_ index: Int32) -> String? {
        let record = time.store.records[Int(index)]
        guard record.isState else { return record.id.map { String(cString: $0) } }
        let place = Place(feature: record.feature, instance: record.instance)
        var name = featureName(record.feature)
        if let key = key(at: place) { name += "[\(String(cString: key))]" }
        return "\(name).\(stateName(record.state, feature: record.feature)).after[\(record.after)]"
    }

    // MARK: API timers

    /// Whether a host-given id could be mistaken for a state timer's.
    /// (Compared byte by byte: `String.contains` of a string searches by Character
    /// and cost more than arming the timer.)
    static func isStateTimerID(_ id: String) -> Bool {
        let marker: StaticString = ".after["
        let count = marker.utf8CodeUnitCount
        return marker.withUTF8Buffer { (pattern) -> Bool in
            var id = id
            return id.withUTF8 { (bytes) -> Bool in
                guard bytes.count >= count else { return false }
                for start in 0...(bytes.count - count) where bytes[start] == pattern[0] {
                    var offset = 1
                    while offset < count && bytes[start + offset] == pattern[offset] { offset += 1 }
                    if offset == count { return true }
                }
                return false
            }
        }
    }

    /// Checks a timer id given to `uf_submit_after`/`uf_dispatch_after`.
    static func checkTimerID(_ id: String, _ function: StaticString) throws(UniFlowError) {
        // From JSON (a snapshot, a journal) it could hold what no C string can give.
        if id.utf8.contains(0) {
            throw UniFlowError(.invalidArgument, "\(function): a timer id contains \\u0000")
        }
        if id.utf8.isEmpty || id.utf8.count > 256 {
            throw UniFlowError(.invalidArgument, "\(function): a timer id is 1 to 256 bytes, got \(id.utf8.count)")
        }
        if isStateTimerID(id) {
            throw UniFlowError(.invalidArgument, "\(function): '\(id)' is shaped like a state timer's id (it contains '.after[')")
        }
    }

    /// How deep a timer's action may nest: a snapshot writes it at level 4
    /// (snapshot, timers, timer, action), and must stay within the 256 levels
    /// `uf_snapshot_restore` reads.
    static let maxTimerActionDepth = JSONParser.maxDepth - 3

    /// `uf_submit_after`: checks the action now, as `uf_submit` would up to its
    /// payload, then arms it (kept as its JSON text).
    func armAPITimer(json text: UnsafePointer<CChar>, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        // A payload_free run by uf_dispatcher_free must not arm what nobody would fire.
        try refuseWhileClosing("uf_submit_after")
        try JSONParser.withTree(text, levels: Dispatcher.maxTimerActionDepth) { (root) throws(UniFlowError) in
            _ = try resolve(try BorrowedAction.decode(JanssonValue(root)), hasVia: false)
        }
        try armAPITimer(action: String(cString: text), delay: delay, id: id, keep: keep)
    }

    /// `uf_dispatch_after`: checks the action now, then arms it as JSON text.
    func armAPITimer(action a: uf_action, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        try refuseWhileClosing("uf_dispatch_after")
        let action = try resolve(try DecodedAction(a), hasVia: false)
        var object = actionDescription(action.header)
        if let payload = action.payload { object["payload"] = .object(payload) }
        try armAPITimer(action: JSONValue.object(object).jsonText, delay: delay, id: id, keep: keep)
    }

    /// Arms an API timer for an action already checked, given as JSON text. With
    /// an id that is armed: replaces it, or with `keep` leaves it as it is.
    func armAPITimer(action text: String, delay: UInt64, id: String?, keep: Bool) throws(UniFlowError) {
        var replaced: Int32? = nil
        if let id, let armed = time.apiIDs[id] {
            if keep { return }
            replaced = armed
        }
        try startTimerThreadIfNeeded()
        let due = deadlines.after(delay)
        let actionText = try Memory.copy(text, for: "a timer's action")
        var idText: UnsafeMutablePointer<CChar>? = nil
        do throws(UniFlowError) {
            idText = try id.map { (id) throws(UniFlowError) in try Memory.copy(id, for: "a timer's id") }
            let index = try time.store.arm(TimerRecord(deadline: due, ms: delay, action: actionText, id: idText))
            if journal != nil {
                // One line arms the new timer and ends the one it replaces: a crash
                // cannot leave the journal with neither.
                var line: JSONObject = ["timer": "armed", "serial": .int(Int64(time.store.records[Int(index)].serial)),
                                        "id": id.map { .string($0) } ?? .null, "ms": .int(Int64(delay)),
                                        "due_at": .int(Int64(clamping: time.clock.wallClock(at: due))), "action": (try? JSONParser.parse(text)) ?? .null]
                if let replaced { line["replaces"] = .int(Int64(time.store.records[Int(replaced)].serial)) }
                do throws(UniFlowError) {
                    try journalTimer(line)
                } catch {
                    time.store.free(index)
                    throw error
                }
            }
            if let id, let replaced { cancelAPITimer(replaced, id: id) }
            if let id { time.apiIDs[id] = index }
            batch?.undo.append(.apiArmed(index, id: id))
            noteArmed(due)
        } catch {
            free(actionText)
            free(idText)
            throw error
        }
    }

    /// `uf_timer_cancel`.
    func cancelTimer(_ id: String) throws(UniFlowError) {
        if Dispatcher.isStateTimerID(id) {
            throw UniFlowError(.misuse, "uf_timer_cancel: '\(id)' is a state timer: it is disarmed when its state is left")
        }
        guard let index = time.apiIDs[id] else { throw UniFlowError(.notFound, "no armed timer with id '\(id)'") }
        if journal != nil {
            try journalTimer(["timer": "cancelled", "serial": .int(Int64(time.store.records[Int(index)].serial))])
        }
        cancelAPITimer(index, id: id)
    }

    private func cancelAPITimer(_ index: Int32, id: String) {
        time.apiIDs[id] = nil
        noteDisarmed()
        if batch != nil {
            time.store.suspend(index)
            batch!.undo.append(.apiCancelled(index, id: id))
            return
        }
        free(time.store.records[Int(index)].action)
        free(time.store.records[Int(index)].id)
        time.store.free(index)
    }

    /// `uf_timers_get`: soonest first.
    func timersJSON() -> JSONValue {
        let now = time.clock.now()
        var list: [JSONValue] = []
        for index in time.store.sortedLive() {
            let record = time.store.records[Int(index)]
            list.append(["id": timerID(index).map { .string($0) } ?? .null,
                         "due_in_ms": .int(Int64(clamping: record.deadline > now ? record.deadline - now : 0)),
                         "ms": .int(Int64(clamping: record.ms))])
        }
        return .array(list)
    }

    // MARK: Firing

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
    func noteArmed(_ deadline: UInt64) {
        guard time.clock.kind == .monotonic else { return }
        if options.timers == .thread {
            if let thread = time.thread {
                if let waiting = thread.waitingUntil, waiting <= deadline { return }
                thread.wake()
            } else {
                startTimerThread()
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

    /// Starts the library's timer thread (the first timer armed). A state timer
    /// armed when it cannot start is reported; the next timer armed tries again.
    private func startTimerThread() {
        do throws(UniFlowError) {
            try startTimerThreadIfNeeded()
        } catch {
            report(.timerRejected, action: nil, failure: error, details: ReportDetails(timer: nil, aboutTimer: true))
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

