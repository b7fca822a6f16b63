/// What the timer service (`TimerService`) needs from the dispatcher it
/// serves, and nothing more: the model's places (where each keeps the first of
/// its state timers, what state it is in, what it is called), the definitions'
/// timer specs, and where what timers do goes (a batch's undo log, the journal,
/// reports, the host's loop, the timer thread's body).
///
/// The service calls these while it changes itself, inside one access to the
/// dispatcher's `time`: no member may reach the service back, or two accesses
/// overlap (a runtime trap in debug builds).
protocol TimerContext: AnyObject {
    // MARK: Places

    /// A place's timer field (`FeatureSlot.timers`, `InstanceSlot.timers`): its
    /// first armed state timer when >= 0; -1: none; -2 - n: none armed, and its
    /// timers parked since it left their state, n the first (`TimerStore.park`).
    func timerField(_ place: Place) -> Int32
    func setTimerField(_ place: Place, _ value: Int32)
    /// The state at a place (-1: absent).
    func state(at place: Place) -> Int32
    /// The instance's key (nil for a single feature).
    func key(at place: Place) -> UnsafePointer<CChar>?
    /// The live instance of a keyed feature with that key (a place whose
    /// instance is -1 when there is none), or the single feature.
    func place(feature: Int32, key: String?) -> Place
    /// Every live place, in feature registration order, then instance creation order.
    func forEachPlace(_ body: (Place) -> Void)
    /// `Feature`, or `Feature[key]` for an instance: the start of its timers' ids.
    func placeName(_ place: Place) -> String
    func stateName(_ state: Int32, feature: Int32) -> String

    // MARK: Timer specs

    /// Whether some state of the feature has state timers. A statechart
    /// feature's never do (its timers are API timers), and its state numbers
    /// count interned instance values, which may run past its states: ask
    /// this before `timerCount` or `timerSpecs` for a place of any feature.
    func hasStateTimers(_ feature: Int32) -> Bool
    /// How many timers a state has.
    func timerCount(of state: Int32, in feature: Int32) -> Int
    /// Where a state's timer specs are (indices for `timerSpec`).
    func timerSpecs(of state: Int32, in feature: Int32) -> Range<Int>
    func timerSpec(_ index: Int) -> TimerSpec

    // MARK: Sinks

    /// A batch that may roll back is applying: what is disarmed is suspended,
    /// and every change is recorded (`recordUndo`).
    var batching: Bool { get }
    func recordUndo(_ entry: BatchLog.Undo)
    /// Timer lines are written (option `journal`).
    var journaling: Bool { get }
    /// Writes a timer line stamped `at` (wall-clock milliseconds, or the manual reading).
    func journalTimer(_ line: JSONObject, at time: UInt64) throws(UniFlowError)
    /// Reports a timer that could not be armed (`timer_rejected`); `id` is read
    /// only when someone reads reports (nil: anonymous).
    func reportRejected(_ failure: UniFlowError, timer id: () -> String?)
    /// The soonest deadline may have changed (`"timers": "host"`): the host's
    /// loop must learn of it.
    func deadlinesChanged()
    /// What the timer thread runs (it fires timers through the dispatcher).
    func timerThreadBody(_ thread: TimerThread) -> () -> Void
}
