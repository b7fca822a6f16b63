import Glibc

/// One timer (72 bytes), in `TimerStore.records`: armed, suspended, parked or free.
struct TimerRecord {
    var deadline: UInt64 = 0
    /// The delay it was armed with.
    var ms: UInt64 = 0
    /// Arm order: ties at one deadline fire in it; an API timer's journal identity.
    var serial: UInt64 = 0
    /// Bumped when the record is freed: heap entries of an older generation are stale.
    var generation: UInt32 = 0
    var alive = false
    /// Disarmed by a batch that may still roll back (`TimerStore.suspend`): not
    /// live, but its heap entry must stay, so that `revive` finds it again.
    var suspended = false
    /// A state timer disarmed as its place left the state, kept for the place's
    /// return (`TimerStore.park`): not live, not free.
    var parked = false
    /// A heap entry of this generation exists. It may be older than the
    /// record's deadline and serial (`rearm`): `peek` files it again then.
    var filed = false
    var isState = false
    /// State timers: how it is armed again from a snapshot or journal.
    var policy: RestorePolicy = .fire
    var resetOnUpdate = false
    /// State timers: where, in which state, which `after[i]`.
    var feature: Int32 = -1
    var instance: Int32 = -1
    var state: Int32 = -1
    var after: Int32 = -1
    /// The next armed state timer of the same place; the next free record when free.
    var next: Int32 = -1
    /// API timers: the action's JSON text and the id (nil: anonymous), malloc'd.
    var action: UnsafeMutablePointer<CChar>?
    var id: UnsafeMutablePointer<CChar>?

    /// Whether it was armed from `spec` (what a parked record re-armed in place
    /// relies on, so that only its deadline and serial are written again).
    func keeps(_ spec: TimerSpec) -> Bool {
        ms == spec.ms && policy == spec.onRestore && resetOnUpdate == spec.resetOnUpdate
    }
}

/// A heap entry: when, in what order, which record (of which generation).
struct TimerHeapEntry {
    var deadline: UInt64
    var serial: UInt64
    var record: Int32
    var generation: UInt32

    @inline(__always)
    static func < (a: TimerHeapEntry, b: TimerHeapEntry) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.serial < b.serial)
    }
}

/// Every armed timer of a dispatcher: records in a slab with a free list, and a
/// binary min-heap by (deadline, arm order). Disarming marks a record free at
/// once; its heap entry goes stale (its generation no longer matches) and is
/// skipped or compacted away, so arming and disarming are O(log n) and never
/// search. A state timer whose place left its state is parked instead: its
/// record and heap entry stay, and the place's return re-arms it in O(1) (the
/// entry, now early, is moved when it comes up). Flat and trivially copyable,
/// like `HotStorage`: arming a state timer on the hot path allocates nothing
/// once the tables have grown.
struct TimerStore {
    var records = UnsafeVector<TimerRecord>()
    private var heap = UnsafeVector<TimerHeapEntry>()
    private var freeRecords: Int32 = -1
    private(set) var live = 0
    /// Records `suspend` left, which keep their heap entries.
    private var suspendedCount = 0
    /// The serial the next `arm` gives (a restore journals the serials it is about to give).
    private(set) var nextSerial: UInt64 = 1

    /// Arms a timer; returns its record. `record` is filled in but for the
    /// bookkeeping fields. `serial` keeps the arm order of a timer armed before
    /// (an entry timer moved by an actualization); nil: armed now, last.
    mutating func arm(_ record: TimerRecord, serial: UInt64? = nil) throws(UniFlowError) -> Int32 {
        let (index, slot) = try take()
        let generation = slot.pointee.generation
        slot.pointee = record
        slot.pointee.alive = true
        slot.pointee.generation = generation
        slot.pointee.serial = serial ?? takeSerial()
        fileInHeap(index)
        return index
    }

    /// Arms a state timer: `arm` for the hot path, the record written field by
    /// field where it lives (building one to copy cost a third of arming).
    @inline(__always)
    mutating func armState(deadline: UInt64, _ spec: TimerSpec, at place: Place, state: Int32, after: Int32,
                           next: Int32, serial: UInt64? = nil) throws(UniFlowError) -> Int32 {
        let (index, slot) = try take()
        // A free record is not alive or suspended and holds no text (`free`);
        // everything else is written here.
        assert(!slot.pointee.alive && !slot.pointee.suspended && !slot.pointee.parked && slot.pointee.action == nil
               && slot.pointee.id == nil, "a record taken to arm is not free")
        slot.pointee.deadline = deadline
        slot.pointee.ms = spec.ms
        slot.pointee.serial = serial ?? takeSerial()
        slot.pointee.alive = true
        slot.pointee.isState = true
        slot.pointee.policy = spec.onRestore
        slot.pointee.resetOnUpdate = spec.resetOnUpdate
        slot.pointee.feature = place.feature
        slot.pointee.instance = place.instance
        slot.pointee.state = state
        slot.pointee.after = after
        slot.pointee.next = next
        fileInHeap(index)
        return index
    }

    /// A free record for `arm`, room in the heap made first so that nothing fails after.
    @inline(__always)
    private mutating func take() throws(UniFlowError) -> (Int32, UnsafeMutablePointer<TimerRecord>) {
        try heap.reserve(1)
        let index: Int32
        if freeRecords >= 0 {
            index = freeRecords
            freeRecords = records[Int(index)].next
        } else {
            try records.append(TimerRecord())
            index = Int32(records.count - 1)
        }
        return (index, records.pointer(Int(index)))
    }

    @inline(__always)
    /// A serial given elsewhere (a writer's timer a follower keeps): the next
    /// ones given here come after it, so that serials stay unique in the log.
    mutating func noteSerial(_ serial: UInt64) {
        if serial >= nextSerial { nextSerial = serial &+ 1 }
    }

    private mutating func takeSerial() -> UInt64 {
        defer { nextSerial &+= 1 }
        return nextSerial
    }

    /// Files an armed record in the heap.
    @inline(__always)
    private mutating func fileInHeap(_ index: Int32) {
        let record = records.pointer(Int(index))
        push(TimerHeapEntry(deadline: record.pointee.deadline, serial: record.pointee.serial, record: index,
                            generation: record.pointee.generation))
        record.pointee.filed = true
        live &+= 1
        // Suspended records keep their entries through a compaction: counted, or a
        // batch that suspends many and arms more would compact on every arm.
        if heap.count > 1024 && heap.count > (live + suspendedCount) * 3 { compact() }
    }

    /// Disarms a timer, or forgets a parked one, and frees its record (its
    /// strings are the caller's to free first).
    mutating func free(_ index: Int32) {
        let record = records.pointer(Int(index))
        guard record.pointee.alive || record.pointee.parked else { return }
        if record.pointee.alive { live &-= 1 }
        // Only what `armState` does not write is reset: it arms the hot path's
        // timers, freed a moment before, field by field.
        record.pointee.alive = false
        record.pointee.parked = false
        record.pointee.filed = false
        record.pointee.action = nil
        record.pointee.id = nil
        // A timer disarmed before anything was armed after it (a state left
        // before its timer fired, the common case) is still the heap's last
        // leaf: taking it out keeps the heap free of stale entries, so that the
        // next arming sifts up through nothing and compaction never runs.
        if heap.count > 0 {
            let last = heap.pointer(heap.count - 1)
            if last.pointee.record == index && last.pointee.generation == record.pointee.generation {
                heap.truncate(to: heap.count - 1)
            }
        }
        record.pointee.generation &+= 1
        record.pointee.next = freeRecords
        freeRecords = index
    }

    /// Disarms a state timer whose place left its state, and keeps its record for
    /// the place: entering the state again re-arms it (`rearm`) without taking a
    /// record, writing it whole or filing it in the heap, which made arming and
    /// disarming a state's timer cost (bench/README.md, `uf_timed_toggle`). Its
    /// heap entry stays; `peek` drops it when it comes up.
    @inline(__always)
    mutating func park(_ index: Int32) {
        let record = records.pointer(Int(index))
        guard record.pointee.alive else { return }
        record.pointee.alive = false
        record.pointee.parked = true
        live &-= 1
    }

    /// Arms a parked record again, due at `deadline`, last in arm order. Its heap
    /// entry is kept when it is no later than the new deadline (the usual case:
    /// the same delay counted from a later time), and `peek` moves it when it
    /// comes up; otherwise it is filed afresh. Its delay and policies stay: it
    /// is armed again for the same timer of the same state.
    @inline(__always)
    mutating func rearm(_ index: Int32, deadline: UInt64) throws(UniFlowError) {
        let record = records.pointer(Int(index))
        assert(record.pointee.parked, "a record re-armed is not parked")
        if record.pointee.filed && deadline < record.pointee.deadline {
            // Its entry may be later than the new deadline: leave it stale.
            record.pointee.generation &+= 1
            record.pointee.filed = false
        }
        if !record.pointee.filed { try heap.reserve(1) }
        record.pointee.deadline = deadline
        record.pointee.serial = takeSerial()
        record.pointee.alive = true
        record.pointee.parked = false
        if record.pointee.filed {
            live &+= 1
        } else {
            fileInHeap(index)
        }
    }

    /// Marks a timer dead without freeing its record, so that a rolled-back
    /// batch can make it live again (`revive`).
    mutating func suspend(_ index: Int32) {
        guard records[Int(index)].alive else { return }
        records.pointer(Int(index)).pointee.alive = false
        records.pointer(Int(index)).pointee.suspended = true
        live -= 1
        suspendedCount += 1
    }

    mutating func revive(_ index: Int32) {
        guard !records[Int(index)].alive else { return }
        if records[Int(index)].suspended { suspendedCount -= 1 }
        records.pointer(Int(index)).pointee.alive = true
        records.pointer(Int(index)).pointee.suspended = false
        live += 1
    }

    /// Frees a record `suspend` left (once the batch holds).
    mutating func release(suspended index: Int32) {
        let record = records.pointer(Int(index))
        guard !record.pointee.alive else { return }
        if record.pointee.suspended { suspendedCount -= 1 }
        record.pointee = TimerRecord(generation: record.pointee.generation &+ 1, next: freeRecords)
        freeRecords = index
    }

    /// The soonest timer, stale entries dropped on the way. A suspended one
    /// (only while a batch applies, when nothing fires) is kept and may be
    /// returned: dropping its entry would lose it if the batch rolls back.
    mutating func peek() -> TimerHeapEntry? {
        while let top = heap.count > 0 ? heap[0] : nil {
            let record = records.pointer(Int(top.record))
            guard record.pointee.generation == top.generation else {
                popTop()
                continue
            }
            if record.pointee.alive || record.pointee.suspended {
                if record.pointee.deadline == top.deadline && record.pointee.serial == top.serial { return top }
                // Re-armed since it was filed (`rearm`): filed again where it is due now.
                popTop()
                push(TimerHeapEntry(deadline: record.pointee.deadline, serial: record.pointee.serial,
                                    record: top.record, generation: top.generation))
                continue
            }
            // Parked: its place may re-arm it, and file it again then.
            record.pointee.filed = false
            popTop()
        }
        return nil
    }

    /// Removes the entry `peek` returned.
    mutating func pop() { popTop() }

    /// Takes the entry `peek` returned out of the heap without disarming its
    /// timer: on a partitioned dispatcher, a due timer of a partition this node
    /// does not own waits, armed, until the node owns it (`fileAgain`).
    mutating func setAsideTop() {
        let top = heap[0]
        popTop()
        records.pointer(Int(top.record)).pointee.filed = false
    }

    /// Files again a timer `setAsideTop` took out, if it is still the same armed
    /// timer (not disarmed, fired or filed since). Returns whether it did.
    mutating func fileAgain(_ index: Int32, generation: UInt32) throws(UniFlowError) -> Bool {
        let record = records.pointer(Int(index))
        guard record.pointee.generation == generation, record.pointee.alive, !record.pointee.filed else { return false }
        try heap.reserve(1)
        push(TimerHeapEntry(deadline: record.pointee.deadline, serial: record.pointee.serial, record: index,
                            generation: generation))
        record.pointee.filed = true
        return true
    }

    /// Live records in deadline order (for listings and snapshots).
    func sortedLive() -> [Int32] {
        var entries: [TimerHeapEntry] = []
        for i in 0..<records.count where records[i].alive {
            entries.append(TimerHeapEntry(deadline: records[i].deadline, serial: records[i].serial, record: Int32(i), generation: 0))
        }
        entries.sort(by: <)
        return entries.map(\.record)
    }

    // MARK: Heap

    @inline(__always)
    private mutating func push(_ entry: TimerHeapEntry) {
        heap.appendReserved(entry)  // reserved by `take` or `rearm`, or the room `popTop` left
        var i = heap.count - 1
        while i > 0 {
            let parent = (i - 1) / 2
            if !(heap[i] < heap[parent]) { break }
            let swap = heap[i]
            heap[i] = heap[parent]
            heap[parent] = swap
            i = parent
        }
    }

    private mutating func popTop() {
        let last = heap[heap.count - 1]
        heap.truncate(to: heap.count - 1)
        guard heap.count > 0 else { return }
        heap[0] = last
        var i = 0
        while true {
            let left = 2 * i + 1, right = left + 1
            var smallest = i
            if left < heap.count && heap[left] < heap[smallest] { smallest = left }
            if right < heap.count && heap[right] < heap[smallest] { smallest = right }
            if smallest == i { break }
            let swap = heap[i]
            heap[i] = heap[smallest]
            heap[smallest] = swap
            i = smallest
        }
    }

    /// Rebuilds the heap from the live and suspended records (too many stale entries).
    private mutating func compact() {
        heap.truncate(to: 0)
        for i in 0..<records.count {
            let r = records.pointer(i)
            r.pointee.filed = r.pointee.alive || r.pointee.suspended
            guard r.pointee.filed else { continue }
            push(TimerHeapEntry(deadline: r.pointee.deadline, serial: r.pointee.serial, record: Int32(i),
                                generation: r.pointee.generation))
        }
    }

    mutating func deallocate() {
        for i in 0..<records.count {
            Glibc.free(records[i].action)
            Glibc.free(records[i].id)
        }
        records.deallocate()
        heap.deallocate()
        freeRecords = -1
        live = 0
    }
}
