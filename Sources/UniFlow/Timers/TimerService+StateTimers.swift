import CUniFlow
import Glibc

/// State timers (`docs/time.md`): declared with `after` in a state, armed when a
/// place enters the state and disarmed (or parked) when it leaves. A place
/// keeps its first armed timer in its timer field (`TimerContext.timerField`);
/// the others are linked from it by `TimerRecord.next`.
extension TimerService {
    /// The first armed state timer of a place (-1: none).
    @inline(__always)
    func timerHead(_ place: Place, _ context: some TimerContext) -> Int32 { max(context.timerField(place), -1) }

    /// Sets a place's first armed timer (-1: none); timers parked there are freed.
    @inline(__always)
    mutating func setTimerHead(_ place: Place, _ head: Int32, _ context: some TimerContext) {
        let parked = context.timerField(place)
        if parked <= -2 { freeTimers(from: -2 - parked) }
        context.setTimerField(place, head)
    }

    /// Arms, disarms or re-arms a place's state timers for a mutation: armed on
    /// entering a state (a transition into the same state included), disarmed on
    /// leaving it, re-armed by an actualization for those with `"reset": "update"`
    /// (the others keep their deadline, and one that fired stays fired).
    /// `field`: the place's `timerField`, which the hot path has already read.
    /// Inlined: the hot path then keeps its values in registers across it, and
    /// every action is cheaper (uf_short 632 -> 624 instructions).
    @inline(__always)
    mutating func stateChanged(at place: Place, kind: MutationKind, into new: Int32, field: Int32,
                               _ context: some TimerContext) {
        switch kind {
        case .initialization, .transition:
            // A place initialized has no timer armed (the last one's end freed them);
            // one that left a state with timers has them parked.
            if field >= 0 {
                enterStateTimers(new, at: place, leaving: field, context)
            } else {
                armEntered(new, at: place, parked: field <= -2 ? -2 &- field : -1, context)
            }
        case .actualization:
            rearmUpdated(new, at: place, context)
        case .deinitialization:
            if field >= 0 {
                disarmStateTimers(at: place, head: field, context)
            } else if field <= -2 {
                setTimerHead(place, -1, context)
            }
        }
    }

    /// Re-arms the timers with `"reset": "update"` of a state actualized. Out of
    /// line: its dictionaries would make every transition's call save registers.
    @inline(never)
    private mutating func rearmUpdated(_ state: Int32, at place: Place, _ context: some TimerContext) {
        let specs = context.timerSpecs(of: state, in: place.feature)
        guard specs.contains(where: { context.timerSpec($0).resetOnUpdate }) else { return }
        let deadlines = self.deadlines
        // The entry timers still armed keep their deadline and their place in arm order.
        var kept: [Int: (deadline: UInt64, serial: UInt64)] = [:]
        var index = timerHead(place, context)
        while index >= 0 {
            let record = store.records[Int(index)]
            if !record.resetOnUpdate { kept[Int(record.after)] = (record.deadline, record.serial) }
            index = record.next
        }
        disarmStateTimers(at: place, context)
        armStateTimers(at: place, state: state, keepingSerials: kept.mapValues(\.serial), context) { i, timer in
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
    private mutating func enterStateTimers(_ state: Int32, at place: Place, leaving field: Int32,
                                           _ context: some TimerContext) {
        // A batch that may roll back suspends the timers instead (out of line:
        // its calls would make this function save registers).
        guard !context.batching else { return leaveStateTimersInBatch(state, at: place, head: field, context) }
        // A place that goes back and forth between a state with a timer and
        // one without (a toggle, a retry loop) parks and re-arms the same record.
        parkStateTimers(at: place, head: field, context)
        // Most often the state entered has none (a toggle's other half).
        guard context.timerCount(of: state, in: place.feature) > 0 else { return }
        armEntered(state, at: place, parked: field, context)
    }

    /// `enterStateTimers` for a place with timers armed, in a batch.
    @inline(never)
    private mutating func leaveStateTimersInBatch(_ state: Int32, at place: Place, head: Int32,
                                                  _ context: some TimerContext) {
        disarmStateTimers(at: place, head: head, context)
        armEntered(state, at: place, parked: -1, context)
    }

    /// Arms the timers of a state just entered, their delays counted from now.
    /// The clock is read only here, to arm: a read of the precise clock costs
    /// more than half of a toggle (bench/README.md, `c_clock_read`).
    /// `parked`: the place's first parked timer (-1: none).
    @inline(never)
    private mutating func armEntered(_ state: Int32, at place: Place, parked: Int32, _ context: some TimerContext) {
        // A place entering a state has no timer armed: leaving its last state
        // disarmed them, and a new one never had any.
        assert(timerHead(place, context) < 0, "a place entered a state with timers still armed")
        // Its count only: where its specs start is looked up when they are read.
        let count = context.timerCount(of: state, in: place.feature)
        if count == 0 { return }
        if parked >= 0 {
            rearmParked(parked, count: count, of: state, at: place, context)
        } else {
            armStateTimersFromNow(context.timerSpecs(of: state, in: place.feature), of: state, at: place, before: -1, context)
        }
    }

    /// Arms a state's timers (`count` of them) from now at a place with timers
    /// parked (`parked`, the first): the parked one again, in place, when it is
    /// this state's only timer; new ones otherwise (the parked ones are freed).
    @inline(__always)
    private mutating func rearmParked(_ parked: Int32, count: Int, of state: Int32, at place: Place,
                                      _ context: some TimerContext) {
        let record = store.records.pointer(Int(parked))
        guard count == 1 && record.pointee.next < 0 && record.pointee.state == state else {
            setTimerHead(place, -1, context)
            armStateTimersFromNow(context.timerSpecs(of: state, in: place.feature), of: state, at: place, before: -1, context)
            return
        }
        // The record keeps the spec it was armed with (a place's feature keeps its
        // definition): its delay is read there, not from the spec again.
        assert(record.pointee.keeps(context.timerSpec(context.timerSpecs(of: state, in: place.feature).lowerBound)),
               "a parked timer's spec changed")
        let due = deadlines.after(record.pointee.ms)
        do throws(UniFlowError) {
            try store.rearm(parked, deadline: due)
        } catch {
            setTimerHead(place, -1, context)
            timerNotArmed(after: 0, of: state, at: place, context)
            return
        }
        context.setTimerField(place, parked)
        if context.batching { context.recordUndo(.timerArmed(parked, place: place)) }
        noteArmed(due, timer: parked, context)
    }

    /// Arms every timer of a state at a place from now, each last in arm order,
    /// linked before `head` (the place's first armed timer): `armStateTimers`
    /// without its deadline closure and serials to keep, for the hot path (a
    /// third fewer instructions).
    /// `specs`: the state's, as `TimerContext.timerSpecs(of:in:)` gives them.
    mutating func armStateTimersFromNow(_ specs: Range<Int>, of state: Int32, at place: Place, before head: Int32,
                                        _ context: some TimerContext) {
        var head = head
        for s in specs {
            let due = deadlines.after(context.timerSpec(s).ms)
            head = armStateTimer(s, of: specs, deadline: due, serial: nil, state: state, at: place, before: head, context)
        }
        setTimerHead(place, head, context)
    }

    /// Arms the state's timers at a place; `deadline` gives each one's deadline
    /// (nil: leave that one unarmed). A timer armed again that must keep its
    /// place in arm order (an entry timer an actualization moves) keeps its
    /// serial (`keepingSerials`, by `after` index).
    mutating func armStateTimers(at place: Place, state: Int32, keepingSerials serials: [Int: UInt64]? = nil,
                                 _ context: some TimerContext, deadline: (Int, TimerSpec) -> UInt64?) {
        let specs = context.timerSpecs(of: state, in: place.feature)
        var head = timerHead(place, context)
        for s in specs {
            let i = s &- specs.lowerBound
            guard let due = deadline(i, context.timerSpec(s)) else { continue }
            head = armStateTimer(s, of: specs, deadline: due, serial: serials?[i], state: state, at: place, before: head, context)
        }
        setTimerHead(place, head, context)
    }

    /// Arms the timer of spec `s` (one of a state's `specs`) at a place, linked
    /// before `head`, and returns the place's new first timer: `head` again
    /// when it could not be armed, which is reported. The body of both loops above.
    @inline(__always)
    private mutating func armStateTimer(_ s: Int, of specs: Range<Int>, deadline due: UInt64, serial: UInt64?,
                                        state: Int32, at place: Place, before head: Int32,
                                        _ context: some TimerContext) -> Int32 {
        guard let index = try? store.armState(deadline: due, context.timerSpec(s), at: place, state: state,
                                              after: Int32(truncatingIfNeeded: s &- specs.lowerBound),
                                              next: head, serial: serial) else {
            timerNotArmed(after: Int32(truncatingIfNeeded: s &- specs.lowerBound), of: state, at: place, context)
            return head
        }
        if context.batching { context.recordUndo(.timerArmed(index, place: place)) }
        noteArmed(due, timer: index, context)
        return index
    }

    /// A state timer that could not be armed (no memory for the tables): reported
    /// by its id.
    @inline(never)
    private func timerNotArmed(after: Int32, of state: Int32, at place: Place, _ context: some TimerContext) {
        context.reportRejected(Memory.outOfMemory("a timer")) { stateTimerID(after: after, of: state, at: place, context) }
    }

    /// Disarms every state timer of a place, and frees those parked there.
    @inline(__always)
    mutating func disarmStateTimers(at place: Place, _ context: some TimerContext) {
        let field = context.timerField(place)
        if field >= 0 {
            disarmStateTimers(at: place, head: field, context)
        } else if field <= -2 {
            setTimerHead(place, -1, context)
        }
    }

    private mutating func disarmStateTimers(at place: Place, head: Int32, _ context: some TimerContext) {
        noteDisarmed(context)
        if context.batching {
            // Kept, linked, until the batch holds: a rollback makes them live again.
            var index = head
            while index >= 0 {
                store.suspend(index)
                index = store.records[Int(index)].next
            }
            context.recordUndo(.timersDisarmed(place, head: head))
        } else {
            freeTimers(from: head)
        }
        context.setTimerField(place, -1)
    }

    /// Frees a list of state timers, armed or parked.
    private mutating func freeTimers(from head: Int32) {
        // `next` is read before the record is freed: a freed record's `next`
        // links the free list.
        var index = head
        while index >= 0 {
            let next = store.records[Int(index)].next
            store.free(index)
            index = next
        }
    }

    /// Parks the state timers of a place leaving their state (`head`, its first
    /// armed one), outside a batch: entering the state again re-arms them.
    @inline(__always)
    private mutating func parkStateTimers(at place: Place, head: Int32, _ context: some TimerContext) {
        noteDisarmed(context)
        var index = head
        while index >= 0 {
            store.park(index)
            index = store.records[Int(index)].next
        }
        // head >= 0: no overflow.
        context.setTimerField(place, -2 &- head)
    }

    // MARK: Batches

    /// Undoes `disarmStateTimers` of a rolled-back batch.
    mutating func reviveStateTimers(at place: Place, head: Int32, _ context: some TimerContext) {
        var index = head
        while index >= 0 {
            store.revive(index)
            index = store.records[Int(index)].next
        }
        setTimerHead(place, head, context)
    }

    /// Undoes the arming of a state timer (a rolled-back batch).
    mutating func unarmStateTimer(_ index: Int32, at place: Place, _ context: some TimerContext) {
        setTimerHead(place, store.records[Int(index)].next, context)
        store.free(index)
        noteDisarmed(context)
    }

    /// Frees the records a batch that holds had suspended.
    mutating func releaseSuspendedTimers(_ heads: [Int32]) {
        for head in heads {
            var list: [Int32] = []
            var index = head
            while index >= 0 {
                list.append(index)
                index = store.records[Int(index)].next
            }
            for index in list { store.release(suspended: index) }
        }
    }

    // MARK: Whole models

    /// Disarms every state timer (a model installed whole).
    mutating func disarmAllStateTimers(_ context: some TimerContext) {
        context.forEachPlace { place in
            if context.timerField(place) != -1 { disarmStateTimers(at: place, context) }
        }
    }

    /// Every state timer armed afresh for its full delay (`uf_state_restore`),
    /// in feature registration order and then instance creation order.
    mutating func armAllStateTimersAfresh(_ context: some TimerContext) {
        context.forEachPlace { place in
            guard context.hasStateTimers(place.feature) else { return }
            let state = context.state(at: place)
            guard state >= 0, context.timerCount(of: state, in: place.feature) > 0 else { return }
            armStateTimersFromNow(context.timerSpecs(of: state, in: place.feature), of: state, at: place,
                                  before: timerHead(place, context), context)
        }
    }
}
