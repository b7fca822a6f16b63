import CUniFlow
import Glibc

/// State timers (`docs/time.md`): declared with `after` in a state, armed when a
/// place enters the state and disarmed (or parked) when it leaves.
extension Dispatcher {
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
    func setTimerHead(_ place: Place, _ head: Int32) {
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
        case .initialization, .transition:
            // A place initialized has no timer armed (the last one's end freed them);
            // one that left a state with timers has them parked.
            if field >= 0 {
                enterStateTimers(new, at: place, leaving: field)
            } else {
                armEntered(new, at: place, parked: field <= -2 ? -2 &- field : -1)
            }
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

    /// Disarms a place's timers as it leaves its state, if it was in one, and
    /// arms those of the state it enters (`field`: the place's `timerField`).
    /// Called only for a place with timers armed (`stateChanged` calls
    /// `armEntered` for the others). Leaving (park, then return) makes
    /// no call but a last one, so it saves no register; the lookups of arming
    /// run in `armEntered`, its registers saved only when there is one to arm
    /// (uf_timed_toggle 482 -> 470 instructions).
    @inline(never)
    private func enterStateTimers(_ state: Int32, at place: Place, leaving field: Int32) {
        // A batch that may roll back suspends the timers instead (out of line:
        // its calls would make this function save registers).
        guard batch == nil else { return leaveStateTimersInBatch(state, at: place, head: field) }
        // A place that goes back and forth between a state with a timer and
        // one without (a toggle, a retry loop) parks and re-arms the same record.
        parkStateTimers(at: place, head: field)
        // Most often the state entered has none (a toggle's other half).
        guard timerCount(of: state, in: place.feature) > 0 else { return }
        armEntered(state, at: place, parked: field)
    }

    /// `enterStateTimers` for a place with timers armed, in a batch.
    @inline(never)
    private func leaveStateTimersInBatch(_ state: Int32, at place: Place, head: Int32) {
        disarmStateTimers(at: place, head: head)
        armEntered(state, at: place, parked: -1)
    }

    /// Arms the timers of a state just entered, their delays counted from now.
    /// The clock is read only here, to arm: a read of the precise clock costs
    /// more than half of a toggle (bench/README.md, `c_clock_read`).
    /// `parked`: the place's first parked timer (-1: none).
    @inline(never)
    private func armEntered(_ state: Int32, at place: Place, parked: Int32) {
        // A place entering a state has no timer armed: leaving its last state
        // disarmed them, and a new one never had any.
        assert(timerHead(place) < 0, "a place entered a state with timers still armed")
        // Its count only: where its specs start is looked up when they are read.
        let count = timerCount(of: state, in: place.feature)
        if count == 0 { return }
        if parked >= 0 {
            rearmParked(parked, count: count, of: state, at: place)
        } else {
            armStateTimersFromNow(timerSpecs(of: state, in: place.feature), of: state, at: place, before: -1)
        }
    }

    /// Arms a state's timers (`count` of them) from now at a place with timers
    /// parked (`parked`, the first): the parked one again, in place, when it is
    /// this state's only timer; new ones otherwise (the parked ones are freed).
    @inline(__always)
    private func rearmParked(_ parked: Int32, count: Int, of state: Int32, at place: Place) {
        let record = time.store.records.pointer(Int(parked))
        guard count == 1 && record.pointee.next < 0 && record.pointee.state == state else {
            setTimerHead(place, -1)
            armStateTimersFromNow(timerSpecs(of: state, in: place.feature), of: state, at: place, before: -1)
            return
        }
        // The record keeps the spec it was armed with (a place's feature keeps its
        // definition): its delay is read there, not from the spec again.
        assert(record.pointee.keeps(hot.timerSpecs[timerSpecs(of: state, in: place.feature).lowerBound]),
               "a parked timer's spec changed")
        let due = deadlines.after(record.pointee.ms)
        do throws(UniFlowError) {
            try time.store.rearm(parked, deadline: due)
        } catch {
            setTimerHead(place, -1)
            timerNotArmed(after: 0, of: state, at: place)
            return
        }
        setTimerField(place, parked)
        if batch != nil { batch!.undo.append(.timerArmed(parked, place: place)) }
        noteArmed(due, timer: parked)
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
            timerNotArmed(after: Int32(truncatingIfNeeded: s &- specs.lowerBound), of: state, at: place)
            return head
        }
        if batch != nil { batch!.undo.append(.timerArmed(index, place: place)) }
        noteArmed(due, timer: index)
        return index
    }

    /// A state timer that could not be armed (no memory for the tables): reported
    /// by its id.
    @inline(never)
    private func timerNotArmed(after: Int32, of state: Int32, at place: Place) {
        guard reportingActive else { return }
        stateTimerID(after: after, of: state, at: place).withCString { id in
            report(.timerRejected, action: nil, failure: Memory.outOfMemory("a timer"), details: ReportDetails(timer: id, aboutTimer: true))
        }
    }

    /// How many timers a state has.
    @inline(__always)
    func timerCount(of state: Int32, in feature: Int32) -> Int {
        let slot = hot.features.pointer(Int(feature))
        return Int(hot.states.pointer(Int(slot.pointee.stateBase) &+ Int(state)).pointee.timerCount)
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

    /// Parks the state timers of a place leaving their state (`head`, its first
    /// armed one), outside a batch: entering the state again re-arms them.
    @inline(__always)
    private func parkStateTimers(at place: Place, head: Int32) {
        noteDisarmed()
        var index = head
        while index >= 0 {
            time.store.park(index)
            index = time.store.records[Int(index)].next
        }
        // head >= 0: no overflow.
        setTimerField(place, -2 &- head)
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
        return stateTimerID(after: record.after, of: record.state, at: Place(feature: record.feature, instance: record.instance))
    }

    /// A state timer's id: `Feature.State.after[i]`, `Feature[key].State.after[i]`.
    func stateTimerID(after: Int32, of state: Int32, at place: Place) -> String {
        var name = featureName(place.feature)
        if let key = key(at: place) { name += "[\(String(cString: key))]" }
        return "\(name).\(stateName(state, feature: place.feature)).after[\(after)]"
    }
}
