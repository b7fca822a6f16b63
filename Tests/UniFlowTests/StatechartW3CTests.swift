import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// Ideas of the W3C SCXML test suite, ported to this definition language; each
// test is named `w3c<N>_…` after the test it comes from. Where SCXML and XState
// v5 differ, the test checks XState's behaviour (it says so). Tests 403, 403a,
// 404-406, 416, 417, 419, 421, 388, 505, 533 and 579 are in StatechartTests.swift.

/// A service that counts its starts and stops and keeps the inputs it was given.
private final class Counted {
    var inputs: [String] = []
    var stops = 0
}

private func registerCounted(_ h: Harness, _ name: String, _ counted: Counted) {
    let box = Box<Counted>(counted, freed: FreeCounter())
    let status = uf_register_service(h.d, name, { inv, payload in
        Unmanaged<Box<Counted>>.fromOpaque(payload!).takeUnretainedValue().value.inputs.append(String(cString: uf_invocation_input_json(inv)))
        return 0
    }, { _, payload in
        Unmanaged<Box<Counted>>.fromOpaque(payload!).takeUnretainedValue().value.stops += 1
        return 0
    }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
    precondition(status == UF_OK, "uf_register_service: \(h.lastError)")
}

@Suite struct StatechartW3CTests {
    // MARK: Internal events and their order

    /// W3C 144: events raised by one block go on the internal queue in the order raised.
    @Test func w3c144_raisedEventsAreTakenInTheOrderRaised() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "A": {"entry": [{"send": "foo"}, {"send": "bar"}], "on": {"foo": "B", "bar": "Fail"}},
           "B": {"on": {"bar": "Pass", "foo": "Fail"}},
           "Pass": {}, "Fail": {}}}
        """#)
        #expect(c.start("A") == UF_OK, "\(c.h.lastError)")
        #expect(c.state == "Pass")
    }

    /// W3C 423: internal events come before external ones, even when the
    /// external one was queued first (here an action submitted by an effect).
    @Test func w3c423_internalEventsComeBeforeQueuedActions() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "A": {"entry": [{"submit": [{"kind": "send", "feature": "C", "event": "outer"}]}, {"send": "inner"}],
                 "on": {"inner": "B", "outer": "Fail"}},
           "B": {"on": {"outer": "Pass"}},
           "Pass": {}, "Fail": {}}}
        """#)
        #expect(c.start("A") == UF_OK, "\(c.h.lastError)")
        #expect(c.state == "Pass")
    }

    /// W3C 185/186: a delayed send arrives after the events sent without delay,
    /// and its payload is what it was when it was sent, not when it arrives.
    @Test func w3c185_186_aDelayedSendComesLaterWithThePayloadOfItsSending() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"n": {"type": "integer", "default": 1}},
         "states": {
           "A": {"entry": [{"send": "late", "delay": 100, "payload": {"n": {"$": {"var": "feature.payload.n"}}}},
                           {"send": "now"}, {"assign": {"n": 2}}],
                 "on": {"now": "B", "late": "Fail"}},
           "B": {"on": {"late": [{"into": "Pass", "if": {"==": [{"var": "event.payload.n"}, 1]}}, {"into": "Fail"}]}},
           "Pass": {}, "Fail": {}}}
        """#, options: #"{"clock":"manual"}"#)
        #expect(c.start("A") == UF_OK, "\(c.h.lastError)")
        #expect(c.state == "B")
        #expect(c.payload == #"{"n":2}"#)
        #expect(uf_clock_advance(c.h.d, 99) == UF_OK)
        #expect(c.state == "B")
        #expect(uf_clock_advance(c.h.d, 1) == UF_OK)
        #expect(c.state == "Pass")
    }

    // MARK: Selection

    /// W3C 147/148: of an event's guarded targets, the first whose guard holds
    /// is taken, and only its actions run (if/elseif); an unguarded last target
    /// is taken when none holds (else).
    @Test func w3c147_148_theFirstTargetWhoseGuardHoldsIsTheOnlyOneTaken() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"n": {"type": "integer", "default": 1}},
         "states": {"A": {"on": {"go": [
            {"into": "One", "if": {"==": [{"var": "feature.payload.n"}, 1]}, "actions": [\#(logged("one"))]},
            {"into": "Also", "if": {">=": [{"var": "feature.payload.n"}, 1]}, "actions": [\#(logged("also"))]},
            {"into": "Else", "actions": [\#(logged("else"))]}]}},
           "One": {"on": {"back": {"into": "A", "actions": [{"assign": {"n": 0}}]}}}, "Also": {}, "Else": {}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("go") == UF_OK)
        #expect(c.state == "One")
        #expect(c.log == ["one"])
        #expect(c.send("back") == UF_OK)
        #expect(c.send("go") == UF_OK)
        #expect(c.state == "Else")
        #expect(c.log == ["one", "else"])
    }

    /// W3C 396: a guard sees the name of the event it is offered.
    @Test func w3c396_guardsSeeTheEventsName() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "A": {"on": {"foo": [{"into": "Fail", "if": {"!=": [{"var": "event.name"}, "foo"]}}, {"into": "Pass"}]}},
           "Pass": {}, "Fail": {}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("foo") == UF_OK)
        #expect(c.state == "Pass")
    }

    /// W3C 403b (with eventless transitions): when two selected transitions
    /// conflict, the one whose source is a descendant of the other's wins, even
    /// when the ancestor's was selected first.
    @Test func w3c403b_aDescendantsTransitionPreemptsItsAncestors() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "P": {"type": "parallel", "always": {"into": "Out"}, "states": {
             "R1": {"initial": "A", "states": {"A": {}}},
             "R2": {"initial": "B1", "states": {"B1": {"always": {"into": "B2"}}, "B2": {"entry": [\#(logged("enter B2"))]}}}}},
           "Out": {}}}
        """#)
        let recorder = c.h.record()
        #expect(c.start("P") == UF_OK, "\(c.h.lastError)")
        // B1's transition won the first microstep; P's took the next one.
        #expect(c.log == ["enter B2"])
        #expect(c.state == "Out")
        #expect(recorder.mutations.count == 3)
    }

    // MARK: Effects and events during a microstep

    /// W3C 159: an effect that fails stops the effects after it, and the whole
    /// macrostep is undone.
    @Test func w3c159_anEffectThatFailsStopsTheRest() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "A": {"on": {"go": {"into": "B", "actions": [\#(logged("before")), {"call": "fail"}, \#(logged("after"))]}}},
           "B": {}}}
        """#) { h in registerHandler(h, "fail") { _ in -1 } }
        #expect(c.start("A") == UF_OK)
        #expect(c.send("go") == UF_ECALLBACK)
        #expect(c.h.lastError == "C: event 'go': handler 'fail' failed (returned -1)")
        #expect(c.log == ["before"])
        #expect(c.state == "A")
    }

    /// W3C 318: the event stays bound while the entry effects of its
    /// transition's targets run.
    @Test func w3c318_entryEffectsSeeTheEventThatEnteredTheirState() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"x": {"type": "integer", "default": 0}},
         "states": {"A": {"on": {"go": "B"}},
                    "B": {"entry": [{"assign": {"x": {"$": {"var": "event.payload.x"}}}}]}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(uf_send(c.h.d, "C", nil, "go", #"{"x": 5}"#) == UF_OK, "\(c.h.lastError)")
        #expect(c.payload == #"{"x":5}"#)
    }

    /// W3C 375/377: entry effects run in document order, a parent's before its
    /// child's; exit effects in document order, a child's before its parent's.
    @Test func w3c375_377_entryAndExitEffectsRunInDocumentOrder() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "P": {"initial": "Q", "entry": [\#(logged("enter P 1")), \#(logged("enter P 2"))],
                 "exit": [\#(logged("exit P 1")), \#(logged("exit P 2"))], "on": {"out": "Out"},
                 "states": {"Q": {"entry": [\#(logged("enter Q"))], "exit": [\#(logged("exit Q"))]}}},
           "Out": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("out") == UF_OK)
        #expect(c.log == ["enter P 1", "enter P 2", "enter Q", "exit Q", "exit P 1", "exit P 2"])
    }

    // MARK: Transition domains

    /// W3C 503: a transition without a target exits and enters nothing; only
    /// its actions run.
    @Test func w3c503_aTargetlessTransitionExitsNothing() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "P": {"initial": "Q", "entry": [\#(logged("enter P"))], "exit": [\#(logged("exit P"))],
                 "on": {"t": {"actions": [\#(logged("t"))]}},
                 "states": {"Q": {"entry": [\#(logged("enter Q"))], "exit": [\#(logged("exit Q"))]}}}}}
        """#)
        #expect(c.start("P") == UF_OK)
        c.log = []
        let recorder = c.h.record()
        #expect(c.send("t") == UF_OK)
        #expect(c.log == ["t"])
        #expect(c.state == "P.Q")
        #expect(recorder.mutations.count == 1)
        #expect(recorder.mutations[0].contains(#""kind":"actualization""#))
    }

    /// W3C 506, as XState decides it: a transition whose only target is its
    /// own source, without `reenter`, exits and enters the source's descendants
    /// but not the source (SCXML would exit and enter the source too).
    @Test func w3c506_aTransitionIntoItsOwnSourceKeepsTheSourceActive() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "S": {"initial": "A", "entry": [\#(logged("enter S"))], "exit": [\#(logged("exit S"))],
                 "on": {"reset": "S", "restart": {"into": "S", "reenter": true}},
                 "states": {"A": {"entry": [\#(logged("enter A"))], "on": {"next": "B"}},
                            "B": {"exit": [\#(logged("exit B"))]}}}}}
        """#)
        #expect(c.start("S") == UF_OK)
        #expect(c.send("next") == UF_OK)
        c.log = []
        #expect(c.send("reset") == UF_OK)
        #expect(c.state == "S.A")
        #expect(c.log == ["exit B", "enter A"])
        c.log = []
        #expect(c.send("restart") == UF_OK)
        #expect(c.log == ["exit S", "enter S", "enter A"])
    }

    // MARK: Final states and done events

    /// W3C 294: a final state's output reaches its parent's `onDone` as the
    /// done event's `output`.
    @Test func w3c294_aFinalStatesOutputIsTheDoneEventsOutput() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"got": {"type": "integer", "default": 0}},
         "states": {
           "P": {"initial": "A", "onDone": {"into": "Done", "actions": [{"assign": {"got": {"$": {"var": "event.payload.output.v"}}}}]},
                 "states": {"A": {"on": {"end": "F"}}, "F": {"type": "final", "output": {"v": 7}}}},
           "Done": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("end") == UF_OK, "\(c.h.lastError)")
        #expect(c.state == "Done")
        #expect(c.payload == #"{"got":7}"#)
    }

    /// W3C 372: a final state's entry effects run before its parent's done
    /// event is taken, and its exit effects when that event leaves it.
    @Test func w3c372_aFinalStateIsEnteredBeforeTheDoneEventIsTaken() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "P": {"initial": "A", "onDone": {"into": "Out", "actions": [\#(logged("done"))]},
                 "states": {"A": {"on": {"end": "F"}},
                            "F": {"type": "final", "entry": [\#(logged("enter F"))], "exit": [\#(logged("exit F"))]}}},
           "Out": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("end") == UF_OK)
        #expect(c.log == ["enter F", "exit F", "done"])
        #expect(c.state == "Out")
    }

    /// W3C 570: when one event makes every region of a parallel state final,
    /// each region's done event comes first, in document order, then the
    /// parallel state's.
    @Test func w3c570_regionsAreDoneBeforeTheirParallelState() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "P": {"type": "parallel", "onDone": {"into": "Out", "actions": [\#(logged("P"))]}, "states": {
             "R1": {"initial": "A", "onDone": {"actions": [\#(logged("R1"))]},
                    "states": {"A": {"on": {"e": "F1"}}, "F1": {"type": "final"}}},
             "R2": {"initial": "B", "onDone": {"actions": [\#(logged("R2"))]},
                    "states": {"B": {"on": {"e": "F2"}}, "F2": {"type": "final"}}}}},
           "Out": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("e") == UF_OK)
        #expect(c.log == ["R1", "R2", "P"])
        #expect(c.state == "Out")
    }

    // MARK: History

    /// W3C 387: a deep history state's `default` may name a state deep inside
    /// its parent, entered when the history remembers nothing.
    @Test func w3c387_aDeepHistoryDefaultEntersADeepState() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "Off": {"on": {"back": "On.H"}},
           "On": {"initial": "A", "on": {"off": "Off"}, "states": {
             "A": {"initial": "A1", "states": {"A1": {"on": {"next": "A2"}}, "A2": {}}},
             "H": {"type": "history", "history": "deep", "default": "On.A.A2"}}}}}
        """#)
        #expect(c.start("Off") == UF_OK)
        #expect(c.send("back") == UF_OK)
        #expect(c.state == "On.A.A2")
    }

    /// W3C 580: a history state is never active: not in the configuration, not
    /// in `entered`, not active for `uf_state_active` or guards.
    @Test func w3c580_aHistoryStateIsNeverActive() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "Off": {"on": {"back": "On.H", "check": [{"into": "Fail", "call": {"in": "On"}}, {"into": "Off2"}]}},
           "Off2": {},
           "On": {"initial": "A", "on": {"off": "Off"}, "states": {"A": {}, "H": {"type": "history"}}},
           "Fail": {}}}
        """#)
        let recorder = c.h.record()
        #expect(c.start("On") == UF_OK)
        #expect(c.send("off") == UF_OK)
        #expect(c.send("back") == UF_OK)
        #expect(recorder.mutations.last?.contains(#""entered":["On","On.A"]"#) == true)
        var active: Int32 = -1
        #expect(uf_state_active(c.h.d, "C", nil, "On.H", &active) == UF_OK)
        #expect(active == 0)
        #expect(uf_state_active(c.h.d, "C", nil, "On.A", &active) == UF_OK)
        #expect(active == 1)
    }

    // MARK: Services

    /// W3C 422: a service starts at the end of the macrostep, and only for
    /// invoking states still active then: one entered and left within the
    /// macrostep never starts.
    @Test func w3c422_onlyStatesStillActiveAfterTheMacrostepInvoke() {
        let h = Harness()
        let counted = Counted()
        registerCounted(h, "svc", counted)
        #expect(uf_register(h.d, #"""
        {"feature": "C", "states": {
           "A": {"on": {"go": "Pass1"}},
           "Pass1": {"invoke": {"src": "svc", "id": "one"}, "always": {"into": "Stay"}},
           "Stay": {"invoke": {"src": "svc", "id": "two"}}}}
        """#) == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#)
        #expect(uf_send(h.d, "C", nil, "go", nil) == UF_OK)
        #expect(counted.inputs.count == 1)
        #expect(counted.stops == 0)
        #expect(h.feature("C") == #"{"state":"Stay","payload":{},"invocations":[{"id":"two","src":"svc","input":null}]}"#)
    }

    /// W3C 526/530: a service's input is evaluated when it starts, after the
    /// macrostep's effects.
    @Test func w3c526_aServicesInputIsEvaluatedWhenItStarts() {
        let h = Harness()
        let counted = Counted()
        registerCounted(h, "svc", counted)
        #expect(uf_register(h.d, #"""
        {"feature": "C", "fields": {"n": {"type": "integer", "default": 1}},
         "states": {
           "A": {"on": {"go": "Work"}},
           "Work": {"entry": [{"assign": {"n": 2}}], "invoke": {"src": "svc", "input": {"n": {"$": {"var": "feature.payload.n"}}}}}}}
        """#) == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#)
        #expect(uf_send(h.d, "C", nil, "go", nil) == UF_OK)
        #expect(counted.inputs == [#"{"n":2}"#])
    }
}
