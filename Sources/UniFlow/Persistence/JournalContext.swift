/// What persistence (`JournalWriter`, `JournalReplay`) needs from the
/// dispatcher, beyond the model's names and places (`ModelContext`): the
/// registered definitions' texts, the time and count a line records, and what
/// a replay checks a line against (names, an action, the state timers' ids). Nothing here reaches the journal writer back or calls the host.
protocol JournalContext: ModelContext {
    // MARK: Writing

    func stateName(_ state: Int32, feature: Int32) -> String
    /// A statechart instance's `history` and `status` (nothing for a flat feature).
    func statechartLineExtras(_ state: Int32, feature: Int32, into line: inout JSONObject)
    /// How many definitions are registered, and the JSON text of each, in
    /// registration order (what the fingerprint is made of).
    var definitionCount: Int { get }
    func definitionSource(_ index: Int) -> String
    /// The time a line records: the wall clock, or the manual reading, where
    /// delays count from.
    var journalTime: UInt64 { get }
    /// The seq of the last mutation applied.
    var currentSeq: UInt64 { get }

    // MARK: Replaying

    func featureIndex(named name: String) -> Int32?
    func stateIndex(named name: String, feature: Int32) -> Int32?
    /// Checks an action as `uf_submit_after` did when it armed it.
    func checkTimerAction(_ action: JSONValue) throws(UniFlowError)
    /// The ids of every state timer the places of a model could have armed.
    func stateTimerNames(in snapshot: ModelSnapshot) -> Set<String>
    /// `Feature.State.after[i]` of a live place.
    func stateTimerName(_ place: Place, after i: Int) -> String
    /// The instance's key (nil for a single feature).
    func key(at place: Place) -> UnsafePointer<CChar>?
    /// The dispatcher's clock (a replayed timer's deadline is in its time).
    var timerClock: DispatcherClock { get }
}
