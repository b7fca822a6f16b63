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
}
