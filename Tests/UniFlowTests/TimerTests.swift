import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// State timers (`after` in a definition), on the manual clock (docs/time.md).
@Suite struct StateTimerTests {
    let running = #"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#
    let bothArmed = #"[{"id":"Download.Running.after[0]","due_in_ms":100,"ms":100},{"id":"Download.Running.after[1]","due_in_ms":250,"ms":250}]"#

    @Test func anInitializationIntoATimedStateArmsItsTimers() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.timers == "[]")
        #expect(h.submit(running) == UF_OK)
        #expect(h.timers == bothArmed)
        #expect(h.advance(99) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Running","payload":{"progress":0}}}"#)
        #expect(h.timers == #"[{"id":"Download.Running.after[0]","due_in_ms":1,"ms":100},{"id":"Download.Running.after[1]","due_in_ms":151,"ms":250}]"#)
        #expect(h.advance(1) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Failed","payload":{"reason":"stalled"}}}"#)
        // Leaving Running disarmed its other timer.
        #expect(h.timers == "[]")
        #expect(h.now == 100)
    }

    @Test func aTransitionIntoTheStateArmsThemAndSoDoesATransitionIntoItself() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Idle"}"#) == UF_OK)
        #expect(h.timers == "[]")
        #expect(h.advance(10) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.timers == bothArmed)
        #expect(h.advance(60) == UF_OK)
        // From Running into Running: both start again, the entry timer included.
        #expect(h.submit(#"{"kind":"transition","feature":"Download","from":"Running","into":"Running","payload":{"progress":5}}"#) == UF_OK)
        #expect(h.timers == bothArmed)
        #expect(h.advance(99) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Running","payload":{"progress":5}}}"#)
        #expect(h.advance(1) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Failed","payload":{"reason":"stalled"}}}"#)
        #expect(h.now == 170)
    }

    @Test func leavingTheStateDisarmsItsTimers() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.submit(running) == UF_OK)
        #expect(h.advance(50) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Download","from":"Running","into":"Idle"}"#) == UF_OK)
        #expect(h.timers == "[]")
        #expect(h.advance(1000) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Idle","payload":{}}}"#)
        // A deinitialization disarms them too.
        #expect(h.submit(#"{"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Download"}"#) == UF_OK)
        #expect(h.timers == "[]")
        #expect(h.advance(1000) == UF_OK)
        #expect(h.state == "{}")
    }

    @Test func anActualizationReArmsUpdateTimersWhileEntryTimersKeepTheirDeadline() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.submit(running) == UF_OK)
        #expect(h.advance(50) == UF_OK)
        #expect(h.submit(#"{"kind":"actualize","feature":"Download","in":"Running","payload":{"progress":10}}"#) == UF_OK)
        #expect(h.timers == #"[{"id":"Download.Running.after[0]","due_in_ms":50,"ms":100},{"id":"Download.Running.after[1]","due_in_ms":250,"ms":250}]"#)
        #expect(h.advance(49) == UF_OK)
        #expect(h.feature("Download") == #"{"state":"Running","payload":{"progress":10}}"#)
        #expect(h.advance(1) == UF_OK)
        #expect(h.feature("Download") == #"{"state":"Failed","payload":{"reason":"stalled"}}"#)
    }

    @Test func anEntryTimerThatFiredInsideItsStateStaysFired() {
        let h = Harness.manual("", TimeSeeds.session)
        #expect(h.submit(#"{"kind":"initialize","feature":"Session","into":"Active"}"#) == UF_OK)
        #expect(h.timers == #"[{"id":"Session.Active.after[0]","due_in_ms":100,"ms":100},{"id":"Session.Active.after[1]","due_in_ms":300,"ms":300}]"#)
        #expect(h.advance(100) == UF_OK)
        // The warning is an actualization: it re-armed the inactivity timer.
        #expect(h.state == #"{"Session":{"state":"Active","payload":{"warned":true}}}"#)
        #expect(h.timers == #"[{"id":"Session.Active.after[1]","due_in_ms":300,"ms":300}]"#)
        #expect(h.advance(200) == UF_OK)
        #expect(h.submit(#"{"kind":"actualize","feature":"Session","in":"Active","payload":{"warned":false}}"#) == UF_OK)
        // Another actualization does not bring the warning back.
        #expect(h.timers == #"[{"id":"Session.Active.after[1]","due_in_ms":300,"ms":300}]"#)
        #expect(h.advance(299) == UF_OK)
        #expect(h.state == #"{"Session":{"state":"Active","payload":{"warned":false}}}"#)
        #expect(h.advance(1) == UF_OK)
        #expect(h.state == #"{"Session":{"state":"Expired","payload":{}}}"#)
        #expect(h.timers == "[]")
    }

    @Test func entryTimersKeepTheirPlaceInArmOrderAcrossAnActualization() {
        // An API timer armed after the state was entered, due at the same instant
        // as the entry timer: the entry timer was armed first and fires first,
        // even though an actualization came in between.
        let h = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        h.captureReports()
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.submit(running) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "same-instant") == UF_OK)
        #expect(h.submit(#"{"kind":"actualize","feature":"Download","in":"Running","payload":{"progress":10}}"#) == UF_OK)
        #expect(h.advance(100) == UF_OK)
        #expect(h.reports("timer_fired").map { $0.contains(#""timer":"Download.Running.after[0]""#) ? "state" : "api" } == ["state", "api"])
    }

    @Test func templatesReadTheModelAndTheTimer() {
        let h = Harness.manual("", #"""
        {"feature": "Job",
         "states": {"Waiting": {"fields": {"attempt": "integer"},
                                "after": [{"ms": 40, "submit": [{"kind": "transition", "feature": "Job", "into": "Gave",
                                  "payload": {"why": {"$": {"cat": [{"var": "timer.id"}, " (", {"var": "timer.feature"}, ".",
                                                                    {"var": "timer.state"}, ") after ", {"var": "timer.ms"},
                                                                    " ms, attempt ", {"var": "model.Job.payload.attempt"}]}},
                                              "key": {"$": {"var": "timer.key"}}}}]}]},
                    "Gave": {"fields": {"why": "string", "key": {"type": "any", "optional": true}}}},
         "initial": ["Waiting"]}
        """#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Job","into":"Waiting","payload":{"attempt":3}}"#) == UF_OK)
        #expect(h.advance(40) == UF_OK)
        // A single feature's timer has no key: timer.key reads null.
        #expect(h.state == #"{"Job":{"state":"Gave","payload":{"why":"Job.Waiting.after[0] (Job.Waiting) after 40 ms, attempt 3","key":null}}}"#)
    }

    @Test func aKeyedInstancesTimerActsOnItsInstanceAndNamesIt() {
        let h = Harness.manual("", #"""
        {"feature": "Upload", "instances": "keyed",
         "states": {"Sending": {"after": [{"ms": 30, "submit": [{"kind": "transition", "feature": "Upload", "into": "Failed",
                                                                   "payload": {"who": {"$": {"var": "timer.key"}},
                                                                               "id": {"$": {"var": "timer.id"}}}}]}]},
                    "Failed": {"fields": {"who": "string", "id": "string"}}},
         "initial": ["Sending"]}
        """#)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"Upload","key":"a","into":"Sending"}"#) == UF_OK)
        #expect(h.advance(10) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Upload","key":"b","into":"Sending"}"#) == UF_OK)
        #expect(h.timers == #"[{"id":"Upload[a].Sending.after[0]","due_in_ms":20,"ms":30},{"id":"Upload[b].Sending.after[0]","due_in_ms":30,"ms":30}]"#)
        #expect(h.advance(20) == UF_OK)
        #expect(h.state == #"{"Upload":{"a":{"state":"Failed","payload":{"who":"a","id":"Upload[a].Sending.after[0]"}},"b":{"state":"Sending","payload":{}}}}"#)
        #expect(h.reports == [
            #"{"event":"processed","action":{"kind":"initialize","feature":"Upload","key":"a","into":"Sending"}}"#,
            #"{"event":"processed","action":{"kind":"initialize","feature":"Upload","key":"b","into":"Sending"}}"#,
            #"{"event":"timer_fired","timer":"Upload[a].Sending.after[0]"}"#,
            #"{"event":"processed","action":{"kind":"transition","feature":"Upload","key":"a","into":"Failed","same":false,"timer":"Upload[a].Sending.after[0]"}}"#,
        ])
    }

    @Test func aTemplateThatFailsIsReportedAndQueuesNothing() {
        // The second template gives a number for a string field: neither action runs.
        let h = Harness.manual("", TimeSeeds.counter, #"""
        {"feature": "Alarm",
         "states": {"Set": {"after": [{"ms": 10, "submit": [
                        {"kind": "actualize", "feature": "Counter", "in": "Counting", "payload": {"n": 99}},
                        {"kind": "transition", "feature": "Alarm", "into": "Rung", "payload": {"by": {"$": {"var": "timer.ms"}}}}]}]},
                    "Rung": {"fields": {"by": "string"}}},
         "initial": ["Set"]}
        """#)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Alarm","into":"Set"}"#) == UF_OK)
        h.captureReports()
        let recorder = h.record()
        #expect(h.advance(10) == UF_OK)
        #expect(h.state == #"{"Counter":{"state":"Counting","payload":{"n":0}},"Alarm":{"state":"Set","payload":{}}}"#)
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports == [
            #"{"event":"timer_fired","timer":"Alarm.Set.after[0]"}"#,
            #"{"event":"timer_rejected","status":"UF_ESCHEMA","reason":"submit[1]: Alarm.Rung.by: expected string, got number","timer":"Alarm.Set.after[0]"}"#,
        ])
        // It fired: it is not armed any more, and the state did not change.
        #expect(h.timers == "[]")
    }

    @Test func reportsAndMutationsNameTheTimer() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.submit(running) == UF_OK)
        h.captureReports()
        let recorder = h.record()
        #expect(h.advance(100) == UF_OK)
        #expect(h.reports == [
            #"{"event":"timer_fired","timer":"Download.Running.after[0]"}"#,
            #"{"event":"processed","action":{"kind":"transition","feature":"Download","from":"Running","into":"Failed","timer":"Download.Running.after[0]"}}"#,
        ])
        #expect(recorder.mutations == [
            #"{"seq":2,"kind":"transition","feature":"Download","old":{"state":"Running","payload":{"progress":0}},"new":{"state":"Failed","payload":{"reason":"stalled"}},"action":{"kind":"transition","feature":"Download","from":"Running","into":"Failed","timer":"Download.Running.after[0]"}}"#,
        ])
    }

    @Test func definitionsWithBadTimersAreRefusedWithThePath() {
        func register(_ after: String) -> (Int32, String) {
            let h = Harness()
            let status = uf_register(h.d, #"{"feature":"F","states":{"A":{"after":\#(after)},"B":{}}}"#)
            return (status, h.lastError)
        }
        let submit = #""submit":[{"kind":"transition","feature":"F","into":"B"}]"#
        #expect(register(#"[{"ms":-1,\#(submit)}]"#) == (UF_ESCHEMA, "features[0].states.A.after[0].ms: expected an integer from 0 to 2^53, got -1"))
        #expect(register(#"[{"ms":1.5,\#(submit)}]"#) == (UF_ESCHEMA, "features[0].states.A.after[0].ms: expected an integer from 0 to 2^53, got 1.5"))
        #expect(register(#"[{"ms":9007199254740993,\#(submit)}]"#) == (UF_ESCHEMA, "features[0].states.A.after[0].ms: expected an integer from 0 to 2^53, got 9007199254740993"))
        #expect(register(#"[{"ms":10,\#(submit),"reset":"never"}]"#) == (UF_ESCHEMA, #"features[0].states.A.after[0].reset: expected "entry" or "update", got "never""#))
        #expect(register(#"[{"ms":10,\#(submit),"on_restore":"later"}]"#) == (UF_ESCHEMA, #"features[0].states.A.after[0].on_restore: expected "fire", "resume" or "restart", got "later""#))
        #expect(register(#"[{"ms":10,\#(submit),"every":5}]"#) == (UF_ESCHEMA, "features[0].states.A.after[0]: unknown key 'every'"))
        #expect(register(#"[{"ms":10}]"#) == (UF_ESCHEMA, "features[0].states.A.after[0]: missing key 'submit'"))
        #expect(register(#"{"ms":10}"#) == (UF_ESCHEMA, "features[0].states.A.after: expected array, got object"))
        #expect(register(#"[{"ms":10,"submit":[5]}]"#) == (UF_ESCHEMA, "features[0].states.A.after[0].submit[0]: expected object, got number"))
        // Templates are checked as far as they can be before their rules run.
        #expect(register(#"[{"ms":10,"submit":[{"kind":"transition","feature":"F","into":{"$":{"nope":[]}}}]}]"#)
                == (UF_ESCHEMA, "features[0].states.A.after[0].submit[0].into.$: unknown operator 'nope'"))
        #expect(register(#"[{"ms":10,"submit":[{"kind":"transition","feature":"F","into":"Nowhere"}]}]"#)
                == (UF_ENOTFOUND, "features[0].states.A.after[0].submit[0]: unknown state 'Nowhere' of feature F"))
        #expect(register(#"[{"ms":10,"submit":[{"kind":"transition","feature":"G","into":"B"}]}]"#)
                == (UF_ENOTFOUND, "features[0].states.A.after[0].submit[0]: unknown feature 'G'"))
        // A trigger's own list is checked as completely; its actions name their keys.
        #expect(register(#"[{"ms":10,"submit":[{"kind":"trigger","feature":"F","submit":[{"kind":"transition","feature":"G","into":"B"}]}]}]"#)
                == (UF_ENOTFOUND, "features[0].states.A.after[0].submit[0]: submit[0]: unknown feature 'G'"))
        #expect(register(#"[{"ms":10,"submit":[{"kind":"trigger","feature":"F","submit":[{"kind":"transition","feature":"F","into":"Nowhere"}]}]}]"#)
                == (UF_ENOTFOUND, "features[0].states.A.after[0].submit[0]: submit[0]: unknown state 'Nowhere' of feature F"))
        #expect(register(#"[{"ms":10,"submit":[{"kind":"trigger","feature":"F","submit":[{"kind":"transition","feature":"F","key":"k","into":"B"}]}]}]"#)
                == (UF_ESCHEMA, "features[0].states.A.after[0].submit[0]: submit[0]: F is a single feature: an action on it takes no key"))
        // 2^53 itself is the longest delay.
        #expect(register(#"[{"ms":9007199254740992,\#(submit)}]"#).0 == UF_OK)
    }
}

/// API timers: `uf_submit_after`, `uf_dispatch_after`, ids, `uf_timer_cancel`.
@Suite struct APITimerTests {
    func counter(_ extra: String = "") -> Harness {
        let h = Harness.manual(extra, TimeSeeds.counter)
        precondition(h.submit(TimeSeeds.startCounter) == UF_OK)
        return h
    }

    func n(_ h: Harness) -> String { h.feature("Counter") ?? "absent" }
    func counted(_ value: Int) -> String { #"{"state":"Counting","payload":{"n":\#(value)}}"# }

    @Test func anArmedActionIsSubmittedWhenItFallsDue() {
        let h = counter()
        h.captureReports()
        #expect(h.after(100, TimeSeeds.bump(1), id: "save") == UF_OK)
        #expect(h.timers == #"[{"id":"save","due_in_ms":100,"ms":100}]"#)
        #expect(h.advance(99) == UF_OK)
        #expect(n(h) == counted(0))
        #expect(h.advance(1) == UF_OK)
        #expect(n(h) == counted(1))
        #expect(h.timers == "[]")
        #expect(h.reports == [
            #"{"event":"timer_fired","action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":"save"},"timer":"save"}"#,
            #"{"event":"processed","action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":"save"}}"#,
        ])
    }

    @Test func itsPreconditionIsCheckedWhenItFallsDue() {
        let h = Harness.manual("", Seeds.toggle)
        h.captureReports()
        // Not initialized now; initialized by the time it is due.
        #expect(h.after(50, #"{"kind":"transition","feature":"Toggle","from":"Off","into":"On"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(h.advance(50) == UF_OK)
        #expect(h.state == #"{"Toggle":{"state":"On","payload":{}}}"#)
        // Armed again, it is rejected when due: reported as any action is.
        #expect(h.after(50, #"{"kind":"transition","feature":"Toggle","from":"Off","into":"On"}"#, id: "again") == UF_OK)
        h.reports.removeAll()
        #expect(h.advance(50) == UF_OK)
        #expect(h.reports == [
            #"{"event":"timer_fired","action":{"kind":"transition","feature":"Toggle","from":"Off","into":"On","timer":"again"},"timer":"again"}"#,
            #"{"event":"rejected","action":{"kind":"transition","feature":"Toggle","from":"Off","into":"On","timer":"again"},"status":"UF_REJECTED","reason":"Toggle is in state On, not Off"}"#,
        ])
    }

    @Test func theActionIsCheckedAtOnceAndABadOneArmsNothing() {
        let h = counter()
        #expect(h.after(10, #"{"kind":"actualize""#) == UF_EJSON)
        #expect(h.lastError.hasPrefix("line 1"))
        #expect(h.after(10, #"{"kind":"actualize","feature":"Counter"}"#) == UF_ESCHEMA)
        #expect(h.after(10, #"{"kind":"actualize","feature":"Nope","in":"Counting","payload":{}}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown feature 'Nope'")
        #expect(h.after(10, #"{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":"x"}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "Counter.Counting.n: expected integer, got string")
        #expect(h.after(10, #"{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":1}}"#, id: "x") == UF_OK)
        #expect(h.after(10, #"{"kind":"actualize","feature":"Nope","in":"Counting","payload":{}}"#, id: "x") == UF_ENOTFOUND)
        // The failed re-arm did not replace the armed "x".
        #expect(h.timers == #"[{"id":"x","due_in_ms":10,"ms":10}]"#)
        #expect(uf_submit_after(h.d, nil, 10, nil, 0) == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: action_json is NULL")
        #expect(uf_submit_after(nil, TimeSeeds.bump(1), 10, nil, 0) == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: dispatcher is NULL")
        #expect(h.timers == #"[{"id":"x","due_in_ms":10,"ms":10}]"#)
    }

    @Test func timerIdsAreOneTo256BytesAndNotShapedLikeAStateTimers() {
        let h = counter()
        #expect(h.after(10, TimeSeeds.bump(1), id: "") == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: a timer id is 1 to 256 bytes, got 0")
        #expect(h.after(10, TimeSeeds.bump(1), id: String(repeating: "é", count: 128) + "x") == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: a timer id is 1 to 256 bytes, got 257")
        #expect(h.after(10, TimeSeeds.bump(1), id: "Counter.Counting.after[0]") == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: 'Counter.Counting.after[0]' is shaped like a state timer's id (it contains '.after[')")
        #expect(uf_submit_after(h.d, TimeSeeds.bump(1), 10, "ok", 2) == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: unknown flags 2")
        #expect(h.timers == "[]")
        let longest = String(repeating: "é", count: 128)
        #expect(h.after(10, TimeSeeds.bump(1), id: longest) == UF_OK)
        #expect(h.after(10, TimeSeeds.bump(1), id: "x.after") == UF_OK)
        #expect(h.timers == #"[{"id":"\#(longest)","due_in_ms":10,"ms":10},{"id":"x.after","due_in_ms":10,"ms":10}]"#)
    }

    @Test func delaysAreAtMost2To53Milliseconds() {
        let h = counter()
        let limit = UInt64(1) << 53
        #expect(h.after(limit + 1, TimeSeeds.bump(1)) == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: delay_ms is 9007199254740993, at most 2^53")
        #expect(h.after(.max, TimeSeeds.bump(1), id: "far") == UF_EINVAL)
        #expect(h.lastError == "uf_submit_after: delay_ms is 18446744073709551615, at most 2^53")
        var action = uf_action()
        action.size = UInt32(MemoryLayout<uf_action>.size)
        action.kind = UF_ACTION_ACTUALIZE
        action.feature = UnsafePointer(strdup("Counter"))
        action.into = UnsafePointer(strdup("Counting"))
        action.payload_json = UnsafePointer(strdup(#"{"n":1}"#))
        defer { free(UnsafeMutablePointer(mutating: action.feature)); free(UnsafeMutablePointer(mutating: action.into))
                free(UnsafeMutablePointer(mutating: action.payload_json)) }
        #expect(uf_dispatch_after(h.d, &action, .max, nil, 0) == UF_EINVAL)
        #expect(h.lastError == "uf_dispatch_after: delay_ms is 18446744073709551615, at most 2^53")
        #expect(h.timers == "[]")
        // The longest delay arms, and lists and snapshots as exact integers.
        #expect(h.after(limit, TimeSeeds.bump(1), id: "far") == UF_OK)
        #expect(uf_dispatch_after(h.d, &action, limit, "far2", 0) == UF_OK)
        #expect(h.timers == #"[{"id":"far","due_in_ms":9007199254740992,"ms":9007199254740992},{"id":"far2","due_in_ms":9007199254740992,"ms":9007199254740992}]"#)
        #expect(h.snapshot.contains(#""remaining_ms":9007199254740992"#))
    }

    @Test func armingAnArmedIdReplacesIt() {
        // Debounce: each re-arm pushes the deadline back; it fires once.
        let h = counter()
        let recorder = h.record()
        #expect(h.after(100, TimeSeeds.bump(1), id: "save") == UF_OK)
        #expect(h.advance(60) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(2), id: "save") == UF_OK)
        #expect(h.timers == #"[{"id":"save","due_in_ms":100,"ms":100}]"#)
        #expect(h.advance(99) == UF_OK)
        #expect(recorder.mutations.isEmpty)
        #expect(h.advance(1) == UF_OK)
        #expect(n(h) == counted(2))
        #expect(recorder.mutations.count == 1)
        #expect(h.timers == "[]")
    }

    @Test func keepLeavesTheArmedTimerAsItIs() {
        // Throttle: at most one per window, the first action.
        let h = counter()
        #expect(h.after(100, TimeSeeds.bump(1), id: "tick", keep: true) == UF_OK)
        #expect(h.advance(60) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(2), id: "tick", keep: true) == UF_OK)
        #expect(h.timers == #"[{"id":"tick","due_in_ms":40,"ms":100}]"#)
        #expect(h.advance(40) == UF_OK)
        #expect(n(h) == counted(1))
        // Not armed any more: KEEP arms it.
        #expect(h.after(100, TimeSeeds.bump(3), id: "tick", keep: true) == UF_OK)
        #expect(h.timers == #"[{"id":"tick","due_in_ms":100,"ms":100}]"#)
    }

    @Test func cancellingDisarms() {
        let h = counter()
        #expect(h.after(100, TimeSeeds.bump(1), id: "save") == UF_OK)
        #expect(h.cancel("save") == UF_OK)
        #expect(h.timers == "[]")
        #expect(h.advance(1000) == UF_OK)
        #expect(n(h) == counted(0))
        #expect(h.cancel("save") == UF_ENOTFOUND)
        #expect(h.lastStatus == UF_ENOTFOUND)
        #expect(h.lastError == "no armed timer with id 'save'")
        #expect(h.cancel("") == UF_ENOTFOUND)
        #expect(h.lastError == "no armed timer with id ''")
        #expect(uf_timer_cancel(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_timer_cancel: timer_id is NULL")
    }

    @Test func aStateTimersIdCannotBeCancelled() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.cancel("Download.Running.after[0]") == UF_EMISUSE)
        #expect(h.lastError == "uf_timer_cancel: 'Download.Running.after[0]' is a state timer: it is disarmed when its state is left")
        #expect(h.timers == #"[{"id":"Download.Running.after[0]","due_in_ms":100,"ms":100},{"id":"Download.Running.after[1]","due_in_ms":250,"ms":250}]"#)
        // Shaped like one, armed or not.
        #expect(h.cancel("Nothing.Here.after[7]") == UF_EMISUSE)
        #expect(h.lastError == "uf_timer_cancel: 'Nothing.Here.after[7]' is a state timer: it is disarmed when its state is left")
    }

    @Test func anonymousTimersAreListedWithANullId() {
        let h = counter()
        h.captureReports()
        let recorder = h.record()
        #expect(h.after(20, TimeSeeds.bump(1)) == UF_OK)
        #expect(h.after(10, TimeSeeds.bump(2)) == UF_OK)
        #expect(h.timers == #"[{"id":null,"due_in_ms":10,"ms":10},{"id":null,"due_in_ms":20,"ms":20}]"#)
        #expect(h.advance(20) == UF_OK)
        #expect(n(h) == counted(1))
        #expect(h.reports("timer_fired") == [
            #"{"event":"timer_fired","action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":null},"timer":null}"#,
            #"{"event":"timer_fired","action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":null},"timer":null}"#,
        ])
        #expect(recorder.mutations.map { $0.hasSuffix(#""action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":null}}"#) } == [true, true])
    }

    @Test func dispatchAfterCopiesTheStruct() {
        let h = counter()
        let feature = strdup("Counter")!, state = strdup("Counting")!, payload = strdup(#"{"n":7}"#)!
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_ACTUALIZE
        a.feature = UnsafePointer(feature)
        a.into = UnsafePointer(state)
        a.payload_json = UnsafePointer(payload)
        a.id = UnsafePointer(strdup("by-struct"))
        #expect(uf_dispatch_after(h.d, &a, 30, "s", 0) == UF_OK)
        // The library copied everything it needs.
        strcpy(payload, #"{"n":8}"#)
        strcpy(feature, "Nopeeee")
        #expect(h.timers == #"[{"id":"s","due_in_ms":30,"ms":30}]"#)
        h.captureReports()
        #expect(h.advance(30) == UF_OK)
        #expect(n(h) == counted(7))
        #expect(h.reports[1] == #"{"event":"processed","action":{"kind":"actualize","feature":"Counter","in":"Counting","id":"by-struct","timer":"s"}}"#)
        free(feature); free(state); free(payload); free(UnsafeMutablePointer(mutating: a.id))
    }

    @Test func dispatchAfterKeepsNoPayloadTheActionDidNotCarry() {
        // Defaults are filled in when it fires, as for the same action armed as JSON.
        let h = Harness.manual("", #"{"feature": "Lamp", "states": {"On": {"fields": {"level": {"type": "integer", "default": 3}}}}}"#)
        var shown: [String] = []
        h.intercept("Lamp") { a in shown.append(String(cString: uf_intercepted_json(a))); return 0 }
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_INITIALIZE
        a.feature = UnsafePointer(strdup("Lamp"))
        a.into = UnsafePointer(strdup("On"))
        #expect(uf_dispatch_after(h.d, &a, 5, "struct", 0) == UF_OK)
        #expect(h.snapshot.contains(#""action":{"kind":"initialize","feature":"Lamp","into":"On"}"#))
        #expect(h.advance(5) == UF_OK)
        #expect(shown == [#"{"kind":"initialize","feature":"Lamp","into":"On","timer":"struct"}"#])
        #expect(h.feature("Lamp") == #"{"state":"On","payload":{"level":3}}"#)
        free(UnsafeMutablePointer(mutating: a.feature)); free(UnsafeMutablePointer(mutating: a.into))
    }

    @Test func dispatchAfterRefusesAViaAndReleasesItsPayloadOnce() {
        let h = counter()
        let freed = FreeCounter()
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_ACTUALIZE
        a.feature = UnsafePointer(strdup("Counter"))
        a.into = UnsafePointer(strdup("Counting"))
        a.via = { _, _ in 0 }
        a.via_payload = Unmanaged.passRetained(Box<Int>(0, freed: freed)).toOpaque()
        a.via_payload_free = releaseBox
        #expect(uf_dispatch_after(h.d, &a, 10, nil, 0) == UF_EINVAL)
        #expect(h.lastError == "uf_dispatch_after: a timer's action cannot have a via callback")
        #expect(freed.count == 1)
        #expect(h.timers == "[]")
        // A bad struct is refused as uf_dispatch refuses it.
        a.via = nil
        a.via_payload = nil
        a.via_payload_free = nil
        a.kind = uf_action_kind(rawValue: 42)
        #expect(uf_dispatch_after(h.d, &a, 10, nil, 0) == UF_EINVAL)
        #expect(uf_dispatch_after(h.d, nil, 10, nil, 0) == UF_EINVAL)
        #expect(h.lastError == "uf_dispatch_after: action is NULL")
        #expect(h.timers == "[]")
        free(UnsafeMutablePointer(mutating: a.feature)); free(UnsafeMutablePointer(mutating: a.into))
    }

    /// What a payload_free saw when it tried to arm a timer during uf_dispatcher_free.
    final class ArmOnFree {
        var d: OpaquePointer?
        var results: [String] = []
    }

    @Test func armingFromAPayloadFreeWhileTheDispatcherIsFreedIsMisuse() {
        let probe = ArmOnFree()
        var d: OpaquePointer?
        #expect(uf_dispatcher_new(&d, #"{"clock":"manual"}"#) == UF_OK)
        #expect(uf_register(d, TimeSeeds.counter) == UF_OK)
        probe.d = d
        #expect(uf_subscribe(d, nil, { _, _ in 0 }, Unmanaged.passRetained(probe).toOpaque(), { payload in
            let probe = Unmanaged<ArmOnFree>.fromOpaque(payload!).takeRetainedValue()
            let json = #"{"kind":"initialize","feature":"Counter","into":"Counting","payload":{"n":1}}"#
            let status = uf_submit_after(probe.d, json, 0, "late", 0)
            probe.results.append("\(uf_status_name(status).map { String(cString: $0) } ?? "") \(String(cString: uf_last_error()))")
            var a = uf_action()
            a.size = UInt32(MemoryLayout<uf_action>.size)
            a.kind = UF_ACTION_TRIGGER
            let feature = strdup("Counter")
            a.feature = UnsafePointer(feature)
            a.uninitialized = 1
            let status2 = uf_dispatch_after(probe.d, &a, 0, nil, 0)
            probe.results.append("\(uf_status_name(status2).map { String(cString: $0) } ?? "") \(String(cString: uf_last_error()))")
            free(feature)
        }, nil) == UF_OK)
        uf_dispatcher_free(d)
        #expect(probe.results == ["UF_EMISUSE uf_submit_after: the dispatcher is being freed",
                                  "UF_EMISUSE uf_dispatch_after: the dispatcher is being freed"])
    }

    @Test func timersListSoonestFirstTiesInArmOrder() {
        let h = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(250, TimeSeeds.bump(1), id: "b") == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "a") == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.after(5, TimeSeeds.bump(1)) == UF_OK)
        #expect(h.timers == #"[{"id":null,"due_in_ms":5,"ms":5},{"id":"a","due_in_ms":100,"ms":100},{"id":"Download.Running.after[0]","due_in_ms":100,"ms":100},{"id":"b","due_in_ms":250,"ms":250},{"id":"Download.Running.after[1]","due_in_ms":250,"ms":250}]"#)
        #expect(h.advance(3) == UF_OK)
        #expect(h.timers == #"[{"id":null,"due_in_ms":2,"ms":5},{"id":"a","due_in_ms":97,"ms":100},{"id":"Download.Running.after[0]","due_in_ms":97,"ms":100},{"id":"b","due_in_ms":247,"ms":250},{"id":"Download.Running.after[1]","due_in_ms":247,"ms":250}]"#)
        var out: UnsafeMutablePointer<CChar>? = nil
        #expect(uf_timers_get(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_timers_get: out_json is NULL")
        #expect(uf_timers_get(nil, &out) == UF_EINVAL)
    }

    @Test func aMillionTimersCanBeArmedAndAHundredThousandFireInOneAdvance() {
        let h = counter()
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_TRIGGER
        a.feature = UnsafePointer(strdup("Counter"))
        a.from = UnsafePointer(strdup("Counting"))
        var failures = 0
        // 100,000 due in 1 ms, 900,000 in an hour.
        for i in 0..<1_000_000 where uf_dispatch_after(h.d, &a, i < 100_000 ? 1 : 3_600_000, nil, 0) != UF_OK { failures += 1 }
        #expect(failures == 0)
        let processed = UnsafeMutablePointer<Int>.allocate(capacity: 1)
        processed.pointee = 0
        uf_set_reporter(h.d, { text, payload in
            if strncmp(text!, #"{"event":"processed""#, 20) == 0 { payload!.assumingMemoryBound(to: Int.self).pointee += 1 }
        }, processed, nil)
        // The 100,000 firings at 1 ms count together toward max_cascade (100,000 by
        // default): they are exactly within it.
        #expect(h.advance(1) == UF_OK)
        #expect(processed.pointee == 100_000)
        uf_set_reporter(h.d, nil, nil, nil)
        processed.deallocate()
        // 900,000 left, the soonest first.
        let list = h.timers
        let one = #"{"id":null,"due_in_ms":3599999,"ms":3600000}"#
        #expect(list.hasPrefix("[" + one + ","))
        #expect(list.utf8.count == 900_000 * (one.utf8.count + 1) + 1)
        free(UnsafeMutablePointer(mutating: a.feature)); free(UnsafeMutablePointer(mutating: a.from))
    }
}

/// The firing rules, both kinds of timer (docs/time.md, "When timers fire").
@Suite struct FiringRuleTests {
    @Test func aZeroDelayNeverFiresInsideTheCallThatArmsIt() {
        let h = Harness.manual("", Seeds.toggle)
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(h.after(0, #"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        #expect(h.timers == #"[{"id":null,"due_in_ms":0,"ms":0}]"#)
        // Armed inside a callback, it does not fire inside that outer call either.
        var status: Int32 = 99
        h.subscribe("TransitionInto<Toggle.On>") { m in
            status = uf_submit_after(uf_mutation_dispatcher(m), #"{"kind":"transition","feature":"Toggle","into":"Off"}"#, 0, "back", 0)
            return 0
        }
        #expect(h.advance(0) == UF_OK)
        #expect(status == UF_OK)
        // It was due at once, at the same instant, and fired in the same advance:
        // a timer's cascade goes on firing what its own actions armed.
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        #expect(status == UF_OK)
        #expect(h.state == #"{"Toggle":{"state":"On","payload":{}}}"#)
        #expect(h.timers == #"[{"id":"back","due_in_ms":0,"ms":0}]"#)
        #expect(h.advance(0) == UF_OK)
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        #expect(h.timers == "[]")
    }

    @Test func timersDueAtOneInstantFireInArmOrder() {
        let h = Harness.manual("", TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        let recorder = h.record()
        #expect(h.after(100, TimeSeeds.bump(3), id: "c") == UF_OK)
        #expect(h.advance(40) == UF_OK)
        #expect(h.after(60, TimeSeeds.bump(1), id: "a") == UF_OK)
        #expect(h.after(60, TimeSeeds.bump(2)) == UF_OK)
        // Replacing "c" arms it anew: it is now the last armed.
        #expect(h.after(60, TimeSeeds.bump(4), id: "c") == UF_OK)
        #expect(h.advance(1000) == UF_OK)
        #expect(recorder.mutations.map { String($0.split(separator: "}")[1].suffix(1)) } == ["1", "2", "4"])
    }

    @Test func chainsCountFromTheFiringDeadlineAndDoNotDrift() {
        // A subscriber re-arms a 100 ms timer each time it fires. However the clock
        // is advanced, the firings happen at 100, 200, 300, ...
        for steps: [UInt64] in [[1000], [150, 150, 150, 150, 150, 150, 100], [99, 1, 333, 567]] {
            let h = Harness.manual("", TimeSeeds.counter)
            #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
            var times: [UInt64] = []
            var next = 1
            h.subscribe("ActualizationIn<Counter.Counting>") { m in
                let d = uf_mutation_dispatcher(m)!
                var now: UInt64 = 0
                uf_clock_now(d, &now)
                times.append(now)
                next += 1
                uf_submit_after(d, TimeSeeds.bump(next), 100, "tick", 0)
                return 0
            }
            #expect(h.after(100, TimeSeeds.bump(1), id: "tick") == UF_OK)
            for step in steps { #expect(h.advance(step) == UF_OK) }
            #expect(times == [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000], "steps \(steps)")
            #expect(h.timers == #"[{"id":"tick","due_in_ms":100,"ms":100}]"#)
            #expect(h.now == 1000)
        }
    }

    @Test func stateTimerChainsDoNotDriftEither() {
        // A state whose timer re-enters it: a heartbeat every 100 ms.
        let h = Harness.manual("", #"""
        {"feature": "Beat", "states": {"On": {"fields": {"n": "integer"},
            "after": [{"ms": 100, "submit": [{"kind": "transition", "feature": "Beat", "into": "On", "same": true,
                                                "payload": {"n": {"$": {"+": [{"var": "model.Beat.payload.n"}, 1]}}}}]}]}}}
        """#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Beat","into":"On","payload":{"n":0}}"#) == UF_OK)
        var times: [UInt64] = []
        h.subscribe(nil) { m in
            var now: UInt64 = 0
            uf_clock_now(uf_mutation_dispatcher(m), &now)
            times.append(now)
            return 0
        }
        #expect(h.advance(250) == UF_OK)
        #expect(h.advance(251) == UF_OK)
        #expect(times == [100, 200, 300, 400, 500])
        #expect(h.state == #"{"Beat":{"state":"On","payload":{"n":5}}}"#)
        #expect(h.timers == #"[{"id":"Beat.On.after[0]","due_in_ms":99,"ms":100}]"#)
    }

    @Test func aZeroDelayChainAtOneInstantStopsAtMaxCascade() {
        let h = Harness.manual(#""max_cascade":10"#, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        var count = 0
        h.subscribe(nil) { m in
            count += 1
            uf_submit_after(uf_mutation_dispatcher(m), TimeSeeds.bump(count), 0, "again", 0)
            return 0
        }
        h.captureReports()
        #expect(h.after(0, TimeSeeds.bump(0), id: "again") == UF_OK)
        #expect(h.advance(0) == UF_OK)
        // Ten firings, one action each, then the eleventh due timer is dropped.
        #expect(count == 10)
        #expect(h.reports("timer_fired").count == 10)
        #expect(h.reports("dropped") == [
            #"{"event":"dropped","action":{"kind":"actualize","feature":"Counter","in":"Counting","timer":"again"},"status":"UF_ELOOP","reason":"cascade limit of 10 actions reached at one instant; timer dropped","timer":"again"}"#,
        ])
        #expect(h.timers == "[]")
        #expect(h.feature("Counter") == #"{"state":"Counting","payload":{"n":9}}"#)
        // The next instant has a budget of its own.
        h.reports.removeAll()
        #expect(h.after(5, TimeSeeds.bump(100), id: "again") == UF_OK)
        #expect(h.advance(5) == UF_OK)
        #expect(count == 20)
        #expect(h.reports("dropped").count == 1)
    }

    @Test func aTimerCancelledBeforeItsFiringNeverFiresEvenIfDue() {
        // Two timers due at the same instant: the first one's subscriber cancels the
        // second, which was due already.
        let h = Harness.manual("", TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        var cancelled: Int32 = 99
        h.subscribe(nil) { m in
            if cancelled == 99 { cancelled = uf_timer_cancel(uf_mutation_dispatcher(m), "second") }
            return 0
        }
        #expect(h.after(100, TimeSeeds.bump(1), id: "first") == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(2), id: "second") == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(3), id: "third") == UF_OK)
        #expect(h.advance(500) == UF_OK)
        #expect(cancelled == UF_OK)
        #expect(h.feature("Counter") == #"{"state":"Counting","payload":{"n":3}}"#)
        // Replaced before its firing: it fires at its new deadline only.
        var replaced: Int32 = 99
        let h2 = Harness.manual("", TimeSeeds.counter)
        #expect(h2.submit(TimeSeeds.startCounter) == UF_OK)
        let recorder = h2.record()
        h2.subscribe(nil) { m in
            if replaced == 99 { replaced = uf_submit_after(uf_mutation_dispatcher(m), TimeSeeds.bump(20), 50, "second", 0) }
            return 0
        }
        #expect(h2.after(100, TimeSeeds.bump(1), id: "first") == UF_OK)
        #expect(h2.after(100, TimeSeeds.bump(2), id: "second") == UF_OK)
        #expect(h2.advance(100) == UF_OK)
        #expect(replaced == UF_OK)
        #expect(h2.feature("Counter") == #"{"state":"Counting","payload":{"n":1}}"#)
        #expect(h2.timers == #"[{"id":"second","due_in_ms":50,"ms":50}]"#)
        #expect(h2.advance(50) == UF_OK)
        #expect(h2.feature("Counter") == #"{"state":"Counting","payload":{"n":20}}"#)
        #expect(recorder.mutations.count == 2)
        // A state timer disarmed by an action at the same instant does not fire.
        let h3 = Harness.manual("", TimeSeeds.download)
        #expect(h3.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h3.after(100, #"{"kind":"transition","feature":"Download","from":"Running","into":"Idle"}"#) == UF_OK)
        #expect(h3.advance(100) == UF_OK)
        // The state timer was armed first and fired first (Failed); the API timer's
        // transition from Running was then rejected.
        #expect(h3.state == #"{"Download":{"state":"Failed","payload":{"reason":"stalled"}}}"#)
    }

    @Test func aRolledBackBatchThatEnteredATimedStateArmsNothing() {
        let h = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Idle"}"#) == UF_OK)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(70, TimeSeeds.bump(1), id: "keep") == UF_OK)
        let before = h.timers
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":0}},
         {"kind":"actualize","feature":"Download","in":"Running","payload":{"progress":1}},
         {"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":2}}]
        """#) == UF_REJECTED)
        #expect(h.lastError == "batch[2]: Download is in state Running, not Idle")
        #expect(h.timers == before)
        #expect(h.advance(1000) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Idle","payload":{}},"Counter":{"state":"Counting","payload":{"n":1}}}"#)
    }

    @Test func aRolledBackBatchThatLeftATimedStateKeepsItsTimers() {
        let h = Harness.manual("", TimeSeeds.download)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        #expect(h.advance(30) == UF_OK)
        let before = h.timers
        // Leaves Running, comes back (re-arming), actualizes, then fails.
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"transition","feature":"Download","from":"Running","into":"Idle"},
         {"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":1}},
         {"kind":"actualize","feature":"Download","in":"Running","payload":{"progress":2}},
         {"kind":"deinitialize","feature":"Download","from":"Idle"}]
        """#) == UF_REJECTED)
        #expect(h.timers == before)
        #expect(h.timers == #"[{"id":"Download.Running.after[0]","due_in_ms":70,"ms":100},{"id":"Download.Running.after[1]","due_in_ms":220,"ms":250}]"#)
        #expect(h.advance(70) == UF_OK)
        #expect(h.state == #"{"Download":{"state":"Failed","payload":{"reason":"stalled"}}}"#)
    }

    @Test func aRolledBackBatchUndoesWhatInterceptorsDidToApiTimers() {
        // An interceptor arms, replaces and cancels API timers while a batch
        // applies, then vetoes its last action: every timer is as it was.
        let h = Harness.manual("", TimeSeeds.counter, Seeds.toggle)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "replaced") == UF_OK)
        #expect(h.after(200, TimeSeeds.bump(2), id: "cancelled") == UF_OK)
        #expect(h.advance(10) == UF_OK)
        let before = h.timers
        var statuses: [Int32] = []
        h.intercept("Toggle") { a in
            let d = uf_intercepted_dispatcher(a)!
            if String(cString: uf_intercepted_state(a)) == "Off" {
                statuses.append(uf_submit_after(d, TimeSeeds.bump(3), 5, "replaced", 0))
                statuses.append(uf_timer_cancel(d, "cancelled"))
                statuses.append(uf_submit_after(d, TimeSeeds.bump(4), 5, "new", 0))
                statuses.append(uf_submit_after(d, TimeSeeds.bump(5), 5, nil, 0))
                return 0
            }
            return 1
        }
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"initialize","feature":"Toggle","into":"Off"},
         {"kind":"transition","feature":"Toggle","from":"Off","into":"On"}]
        """#) == UF_REJECTED)
        #expect(statuses == [UF_OK, UF_OK, UF_OK, UF_OK])
        #expect(h.timers == before)
        #expect(h.cancel("new") == UF_ENOTFOUND)
        let recorder = h.record()
        #expect(h.advance(1000) == UF_OK)
        #expect(recorder.mutations.count == 2)
        #expect(h.feature("Counter") == #"{"state":"Counting","payload":{"n":2}}"#)
        // The same batch without the veto keeps what the interceptor did.
        let h2 = Harness.manual("", TimeSeeds.counter, Seeds.toggle)
        #expect(h2.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h2.after(100, TimeSeeds.bump(1), id: "replaced") == UF_OK)
        #expect(h2.after(200, TimeSeeds.bump(2), id: "cancelled") == UF_OK)
        h2.intercept("Toggle") { a in
            let d = uf_intercepted_dispatcher(a)!
            uf_submit_after(d, TimeSeeds.bump(3), 5, "replaced", 0)
            uf_timer_cancel(d, "cancelled")
            return 0
        }
        #expect(uf_submit_batch(h2.d, #"[{"kind":"initialize","feature":"Toggle","into":"Off"}]"#) == UF_OK)
        #expect(h2.timers == #"[{"id":"replaced","due_in_ms":5,"ms":5}]"#)
    }

    @Test func aRolledBackBatchKeepsItsTimersWhenManyStaleEntriesAreCompacted() {
        // Cancelled timers leave stale entries behind; arming inside the batch may
        // compact them away. A state timer the batch disarmed must survive that.
        let h = Harness.manual("", TimeSeeds.download, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Running","payload":{"progress":0}}"#) == UF_OK)
        for i in 0..<2000 { #expect(h.after(1000, TimeSeeds.bump(1), id: "t\(i)") == UF_OK) }
        for i in 0..<2000 { #expect(h.cancel("t\(i)") == UF_OK) }
        let before = h.timers
        #expect(uf_submit_batch(h.d, #"""
        [{"kind":"transition","feature":"Download","from":"Running","into":"Idle"},
         {"kind":"transition","feature":"Download","from":"Idle","into":"Running","payload":{"progress":1}},
         {"kind":"deinitialize","feature":"Download","from":"Idle"}]
        """#) == UF_REJECTED)
        #expect(h.timers == before)
        #expect(h.advance(100) == UF_OK)
        #expect(h.feature("Download") == #"{"state":"Failed","payload":{"reason":"stalled"}}"#)
    }
}

/// The clock (docs/time.md, "The clock").
@Suite struct ClockTests {
    @Test func theManualClockMovesOnlyWhenAdvanced() {
        let h = Harness.manual("", Seeds.toggle)
        #expect(h.now == 0)
        #expect(h.advance(0) == UF_OK)
        #expect(h.now == 0)
        #expect(h.advance(150) == UF_OK)
        #expect(h.advance(UInt64(1) << 40) == UF_OK)
        #expect(h.now == 150 + (UInt64(1) << 40))
        var out: UInt64 = 0
        #expect(uf_clock_now(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_clock_now: out_ms is NULL")
        #expect(uf_clock_now(nil, &out) == UF_EINVAL)
        #expect(uf_clock_advance(nil, 1) == UF_EINVAL)
        #expect(h.lastError == "uf_clock_advance: dispatcher is NULL")
    }

    @Test func theManualClockStopsShortOf2To53Milliseconds() {
        let h = Harness.manual("", TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.advance(10) == UF_OK)
        #expect(h.after(100, TimeSeeds.bump(1), id: "t") == UF_OK)
        // Moving past 2^53 would wrap or lose exactness: refused, nothing fires.
        #expect(h.advance(.max) == UF_EINVAL)
        #expect(h.lastError == "uf_clock_advance: the clock reads 10 ms; moving it 18446744073709551615 ms would pass 2^53 ms")
        #expect(h.advance((UInt64(1) << 53) - 9) == UF_EINVAL)
        #expect(h.lastError == "uf_clock_advance: the clock reads 10 ms; moving it 9007199254740983 ms would pass 2^53 ms")
        #expect(h.now == 10)
        #expect(h.timers == #"[{"id":"t","due_in_ms":100,"ms":100}]"#)
        #expect(h.state == #"{"Counter":{"state":"Counting","payload":{"n":0}}}"#)
        #expect(h.advance((UInt64(1) << 53) - 10) == UF_OK)
        #expect(h.now == UInt64(1) << 53)
        #expect(h.state == #"{"Counter":{"state":"Counting","payload":{"n":1}}}"#)
        #expect(h.advance(0) == UF_OK)
        #expect(h.advance(1) == UF_EINVAL)
        #expect(h.now == UInt64(1) << 53)
    }

    @Test func theClockReadsEachTimersDeadlineWhileItFires() {
        let h = Harness.manual("", TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        var times: [UInt64] = []
        h.subscribe(nil) { m in
            var now: UInt64 = 0
            uf_clock_now(uf_mutation_dispatcher(m), &now)
            times.append(now)
            return 0
        }
        #expect(h.after(30, TimeSeeds.bump(1)) == UF_OK)
        #expect(h.after(70, TimeSeeds.bump(2)) == UF_OK)
        #expect(h.advance(500) == UF_OK)
        #expect(times == [30, 70])
        #expect(h.now == 500)
    }

    @Test func theMonotonicClockCountsFromTheDispatchersCreation() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        let first = h.now
        #expect(first < 5000)
        #expect(h.now >= first)
        #expect(h.advance(10) == UF_EMISUSE)
        #expect(h.lastError == #"uf_clock_advance needs a dispatcher made with "clock": "manual""#)
    }

    /// A delay of an hour counts from the coarse clock plus a tick, one of half a
    /// second from the precise clock: each deadline is its delay from now,
    /// within a few ticks for the first and a few milliseconds for the second.
    @Test func longDelaysCountFromTheCoarseClockShortOnesFromThePreciseOne() {
        let h = Harness(options: #"{"timers":"host"}"#, TimeSeeds.counter)
        #expect(h.submit(TimeSeeds.startCounter) == UF_OK)
        #expect(h.after(3_600_000, TimeSeeds.bump(1), id: "long") == UF_OK)
        #expect(h.after(500, TimeSeeds.bump(2), id: "short") == UF_OK)
        var remaining: [String: Int64] = [:]
        for timer in (try! JSONParser.parse(h.snapshot)).objectValue!["timers"]!.arrayValue! {
            guard case .string(let id)? = timer.objectValue?["id"], case .int(let ms)? = timer.objectValue?["remaining_ms"] else { continue }
            remaining[id] = ms
        }
        #expect(remaining.count == 2)
        #expect((3_600_000 - 50...3_600_000 + 50).contains(remaining["long"] ?? -1))
        #expect((450...500).contains(remaining["short"] ?? -1))
    }

    @Test func advancingInsideACallbackIsMisuse() {
        let h = Harness.manual("", Seeds.toggle)
        var status: Int32 = 99
        var message = ""
        h.subscribe(nil) { m in
            status = uf_clock_advance(uf_mutation_dispatcher(m), 10)
            message = String(cString: uf_last_error())
            return 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(status == UF_EMISUSE)
        #expect(message == "uf_clock_advance is not allowed inside a callback of the same dispatcher")
        #expect(h.now == 0)
        // Inside a timer-caused callback too.
        status = 99
        #expect(h.after(5, #"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        #expect(h.advance(5) == UF_OK)
        #expect(status == UF_EMISUSE)
        #expect(h.now == 5)
    }

    @Test func badClockAndTimerOptionsAreRefused() {
        var d: OpaquePointer?
        #expect(uf_dispatcher_new(&d, #"{"clock":"sundial"}"#) == UF_EINVAL)
        #expect(d == nil)
        #expect(uf_dispatcher_new(&d, #"{"timers":"cron"}"#) == UF_EINVAL)
        #expect(uf_dispatcher_new(&d, #"{"deferred_limit":0}"#) == UF_EINVAL)
        #expect(uf_dispatcher_new(&d, #"{"deferred_limit":"1"}"#) == UF_EINVAL)
        #expect(uf_dispatcher_new(&d, #"{"clock":"manual","timers":"host","deferred_limit":1}"#) == UF_OK)
        uf_dispatcher_free(d)
    }
}
