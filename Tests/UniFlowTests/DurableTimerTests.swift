import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Three timers of one state, one per `on_restore` policy; each records its name
/// in the payload when it fires (an actualization: the state is not left).
private let policies = #"""
{"feature": "P",
 "states": {"On": {"fields": {"last": {"type": "string", "default": "none"}},
   "after": [{"ms": 100, "on_restore": "fire", "submit": [{"kind": "actualize", "feature": "P", "in": "On", "payload": {"last": "fire"}}]},
             {"ms": 100, "on_restore": "resume", "submit": [{"kind": "actualize", "feature": "P", "in": "On", "payload": {"last": "resume"}}]},
             {"ms": 100, "on_restore": "restart", "submit": [{"kind": "actualize", "feature": "P", "in": "On", "payload": {"last": "restart"}}]}]}}}
"""#

private func milliseconds(_ clock: clockid_t) -> UInt64 {
    var now = timespec()
    clock_gettime(clock, &now)
    return UInt64(now.tv_sec) * 1000 + UInt64(now.tv_nsec) / 1_000_000
}

/// Snapshots with timers: `uf_snapshot_get`, `uf_snapshot_restore`, and
/// `uf_state_restore` (docs/time.md, "Durable timers").
@Suite struct SnapshotTimerTests {
    @Test func aSnapshotHoldsTheModelAndEveryArmedTimerSoonestFirst() {
        let h = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.advance(60) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "save") == UF_OK)
        #expect(h.after(10, TimeSeeds.bump(2)) == UF_OK)
        #expect(h.snapshot == #"{"clock":"manual","model":{"Download":{"state":"Running","payload":{"progress":0}},"Counter":{"state":"Counting","payload":{"n":0}}},"timers":[{"id":null,"kind":"api","due_at":70,"remaining_ms":10,"ms":10,"on_restore":"fire","action":{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":2}}},{"id":"Download.Running.after[0]","kind":"state","due_at":100,"remaining_ms":40,"ms":100,"on_restore":"fire"},{"id":"save","kind":"api","due_at":160,"remaining_ms":100,"ms":100,"on_restore":"fire","action":{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":1}}},{"id":"Download.Running.after[1]","kind":"state","due_at":250,"remaining_ms":190,"ms":250,"on_restore":"fire"}]}"#)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_snapshot_get(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_snapshot_get: out_json is NULL")
        #expect(uf_snapshot_get(nil, &out) == UF_EINVAL)
    }

    @Test func aMonotonicSnapshotGivesWallClockDeadlines() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        // Under a second: counted from the precise clock on any kernel (a long delay
        // may count from the coarse one, a tick later).
        #expect(h.after(900, #"{"kind":"initialize","feature":"Toggle","into":"Off"}"#, id: "t") == UF_OK)
        let before = milliseconds(CLOCK_REALTIME)
        let snapshot = h.snapshot
        let after = milliseconds(CLOCK_REALTIME)
        let timer = try! JSONParser.parse(snapshot).objectValue!["timers"]!.arrayValue![0].objectValue!
        guard case .int(let dueAt)? = timer["due_at"], case .int(let remaining)? = timer["remaining_ms"] else {
            Issue.record("no due_at/remaining_ms in \(snapshot)")
            return
        }
        #expect(snapshot.hasPrefix(#"{"clock":"monotonic","model":{},"timers":[{"id":"t","kind":"api","due_at":"#))
        #expect((800...900).contains(remaining))
        #expect(UInt64(dueAt) >= before + UInt64(remaining) - 1 && UInt64(dueAt) <= after + UInt64(remaining) + 1)
    }

    /// A snapshot of P taken 60 ms after entering On (each timer 40 ms from due).
    func policySnapshot() -> String {
        let h = Harness.manual("", policies)
        precondition(h.submit(#"{"kind":"initialize","feature":"P","into":"On"}"#) == UF_OK)
        precondition(h.advance(60) == UF_OK)
        return h.snapshot
    }

    @Test func eachStateTimerIsArmedAgainByItsPolicyAndNoneFiresInsideTheRestore() {
        let snapshot = policySnapshot()
        let h = Harness.manual("", policies)
        // The host was down a while: the restoring clock reads 500.
        #expect(h.advance(500) == UF_OK)
        h.captureReports()
        #expect(uf_snapshot_restore(h.d, snapshot) == UF_OK)
        // fire: its deadline (100) passed: due now, but not fired inside the call;
        // resume: the 40 ms it had left; restart: its whole 100 ms.
        #expect(h.timers == #"[{"id":"P.On.after[0]","due_in_ms":0,"ms":100},{"id":"P.On.after[1]","due_in_ms":40,"ms":100},{"id":"P.On.after[2]","due_in_ms":100,"ms":100}]"#)
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"none"}}}"#)
        #expect(h.reports.isEmpty)
        #expect(h.advance(0) == UF_OK)
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"fire"}}}"#)
        #expect(h.advance(40) == UF_OK)
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"resume"}}}"#)
        #expect(h.advance(59) == UF_OK)
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"resume"}}}"#)
        #expect(h.advance(1) == UF_OK)
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"restart"}}}"#)
        #expect(h.timers == "[]")
    }

    @Test func aStateTimerRestartsWithItsDefinitionsDelayWhateverTheSnapshotSays() {
        let h = Harness.manual("", policies)
        #expect(uf_snapshot_restore(h.d, #"""
        {"clock":"manual","model":{"P":{"state":"On","payload":{"last":"none"}}},
         "timers":[{"id":"P.On.after[2]","kind":"state","due_at":5,"remaining_ms":5,"ms":777,"on_restore":"restart"}]}
        """#) == UF_OK)
        #expect(h.timers == #"[{"id":"P.On.after[2]","due_in_ms":100,"ms":100}]"#)
        #expect(h.advance(100) == UF_OK)
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"restart"}}}"#)
    }

    @Test func fireKeepsAFutureDeadline() {
        // Restored at 20 on the manual clock: the deadline 100 is 80 ms away.
        let snapshot = policySnapshot()
        let h = Harness.manual("", policies)
        #expect(h.advance(20) == UF_OK)
        #expect(uf_snapshot_restore(h.d, snapshot) == UF_OK)
        #expect(h.timers == #"[{"id":"P.On.after[1]","due_in_ms":40,"ms":100},{"id":"P.On.after[0]","due_in_ms":80,"ms":100},{"id":"P.On.after[2]","due_in_ms":100,"ms":100}]"#)
    }

    @Test func apiTimersAlwaysKeepTheirDeadline() {
        let h = Harness.manual("", TimeSeeds.counter)
        #expect(h.advance(1000) == UF_OK)
        let action = TimeSeeds.bump(5)
        // Whatever on_restore says for it.
        #expect(uf_snapshot_restore(h.d, #"""
        {"clock":"manual","model":{"Counter":{"state":"Counting","payload":{"n":0}}},
         "timers":[{"id":"a","kind":"api","due_at":1200,"remaining_ms":7,"ms":300,"on_restore":"restart","action":\#(action)},
                   {"id":null,"kind":"api","due_at":900,"remaining_ms":7,"ms":300,"on_restore":"resume","action":\#(action)}]}
        """#) == UF_OK)
        #expect(h.timers == #"[{"id":null,"due_in_ms":0,"ms":300},{"id":"a","due_in_ms":200,"ms":300}]"#)
        #expect(h.feature("Counter") == #"{"state":"Counting","payload":{"n":0}}"#)
        // Restored ids can be cancelled and replaced as any.
        #expect(h.cancel("a") == UF_OK)
        #expect(h.advance(0) == UF_OK)
        #expect(h.feature("Counter") == #"{"state":"Counting","payload":{"n":5}}"#)
    }

    @Test func theFarthestTimesASnapshotMayHoldRestoreListAndSnapshot() {
        // Delays up to 2^53 ms, deadlines up to a delay past the manual clock's end.
        let action = TimeSeeds.bump(5)
        let (delay, due) = (Int64(1) << 53, Int64(1) << 54)
        for options in [#"{"clock":"manual"}"#, #"{"timers":"host"}"#] {
            let h = Harness(options: options, TimeSeeds.counter)
            #expect(uf_snapshot_restore(h.d, #"""
            {"clock":"manual","model":{"Counter":{"state":"Counting","payload":{"n":0}}},
             "timers":[{"id":"a","kind":"api","due_at":\#(due),"remaining_ms":\#(delay),"ms":\#(delay),"action":\#(action)}]}
            """#) == UF_OK)
            #expect(h.timers.hasPrefix(#"[{"id":"a","due_in_ms":"#))
            #expect(h.snapshot.contains(#""ms":9007199254740992"#))
            #expect(h.cancel("a") == UF_OK)
            #expect(h.timers == "[]")
        }
    }

    @Test(arguments: [
        (#""due_at":18014398509481985,"remaining_ms":5,"ms":5"#, "due_at: expected an integer from 0 to 2^54"),
        (#""due_at":5,"remaining_ms":9007199254740993,"ms":5"#, "remaining_ms: expected an integer from 0 to 2^53"),
        (#""due_at":5,"remaining_ms":5,"ms":9223372036854775807"#, "ms: expected an integer from 0 to 2^53"),
    ])
    func timesPastWhatTheLibraryWritesAreRefused(times: String, message: String) {
        // A delay the API refuses cannot come in through a snapshot either.
        let h = Harness.manual("", TimeSeeds.counter)
        #expect(uf_snapshot_restore(h.d, #"""
        {"clock":"manual","model":{"Counter":{"state":"Counting","payload":{"n":0}}},
         "timers":[{"id":"a","kind":"api",\#(times),"action":\#(TimeSeeds.bump(5))}]}
        """#) == UF_ESCHEMA)
        #expect(h.lastError == "snapshot.timers[0]: \(message)")
        #expect(h.state == "{}" && h.timers == "[]")
    }

    @Test func aSnapshotOfTheOtherClockKindUsesTheRemainingTime() {
        // A monotonic snapshot (wall-clock due_at) on a manual clock: remaining_ms.
        let h = Harness.manual("", policies, TimeSeeds.counter)
        #expect(h.advance(5) == UF_OK)
        #expect(uf_snapshot_restore(h.d, #"""
        {"clock":"monotonic","model":{"P":{"state":"On","payload":{}}},
         "timers":[{"id":"P.On.after[0]","kind":"state","due_at":1700000000000,"remaining_ms":30,"ms":100,"on_restore":"fire"},
                   {"id":"x","kind":"api","due_at":1,"remaining_ms":70,"ms":100,"on_restore":"fire","action":\#(TimeSeeds.bump(1))}]}
        """#) == UF_OK)
        #expect(h.timers == #"[{"id":"P.On.after[0]","due_in_ms":30,"ms":100},{"id":"x","due_in_ms":70,"ms":100}]"#)
        // A manual snapshot on a monotonic clock: remaining_ms again.
        let m = Harness(options: #"{"timers":"host"}"#, policies)
        #expect(uf_snapshot_restore(m.d, #"""
        {"clock":"manual","model":{"P":{"state":"On","payload":{}}},
         "timers":[{"id":"P.On.after[0]","kind":"state","due_at":5,"remaining_ms":30000,"ms":100000,"on_restore":"fire"}]}
        """#) == UF_OK)
        let dueIn = try! JSONParser.parse(m.timers).arrayValue![0].objectValue!["due_in_ms"]!
        guard case .int(let ms) = dueIn else { Issue.record("due_in_ms: \(dueIn)"); return }
        #expect((29000...30000).contains(ms))
    }

    @Test func aRestoreReplacesEveryArmedTimerWithTheSnapshots() {
        let snapshot = policySnapshot()
        let h = Harness.manual("", policies, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(10, TimeSeeds.bump(1), id: "mine") == UF_OK)
        #expect(h.after(10, TimeSeeds.bump(1)) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"P","into":"On"}"#) == UF_OK)
        #expect(uf_snapshot_restore(h.d, snapshot) == UF_OK)
        #expect(h.timers == #"[{"id":"P.On.after[1]","due_in_ms":40,"ms":100},{"id":"P.On.after[0]","due_in_ms":100,"ms":100},{"id":"P.On.after[2]","due_in_ms":100,"ms":100}]"#)
        #expect(h.cancel("mine") == UF_ENOTFOUND)
        // The snapshot's model replaced the whole model: Counter is gone.
        #expect(h.state == #"{"P":{"state":"On","payload":{"last":"none"}}}"#)
    }

    @Test func aStateTimerTheSnapshotDoesNotListStaysDisarmed() {
        // The warning had fired when the snapshot was taken: only the expiry is armed again.
        let h = Harness.manual("", TimeSeeds.session)
        #expect(h.submit(#"{"kind":"initialize","feature":"Session","into":"Active"}"#) == UF_OK)
        #expect(h.advance(150) == UF_OK)
        let snapshot = h.snapshot
        #expect(snapshot == #"{"clock":"manual","model":{"Session":{"state":"Active","payload":{"warned":true}}},"timers":[{"id":"Session.Active.after[1]","kind":"state","due_at":400,"remaining_ms":250,"ms":300,"on_restore":"fire"}]}"#)
        let h2 = Harness.manual("", TimeSeeds.session)
        #expect(h2.advance(150) == UF_OK)
        #expect(uf_snapshot_restore(h2.d, snapshot) == UF_OK)
        #expect(h2.timers == h.timers)
    }

    @Test func invalidInputChangesNothing() {
        let h = Harness.manual("", policies, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"P","into":"On"}"#) == UF_OK)
        #expect(h.after(50, TimeSeeds.bump(1), id: "mine") == UF_OK)
        #expect(h.advance(10) == UF_OK)
        let model = h.state, timers = h.timers
        let on = #""model":{"P":{"state":"On","payload":{}}}"#
        let t = #""kind":"state","due_at":5,"remaining_ms":5,"ms":100"#
        let api = #""kind":"api","due_at":5,"remaining_ms":5,"ms":100,"action":\#(TimeSeeds.bump(1))"#
        let nope = #""kind":"api","due_at":5,"remaining_ms":5,"ms":100,"action":{"kind":"actualize","feature":"Nope","in":"Counting","payload":{}}"#
        let cases: [(String, Int32, String)] = [
            ("[]", UF_ESCHEMA, "a snapshot must be an object, got array"),
            ("{", UF_EJSON, "line 1, column 1: string or '}' expected near end of file"),
            (#"{"clock":"manual",\#(on),"extra":1}"#, UF_ESCHEMA, "snapshot: unknown key 'extra'"),
            (#"{"clock":"sundial",\#(on)}"#, UF_ESCHEMA, #"snapshot.clock: expected "monotonic" or "manual""#),
            (#"{"model":{}}"#, UF_ESCHEMA, #"snapshot.clock: expected "monotonic" or "manual""#),
            (#"{"clock":"manual"}"#, UF_ESCHEMA, "snapshot: missing key 'model'"),
            (#"{"clock":"manual",\#(on),"timers":{}}"#, UF_ESCHEMA, "snapshot.timers: expected array"),
            (#"{"clock":"manual","model":{"Nope":{"state":"On","payload":{}}}}"#, UF_ENOTFOUND, "snapshot.model: unknown feature 'Nope'"),
            (#"{"clock":"manual","model":{"P":{"state":"On","payload":{"last":1}}}}"#, UF_ESCHEMA, "snapshot.model: P.On.last: expected string, got number"),
            (#"{"clock":"manual",\#(on),"timers":[1]}"#, UF_ESCHEMA, "snapshot.timers[0]: expected object, got number"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[0]",\#(t),"when":1}]}"#, UF_ESCHEMA, "snapshot.timers[0]: unknown key 'when'"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[0]","kind":"alarm","due_at":5,"remaining_ms":5,"ms":100}]}"#, UF_ESCHEMA, #"snapshot.timers[0]: kind: expected "state" or "api""#),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[0]","kind":"state","due_at":-5,"remaining_ms":5,"ms":100}]}"#, UF_ESCHEMA, "snapshot.timers[0]: due_at: expected an integer from 0 to 2^54"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[0]","kind":"state","due_at":5,"ms":100}]}"#, UF_ESCHEMA, "snapshot.timers[0]: remaining_ms: expected an integer from 0 to 2^53"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[0]",\#(t),"on_restore":"never"}]}"#, UF_ESCHEMA, #"snapshot.timers[0]: on_restore: expected "fire", "resume" or "restart""#),
            (#"{"clock":"manual",\#(on),"timers":[{"id":null,\#(t)}]}"#, UF_ESCHEMA, "snapshot.timers[0]: id: expected a string"),
            (#"{"clock":"manual",\#(on),"timers":[{\#(t)}]}"#, UF_ESCHEMA, "snapshot.timers[0]: id: expected a string"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[3]",\#(t)}]}"#, UF_ESCHEMA, "snapshot.timers[0].id: 'P.On.after[3]' names no state timer of the model"),
            (#"{"clock":"manual","model":{},"timers":[{"id":"P.On.after[0]",\#(t)}]}"#, UF_ESCHEMA, "snapshot.timers[0].id: 'P.On.after[0]' names no state timer of the model"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"save",\#(t)}]}"#, UF_ESCHEMA, "snapshot.timers[0]: id: 'save' is not a state timer's id"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[0]",\#(t),"action":{}}]}"#, UF_ESCHEMA, "snapshot.timers[0]: a state timer has no 'action'"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"x","kind":"api","due_at":5,"remaining_ms":5,"ms":100}]}"#, UF_ESCHEMA, "snapshot.timers[0]: missing key 'action'"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"x",\#(nope)}]}"#, UF_ENOTFOUND, "snapshot.timers[0]: unknown feature 'Nope'"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"x.after[1]",\#(api)}]}"#, UF_ESCHEMA, "snapshot.timers[0]: id: 'x.after[1]' is shaped like a state timer's id (it contains '.after[')"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"",\#(api)}]}"#, UF_ESCHEMA, "snapshot.timers[0]: id: a timer id is 1 to 256 bytes, got 0"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"x",\#(api)},{"id":"x",\#(api)}]}"#, UF_ESCHEMA, "snapshot.timers[1].id: 'x' is armed twice"),
            (#"{"clock":"manual",\#(on),"timers":[{"id":"P.On.after[1]",\#(t)},{"id":"P.On.after[1]",\#(t)}]}"#, UF_ESCHEMA, "snapshot.timers[1].id: 'P.On.after[1]' is armed twice"),
        ]
        for (json, status, message) in cases {
            #expect(uf_snapshot_restore(h.d, json) == status, "\(json)")
            #expect(h.lastStatus == status, "\(json)")
            #expect(h.lastError == message, "\(json)")
            #expect(h.state == model, "\(json)")
            #expect(h.timers == timers, "\(json)")
        }
        #expect(uf_snapshot_restore(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_snapshot_restore: snapshot_json is NULL")
    }

    @Test func restoringInsideACallbackIsMisuse() {
        let h = Harness.manual("", Seeds.toggle)
        var statuses: [Int32] = []
        var messages: [String] = []
        h.subscribe(nil) { m in
            statuses.append(uf_snapshot_restore(uf_mutation_dispatcher(m), #"{"clock":"manual","model":{}}"#))
            messages.append(String(cString: uf_last_error()))
            return 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(statuses == [UF_EMISUSE])
        #expect(messages == ["uf_snapshot_restore is not allowed inside a callback of the same dispatcher"])
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
    }

    @Test func aStateRestoreArmsStateTimersAfreshAndKeepsApiTimers() {
        let h = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "save") == UF_OK)
        #expect(h.advance(60) == UF_OK)
        #expect(uf_state_restore(h.d, h.state) == UF_OK)
        #expect(h.timers == #"[{"id":"save","due_in_ms":40,"ms":100},{"id":"Download.Running.after[0]","due_in_ms":100,"ms":100},{"id":"Download.Running.after[1]","due_in_ms":250,"ms":250}]"#)
        // A restore into a state without timers disarms them.
        #expect(uf_state_restore(h.d, #"{"Download":{"state":"Idle","payload":{}},"Counter":{"state":"Counting","payload":{"n":0}}}"#) == UF_OK)
        #expect(h.timers == #"[{"id":"save","due_in_ms":40,"ms":100}]"#)
        // A restore that fails changes no timer.
        #expect(uf_state_restore(h.d, #"{"Download":{"state":"Running","payload":{}}}"#) == UF_ESCHEMA)
        #expect(h.timers == #"[{"id":"save","due_in_ms":40,"ms":100}]"#)
    }

    @Test func aSnapshotRoundTripsKeyedInstancesTimers() {
        let upload = #"""
        {"feature": "Upload", "instances": "keyed",
         "states": {"Sending": {"after": [{"ms": 30, "on_restore": "resume", "submit": [{"kind": "transition", "feature": "Upload", "into": "Failed"}]}]},
                    "Failed": {}},
         "initial": ["Sending"]}
        """#
        let h = Harness.manual("", upload)
        #expect(h.submit(#"{"kind":"initialize","feature":"Upload","key":"a","into":"Sending"}"#) == UF_OK)
        #expect(h.advance(10) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Upload","key":"b","into":"Sending"}"#) == UF_OK)
        let snapshot = h.snapshot
        let h2 = Harness.manual("", upload)
        #expect(uf_snapshot_restore(h2.d, snapshot) == UF_OK)
        #expect(h2.timers == h.timers)
        #expect(h2.advance(20) == UF_OK)
        #expect(h2.state == #"{"Upload":{"a":{"state":"Failed","payload":{}},"b":{"state":"Sending","payload":{}}}}"#)
    }
}

/// Journals with timers: `at`, API timer lines, and what a replay arms.
@Suite struct JournalTimerTests {
    func lines(_ path: String) -> [String] {
        let text = (try? FileReader.read(path)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    /// What a fresh dispatcher whose clock reads `now` has after replaying the journal.
    func replayed(_ path: String, now: UInt64, _ definitions: String...) -> (state: String, timers: String) {
        let r = Harness(options: #"{"clock":"manual"}"#)
        for definition in definitions { precondition(uf_register(r.d, definition) == UF_OK) }
        precondition(r.advance(now) == UF_OK)
        let status = uf_replay_file(r.d, path)
        precondition(status == UF_OK, "uf_replay_file: \(r.lastError)")
        return (r.state, r.timers)
    }

    @Test func linesCarryTheTimeAndApiTimersAreJournaled() {
        let path = temporaryPath("timer-lines")
        defer { unlink(path) }
        let h = Harness.manual(#""journal":"\#(path)""#, TimeSeeds.download, TimeSeeds.counter)
        #expect(h.advance(40) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.after(30, TimeSeeds.bump(1), id: "save") == UF_OK)
        #expect(h.after(50, TimeSeeds.bump(2), id: "save") == UF_OK)
        #expect(h.after(50, TimeSeeds.bump(3)) == UF_OK)
        #expect(h.advance(100) == UF_OK)
        #expect(h.cancel("nothing") == UF_ENOTFOUND)
        let journal = lines(path).filter { !$0.hasPrefix(#"{"uniflow_journal""#) }
        #expect(journal == [
            #"{"seq":1,"feature":"Download","kind":"initialization","state":"Running","payload":{"progress":0},"at":40}"#,
            #"{"timer":"armed","serial":3,"id":"save","ms":30,"due_at":70,"action":{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":1}},"at":40}"#,
            // A replacement is one line: armed, and what it replaces.
            #"{"timer":"armed","serial":4,"id":"save","ms":50,"due_at":90,"action":{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":2}},"replaces":3,"at":40}"#,
            #"{"timer":"armed","serial":5,"id":null,"ms":50,"due_at":90,"action":{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":3}},"at":40}"#,
            // Counter is not initialized: both actions are rejected, and the timers fired.
            #"{"timer":"fired","serial":4,"at":90}"#,
            #"{"timer":"fired","serial":5,"at":90}"#,
            #"{"seq":2,"feature":"Download","kind":"transition","state":"Failed","payload":{"reason":"stalled"},"at":140}"#,
        ])
    }

    @Test func replayEndsWithTheTimersTheJournalingDispatcherHad() {
        let path = temporaryPath("timer-replay")
        defer { unlink(path) }
        let defs = [TimeSeeds.download, TimeSeeds.counter, TimeSeeds.session]
        let h = Harness.manual(#""journal":"\#(path)""#, defs[0], defs[1], defs[2])
        var step = 0
        func same(_ comment: Comment) {
            step += 1
            let r = replayed(path, now: h.now, defs[0], defs[1], defs[2])
            #expect(r.state == h.state, "step \(step): \(comment)")
            #expect(r.timers == h.timers, "step \(step): \(comment)")
        }
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(500, TimeSeeds.bump(1), id: "save") == UF_OK)
        same("an API timer armed")
        #expect(h.advance(20) == UF_OK)
        #expect(h.after(500, TimeSeeds.bump(2), id: "save") == UF_OK)
        #expect(h.after(700, TimeSeeds.bump(3), id: "save", keep: true) == UF_OK)
        #expect(h.after(40, TimeSeeds.bump(4)) == UF_OK)
        same("replaced, kept, anonymous")
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Session","into":"Active"}"#) == UF_OK)
        same("state timers armed by initializations")
        #expect(h.advance(50) == UF_OK)
        #expect(h.submit(#"{"kind":"actualize","feature":"Download","in":"Running","payload":{"progress":1}}"#) == UF_OK)
        same("the anonymous timer fired; an actualization re-armed the update timer")
        #expect(h.advance(60) == UF_OK)
        same("the session's warning fired without leaving its state")
        #expect(h.submit(#"{"kind":"actualize","feature":"Session","in":"Active","payload":{"warned":false}}"#) == UF_OK)
        same("an actualization after the warning: the entry timer stays fired")
        #expect(h.advance(10) == UF_OK)
        same("the download's stall timer fired and left Running")
        #expect(h.cancel("save") == UF_OK)
        #expect(h.after(30, TimeSeeds.bump(5), id: "later") == UF_OK)
        same("cancelled and armed")
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"transition","feature":"Download","from":"Failed","into":"Idle"},
         {"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":2}}]
        """#) == UF_OK)
        same("a batch that entered Running")
        #expect(h.advance(30) == UF_OK)
        same("later fired")
        #expect(h.submit(#"{"kind":"transition","feature":"Session","into":"Expired"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Session","into":"Active"}"#) == UF_OK)
        same("the session left and came back: its warning is armed again")
        #expect(uf_state_restore(h.d, h.state) == UF_OK)
        same("a state restore armed the state timers afresh")
    }

    @Test func aStateTimersFiredLineFollowsItsActionsAndOnlyWhenItStayedInItsState() {
        let path = temporaryPath("timer-fired-line")
        defer { unlink(path) }
        let h = Harness.manual(#""journal":"\#(path)""#, TimeSeeds.session, TimeSeeds.download)
        #expect(h.submit(#"{"kind":"initialize","feature":"Session","into":"Active"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.advance(100) == UF_OK)
        #expect(lines(path).filter { !$0.hasPrefix(#"{"uniflow_journal""#) } == [
            #"{"seq":1,"feature":"Session","kind":"initialization","state":"Active","payload":{"warned":false},"at":0}"#,
            #"{"seq":2,"feature":"Download","kind":"initialization","state":"Running","payload":{"progress":0},"at":0}"#,
            // The warning actualized its state: fired, written after its mutation.
            #"{"seq":3,"feature":"Session","kind":"actualization","state":"Active","payload":{"warned":true},"at":100}"#,
            #"{"timer":"fired","id":"Session.Active.after[0]","at":100}"#,
            // The stall timer left its state: its mutation says enough.
            #"{"seq":4,"feature":"Download","kind":"transition","state":"Failed","payload":{"reason":"stalled"},"at":100}"#,
        ])
    }

    @Test func timersTheCascadeLimitDropsAreJournaledAndStayGoneAfterAReplay() {
        let path = temporaryPath("timer-dropped-lines")
        defer { unlink(path) }
        let h = Harness.manual(#""journal":"\#(path)","max_cascade":2"#, TimeSeeds.counter, TimeSeeds.session)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        // Four timers due at 100, in this order: two API timers, the session's
        // warning (armed by the initialization), an anonymous API timer.
        #expect(h.after(100, TimeSeeds.bump(1)) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(2), id: "two") == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Session","into":"Active"}"#) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(3)) == UF_OK)
        h.captureReports()
        #expect(h.advance(100) == UF_OK)
        // The last two are over the limit of two actions at one instant.
        #expect(h.reports("dropped") == [
            #"{"event":"dropped","status":"UF_ELOOP","reason":"cascade limit of 2 actions reached at one instant; timer dropped","timer":"Session.Active.after[0]"}"#,
            // An anonymous timer is told by its action.
            #"{"event":"dropped","action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":null},"status":"UF_ELOOP","reason":"cascade limit of 2 actions reached at one instant; timer dropped","timer":null}"#,
        ])
        #expect(lines(path).filter { $0.contains(#""timer":"dropped""#) } == [
            #"{"timer":"dropped","id":"Session.Active.after[0]","at":100}"#,
            #"{"timer":"dropped","serial":5,"at":100}"#,
        ])
        #expect(h.timers == #"[{"id":"Session.Active.after[1]","due_in_ms":200,"ms":300}]"#)
        let r = replayed(path, now: h.now, TimeSeeds.counter, TimeSeeds.session)
        #expect(r.state == h.state)
        #expect(r.timers == h.timers)
    }

    @Test func aDispatcherThatReplaysItsOwnJournalCarriesTheTimersIntoItsSession() {
        // Run 1 arms; run 2 replays the file it journals to and goes on; run 3
        // replays again and must find what run 2 had.
        let path = temporaryPath("timer-runs")
        defer { unlink(path) }
        let options = #""journal":"\#(path)""#
        var expected: (state: String, timers: String)
        do {
            let run1 = Harness.manual(options, TimeSeeds.download, TimeSeeds.counter)
            #expect(run1.submit(TimeSeeds.startCounter) == UF_OK)
            #expect(run1.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
            #expect(run1.after(500, TimeSeeds.bump(1), id: "save") == UF_OK)
            #expect(run1.after(90, TimeSeeds.bump(2)) == UF_OK)
            #expect(run1.advance(50) == UF_OK)
            expected = (run1.state, run1.timers)
        }
        do {
            let run2 = Harness.manual(options, TimeSeeds.download, TimeSeeds.counter)
            #expect(run2.advance(50) == UF_OK)
            #expect(uf_replay_file(run2.d, path) == UF_OK)
            #expect(run2.state == expected.state)
            #expect(run2.timers == expected.timers)
            #expect(run2.advance(40) == UF_OK)
            #expect(run2.after(30, TimeSeeds.bump(3), id: "more") == UF_OK)
            expected = (run2.state, run2.timers)
            #expect(expected.timers == #"[{"id":"Download.Running.after[0]","due_in_ms":10,"ms":100},{"id":"more","due_in_ms":30,"ms":30},{"id":"Download.Running.after[1]","due_in_ms":160,"ms":250},{"id":"save","due_in_ms":410,"ms":500}]"#)
        }
        let run3 = replayed(path, now: 90, TimeSeeds.download, TimeSeeds.counter)
        #expect(run3.state == expected.state)
        #expect(run3.timers == expected.timers)
    }

    @Test func aSnapshotRestoreIsJournaledWithItsTimers() {
        let path = temporaryPath("timer-snapshot-journal")
        defer { unlink(path) }
        let source = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        #expect(source.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(source.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(source.after(80, TimeSeeds.bump(1), id: "from-snapshot") == UF_OK)
        #expect(source.advance(30) == UF_OK)
        let snapshot = source.snapshot
        let h = Harness.manual(#""journal":"\#(path)""#, TimeSeeds.download, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(500, TimeSeeds.bump(2), id: "mine") == UF_OK)
        #expect(h.advance(30) == UF_OK)
        #expect(uf_snapshot_restore(h.d, snapshot) == UF_OK)
        #expect(h.timers == source.timers)
        let r = replayed(path, now: h.now, TimeSeeds.download, TimeSeeds.counter)
        #expect(r.state == h.state)
        #expect(r.timers == h.timers)
    }

    @Test func anInterceptorsTimersInABatchThatRollsBackAreNotJournaled() {
        let path = temporaryPath("timer-batch-journal")
        defer { unlink(path) }
        let h = Harness.manual(#""journal":"\#(path)""#, TimeSeeds.counter, Seeds.toggle)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "kept") == UF_OK)
        var veto = true
        h.intercept("Toggle") { a in
            let d = uf_intercepted_dispatcher(a)!
            uf_submit_after(d, TimeSeeds.bump(2), 50, "armed-in-batch", 0)
            uf_timer_cancel(d, "kept")
            return String(cString: uf_intercepted_state(a)) == "On" && veto ? 1 : 0
        }
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"initialize","feature":"Toggle","into":"Off"},{"kind":"transition","feature":"Toggle","into":"On"}]
        """#) == UF_REJECTED)
        #expect(h.timers == #"[{"id":"kept","due_in_ms":100,"ms":100}]"#)
        var r = replayed(path, now: h.now, TimeSeeds.counter, Seeds.toggle)
        #expect(r.timers == h.timers)
        #expect(r.state == h.state)
        // Committed, they are.
        veto = false
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"initialize","feature":"Toggle","into":"Off"},{"kind":"transition","feature":"Toggle","into":"On"}]
        """#) == UF_OK)
        #expect(h.timers == #"[{"id":"armed-in-batch","due_in_ms":50,"ms":50}]"#)
        r = replayed(path, now: h.now, TimeSeeds.counter, Seeds.toggle)
        #expect(r.timers == h.timers)
        #expect(r.state == h.state)
    }

    /// The journal's last line is at 60 (a batch line has no "at" of its own: its
    /// items tell it); the replaying clock reads 500.
    @Test(arguments: [false, true])
    func replayArmsStateTimersByTheirPolicyFromTheLastLine(batch: Bool) {
        let path = temporaryPath("timer-policies")
        defer { unlink(path) }
        let h = Harness.manual(#""journal":"\#(path)""#, policies, TimeSeeds.counter)
        #expect(h.submit(#"{"kind":"initialize","feature":"P","into":"On"}"#) == UF_OK)
        #expect(h.advance(60) == UF_OK)
        #expect((batch ? uf_submit_batch(h.d, "[\(TimeSeeds.startCounter)]") : h.submit(TimeSeeds.startCounter)) == UF_OK)
        let r = replayed(path, now: 500, policies, TimeSeeds.counter)
        // fire: due; resume: the 40 ms it had left at 60; restart: its whole 100 ms.
        #expect(r.timers == #"[{"id":"P.On.after[0]","due_in_ms":0,"ms":100},{"id":"P.On.after[1]","due_in_ms":40,"ms":100},{"id":"P.On.after[2]","due_in_ms":100,"ms":100}]"#)
    }

    @Test func aReplayNeverFiresInsideTheCall() {
        let path = temporaryPath("timer-replay-due")
        defer { unlink(path) }
        let h = Harness.manual(#""journal":"\#(path)""#, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(10, TimeSeeds.bump(1), id: "due") == UF_OK)
        let r = Harness.manual("", TimeSeeds.counter)
        #expect(r.advance(1000) == UF_OK)
        #expect(uf_replay_file(r.d, path) == UF_OK)
        #expect(r.state == #"{"Counter":{"state":"Counting","payload":{"n":0}}}"#)
        #expect(r.timers == #"[{"id":"due","due_in_ms":0,"ms":10}]"#)
        #expect(r.advance(0) == UF_OK)
        #expect(r.state == #"{"Counter":{"state":"Counting","payload":{"n":1}}}"#)
    }
}
