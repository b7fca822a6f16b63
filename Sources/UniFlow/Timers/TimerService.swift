import CUniFlow
import Glibc

/// A dispatcher's timers (`docs/time.md`): state timers declared with `after`,
/// armed while their state lasts, and API timers armed by `uf_submit_after` and
/// `uf_dispatch_after`. It owns the clock, the armed timers, the API timers'
/// ids, the timer thread's handle and the deadline of the timer firing, and
/// does everything that needs only those: arming, disarming, parking and
/// reviving, listing, choosing what is due, and the saved form of snapshots and
/// restores. What it needs of the model and of the rest of the dispatcher
/// comes through a `TimerContext`.
///
/// Firing is not here: a timer's actions run through the dispatcher's pipeline
/// as an outer call (`Dispatcher.fireDueTimers`), which asks the service what
/// is due (`nextDue`) and takes each timer out of it (`takeFiring`) first.
///
/// Stored inline in the dispatcher (`Dispatcher.time`) and changed in place:
/// state timers are armed and disarmed on the hot path, which must not copy
/// it, allocate or look anything up by name.
struct TimerService {
    var clock: DispatcherClock
    var store = TimerStore()
    /// API timers armed under an id.
    var apiIDs: [String: Int32] = [:]
    /// The deadline of the timer being fired: timers armed meanwhile count their
    /// delay from it, so that chains do not drift.
    var firing: UInt64?
    /// Due timers of partitions this node does not own (a partitioned
    /// dispatcher): armed, out of the heap, until it owns them.
    var awaitingOwner: [(index: Int32, generation: UInt32)] = []
    /// The library's timer thread, once a timer was armed (`"timers": "thread"`).
    var thread: TimerThread?
    /// Who fires timers: the library's thread or the host's loop.
    let mode: DispatcherOptions.Timers

    init(clock kind: DispatcherClock.Kind, mode: DispatcherOptions.Timers) {
        clock = DispatcherClock(kind)
        self.mode = mode
    }

    /// Frees every timer (the dispatcher's end).
    mutating func deallocate() { store.deallocate() }

    // MARK: Deadlines

    /// Where delays count from: the firing timer's deadline while one fires, else now.
    @inline(__always)
    var base: UInt64 { firing ?? clock.now() }

    /// Where delays armed now count from, as a value: a closure that read them
    /// through the service would hold an access to it.
    @inline(__always)
    var deadlines: TimerDeadlines { TimerDeadlines(clock: clock, firing: firing) }

    /// The time a journal line records: the wall clock (or the manual reading)
    /// where delays count from.
    var journalTime: UInt64 { clock.wallClock(at: base) }

    // MARK: Who is told of deadlines

    /// A timer was disarmed: the host's loop may be waiting for its deadline,
    /// and must not wake for it (nor stay readable for a due one).
    @inline(__always)
    func noteDisarmed(_ context: some TimerContext) {
        if mode == .host { context.deadlinesChanged() }
    }

    /// Someone must know of a new deadline: the timer thread (started on the
    /// first timer), or the host's loop.
    @inline(__always)
    mutating func noteArmed(_ deadline: UInt64, timer index: Int32, _ context: some TimerContext) {
        guard clock.kind == .monotonic else { return }
        if mode == .thread {
            if let thread {
                if let waiting = thread.waitingUntil, waiting <= deadline { return }
                thread.wake()
            } else {
                startThread(for: index, context)
            }
        } else {
            context.deadlinesChanged()
        }
    }

    // MARK: The timer thread

    /// Starts the library's timer thread for the first timer armed. A state timer
    /// armed when it cannot start is reported, by its id; the next timer armed
    /// tries again.
    @inline(never)
    private mutating func startThread(for index: Int32, _ context: some TimerContext) {
        do throws(UniFlowError) {
            try startThreadIfNeeded(context)
        } catch {
            context.reportRejected(error) { timerID(index, context) }
        }
    }

    /// Starts the timer thread if timers need it and it does not run yet: an
    /// API timer is armed only once something can fire it.
    mutating func startThreadIfNeeded(_ context: some TimerContext) throws(UniFlowError) {
        guard mode == .thread, clock.kind == .monotonic, thread == nil else { return }
        let made = TimerThread()
        thread = made
        do throws(UniFlowError) {
            try made.start(context.timerThreadBody(made))
        } catch {
            thread = nil
            throw error
        }
    }

    /// What the timer thread does next, at `now` (holding the lock).
    enum ThreadStep {
        /// Fire what is due by then.
        case fire(upTo: UInt64)
        /// Sleep until then (CLOCK_MONOTONIC; nil: until woken).
        case sleep(until: timespec?)
    }

    /// What the timer thread does next: fire what is due, or sleep until the
    /// soonest deadline, which it notes so that a later one armed meanwhile
    /// does not wake it.
    mutating func nextThreadStep(_ thread: TimerThread) -> ThreadStep {
        guard let next = store.peek()?.deadline else {
            thread.waitingUntil = nil
            return .sleep(until: nil)
        }
        let now = clock.now()
        if next > now {
            thread.waitingUntil = next
            let at = clock.monotonicNanoseconds(at: next)
            return .sleep(until: timespec(tv_sec: Int(at / 1_000_000_000), tv_nsec: Int(at % 1_000_000_000)))
        }
        thread.waitingUntil = nil
        return .fire(upTo: now)
    }

    /// Forgets the thread without joining it (a forked child, where it does not exist).
    mutating func abandonThread() {
        thread?.abandon()
        thread = nil
    }

    // MARK: What is due

    /// The soonest timer if it is due at or before `now`.
    mutating func nextDue(upTo now: UInt64) -> TimerHeapEntry? {
        guard let top = store.peek(), top.deadline <= now else { return nil }
        return top
    }

    /// A timer about to fire at `deadline`: the manual clock reads its deadline.
    mutating func reach(_ deadline: UInt64) {
        if clock.kind == .manual { clock.manual = max(clock.manual, deadline) }
    }

    /// The end of `uf_clock_advance` by `ms`: where the manual clock is to stop.
    func manualEnd(advancingBy ms: UInt64) throws(UniFlowError) -> UInt64 {
        // Past 2^53 ms its readings would no longer be exact JSON integers.
        let limit = DefinitionParser.maxTimerMilliseconds
        guard ms <= limit && clock.manual <= limit - ms else {
            throw UniFlowError(.invalidArgument, "uf_clock_advance: the clock reads \(clock.manual) ms; moving it \(ms) ms would pass 2^53 ms")
        }
        return clock.manual + ms
    }

    /// A timer taken out of the service as it fires (or is dropped): what firing
    /// it, and journaling that it fired, needs.
    enum Taken {
        case state(TimerRecord, id: String, place: Place, key: String?)
        /// The action's JSON text, the id (nil: anonymous), the journal's serial.
        case api(action: String, id: String?, serial: UInt64)
    }

    /// Takes a timer out as it fires or is dropped: its id and place forget it,
    /// before its actions run (they may arm it again).
    mutating func take(_ index: Int32, _ context: some TimerContext) -> Taken {
        let record = store.records[Int(index)]
        let id = timerID(index, context)
        let taken: Taken
        if record.isState {
            let place = Place(feature: record.feature, instance: record.instance)
            taken = .state(record, id: id!, place: place, key: context.key(at: place).map { String(cString: $0) })
        } else {
            taken = .api(action: String(cString: record.action!), id: id, serial: record.serial)
        }
        release(index, context)
        return taken
    }

    /// Frees a timer that fires: unlinked from its place, or its id forgotten.
    private mutating func release(_ index: Int32, _ context: some TimerContext) {
        let record = store.records[Int(index)]
        if record.isState {
            let place = Place(feature: record.feature, instance: record.instance)
            let head = timerHead(place, context)
            if head == index {
                setTimerHead(place, record.next, context)
            } else {
                var previous = head
                while previous >= 0 && store.records[Int(previous)].next != index { previous = store.records[Int(previous)].next }
                if previous >= 0 { store.records.pointer(Int(previous)).pointee.next = record.next }
            }
        } else {
            if let id = record.id { apiIDs[String(cString: id)] = nil }
            free(record.action)
            free(record.id)
        }
        store.free(index)
    }

    /// Whether the place has its state's timer `after` armed (again, since one fired).
    func hasArmed(after: Int32, at place: Place, _ context: some TimerContext) -> Bool {
        var index = timerHead(place, context)
        while index >= 0 {
            if store.records[Int(index)].after == after { return true }
            index = store.records[Int(index)].next
        }
        return false
    }

    // MARK: Ids and listing

    /// A timer's id: the API id, or `Feature.State.after[i]` (`Feature[key]...`
    /// for an instance); nil for an anonymous API timer.
    func timerID(_ index: Int32, _ context: some TimerContext) -> String? {
        let record = store.records[Int(index)]
        guard record.isState else { return record.id.map { String(cString: $0) } }
        return stateTimerID(after: record.after, of: record.state,
                            at: Place(feature: record.feature, instance: record.instance), context)
    }

    /// A state timer's id: `Feature.State.after[i]`, `Feature[key].State.after[i]`.
    func stateTimerID(after: Int32, of state: Int32, at place: Place, _ context: some TimerContext) -> String {
        TimerService.stateTimerID(place: context.placeName(place), state: context.stateName(state, feature: place.feature),
                                  after: Int(after))
    }

    /// The id of a place's timer `after[i]` in the state the place is in.
    func stateTimerID(_ place: Place, after i: Int, _ context: some TimerContext) -> String {
        stateTimerID(after: Int32(i), of: context.state(at: place), at: place, context)
    }

    /// A state timer's id from its parts: `Feature` or `Feature[key]`, the state's name, the index.
    static func stateTimerID(place: String, state: String, after: Int) -> String {
        "\(place).\(state).after[\(after)]"
    }

    /// `uf_timers_get`: soonest first.
    /// `partition` (a partitioned dispatcher) names each timer's partition (`"p"`).
    func listJSON(_ context: some TimerContext, partition: ((Int32) -> Int)? = nil) -> JSONValue {
        let now = clock.now()
        var list: [JSONValue] = []
        for index in store.sortedLive() {
            let record = store.records[Int(index)]
            var entry: JSONObject = ["id": timerID(index, context).map { .string($0) } ?? .null,
                                     "due_in_ms": .int(Int64(clamping: record.deadline > now ? record.deadline - now : 0)),
                                     "ms": .int(Int64(clamping: record.ms))]
            if let partition { entry["p"] = .int(Int64(partition(index))) }
            list.append(.object(entry))
        }
        return .array(list)
    }
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
