import Testing
@testable import UniFlow

/// The timer service on its own, without a dispatcher: a small context stands
/// for the model (one single feature `F` whose state `B` has one timer of
/// 1,000 ms, `A` none) and records what the service asks of the rest.
@Suite struct TimerServiceTests {
    final class Context: TimerContext {
        var field: Int32 = -1
        var current: Int32 = -1
        var batching = false
        var undo: [BatchLog.Undo] = []
        var deadlineChanges = 0
        var journaling = false
        var lines: [JSONObject] = []

        func timerField(_ place: Place) -> Int32 { field }
        func setTimerField(_ place: Place, _ value: Int32) { field = value }
        func state(at place: Place) -> Int32 { current }
        func key(at place: Place) -> UnsafePointer<CChar>? { nil }
        func place(feature: Int32, key: String?) -> Place { Place(feature: feature) }
        func forEachPlace(_ body: (Place) -> Void) { body(Place(feature: 0)) }
        func placeName(_ place: Place) -> String { "F" }
        func stateName(_ state: Int32, feature: Int32) -> String { state == 1 ? "B" : "A" }
        func hasStateTimers(_ feature: Int32) -> Bool { true }
        func timerCount(of state: Int32, in feature: Int32) -> Int { state == 1 ? 1 : 0 }
        func timerSpecs(of state: Int32, in feature: Int32) -> Range<Int> { state == 1 ? 0..<1 : 0..<0 }
        func timerSpec(_ index: Int) -> TimerSpec { TimerSpec(ms: 1000, resetOnUpdate: false, onRestore: .fire) }
        func recordUndo(_ entry: BatchLog.Undo) { undo.append(entry) }
        func journalTimer(_ line: JSONObject, at time: UInt64) throws(UniFlowError) { lines.append(line) }
        func reportRejected(_ failure: UniFlowError, timer id: () -> String?) {}
        func deadlinesChanged() { deadlineChanges += 1 }
        func timerThreadBody(_ thread: TimerThread) -> () -> Void { {} }
    }

    let place = Place(feature: 0)

    /// Moves the context's place into `state`, as the pipeline would.
    func move(_ service: inout TimerService, _ context: Context, _ kind: MutationKind, into state: Int32) {
        let field = context.timerField(place)
        context.current = state
        service.stateChanged(at: place, kind: kind, into: state, field: field, context)
    }

    @Test func enteringAStateArmsItsTimerAndLeavingParksIt() {
        var service = TimerService(clock: .manual, mode: .host)
        defer { service.deallocate() }
        let context = Context()
        move(&service, context, .initialization, into: 1)
        #expect(context.field >= 0)
        #expect(service.listJSON(context).jsonText == #"[{"id":"F.B.after[0]","due_in_ms":1000,"ms":1000}]"#)
        let record = context.field
        move(&service, context, .transition, into: 0)
        #expect(context.field == -2 - record)
        #expect(service.listJSON(context).jsonText == "[]")
        #expect(context.deadlineChanges == 1)
        // Back in B: the parked record is armed again, from now.
        service.clock.manual = 300
        move(&service, context, .transition, into: 1)
        #expect(context.field == record)
        #expect(service.listJSON(context).jsonText == #"[{"id":"F.B.after[0]","due_in_ms":1000,"ms":1000}]"#)
    }

    @Test func aDueTimerIsTakenOutBeforeItFires() {
        var service = TimerService(clock: .manual, mode: .host)
        defer { service.deallocate() }
        let context = Context()
        move(&service, context, .initialization, into: 1)
        #expect(service.nextDue(upTo: 999) == nil)
        guard let due = service.nextDue(upTo: 1000) else {
            Issue.record("nothing due at 1000")
            return
        }
        #expect(due.deadline == 1000)
        service.reach(due.deadline)
        #expect(service.clock.manual == 1000)
        guard case .state(_, let id, let at, let key) = service.take(due.record, context) else {
            Issue.record("not a state timer")
            return
        }
        #expect(id == "F.B.after[0]")
        #expect(at == place && key == nil)
        #expect(context.field == -1)
        #expect(!service.hasArmed(after: 0, at: place, context))
        #expect(service.nextDue(upTo: .max) == nil)
    }

    @Test func aBatchSuspendsWhatItDisarmsAndRecordsIt() {
        var service = TimerService(clock: .manual, mode: .host)
        defer { service.deallocate() }
        let context = Context()
        move(&service, context, .initialization, into: 1)
        let head = context.field
        context.batching = true
        move(&service, context, .transition, into: 0)
        #expect(context.field == -1)
        guard case .timersDisarmed(_, let disarmed)? = context.undo.last else {
            Issue.record("no undo entry")
            return
        }
        #expect(disarmed == head)
        // The rollback: the timer is live again, at the same place.
        context.current = 1
        service.reviveStateTimers(at: place, head: disarmed, context)
        #expect(context.field == head)
        #expect(service.listJSON(context).jsonText == #"[{"id":"F.B.after[0]","due_in_ms":1000,"ms":1000}]"#)
    }

    @Test func anAPITimerIsJournaledAndCancelledByID() throws {
        var service = TimerService(clock: .manual, mode: .host)
        defer { service.deallocate() }
        let context = Context()
        context.journaling = true
        try service.armAPITimer(action: #"{"kind":"transition","feature":"F","from":"A","into":"B"}"#, delay: 50,
                                id: "t", keep: false, context)
        #expect(service.apiIDs["t"] != nil)
        #expect(context.lines.last?["timer"] == "armed")
        #expect(service.listJSON(context).jsonText == #"[{"id":"t","due_in_ms":50,"ms":50}]"#)
        #expect(throws: UniFlowError.self) { try service.cancelTimer("F.B.after[0]", context) }
        try service.cancelTimer("t", context)
        #expect(context.lines.last?["timer"] == "cancelled")
        #expect(service.apiIDs.isEmpty)
        #expect(service.listJSON(context).jsonText == "[]")
    }
}
