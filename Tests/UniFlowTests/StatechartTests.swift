import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// Statecharts (docs/statecharts.md): nested, parallel, final and history
// states, `always`, internal events, through the C API as a host uses them.
// Tests named `w3c<N>` port the idea of the W3C SCXML test suite's test N to
// this definition language.

private func send(_ h: Harness, _ feature: String, _ event: String, key: String? = nil) -> Int32 {
    uf_send(h.d, feature, key, event, nil)
}

private func stateOf(_ h: Harness, _ feature: String) -> String? {
    guard let text = h.feature(feature), case .object(let object)? = try? JSONParser.parse(text) else { return nil }
    return object["state"]?.stringValue
}

private let player = #"""
{"feature": "Player",
 "fields": {"volume": {"type": "number", "default": 5}},
 "states": {
   "Stopped": {"on": {"play": "Active", "resume": "Active.Resume"}},
   "Active": {"initial": "Playing",
              "on": {"stop": "Stopped"},
              "states": {"Playing": {"on": {"pause": "Paused"},
                                     "always": {"into": "Stopped", "if": {"==": [{"var": "feature.payload.volume"}, 0]}}},
                         "Paused": {"on": {"play": "Playing",
                                           "mute": {"actions": [{"assign": {"volume": 0}}]}}},
                         "Resume": {"type": "history"}}}},
 "initial": ["Stopped"]}
"""#

private let sound = #"""
{"feature": "Sound", "type": "parallel",
 "states": {"Audio": {"initial": "Off", "states": {"On": {"on": {"toggle": "Audio.Off"}}, "Off": {"on": {"toggle": "Audio.On"}}}},
            "Video": {"initial": "Off", "states": {"On": {"on": {"flip": "Video.Off"}}, "Off": {"on": {"flip": "Video.On"}}}}}}
"""#

@Suite struct StatechartDefinitionTests {
    @Test(arguments: [
        (#"{"feature":"S","type":"parallel","states":{"Audio":{"initial":"On","states":{"On":{},"Off":{}}},"Video":{"initial":"On","states":{"On":{},"Off":{}}},"X":{"on":{"go":"On"}}}}"#,
         UF_ESCHEMA, "features[0].states.X.on.go: ambiguous state 'On' (Audio.On, Video.On)"),
        (#"{"feature":"S","states":{"A":{"initial":"B","states":{"B":{}}},"C":{"on":{"go":"A.Z"}}}}"#,
         UF_ESCHEMA, "features[0].states.C.on.go: unknown state 'A.Z'"),
        (#"{"feature":"S","states":{"A":{"states":{"B":{}}}}}"#,
         UF_ESCHEMA, "features[0].states.A: missing key 'initial' (a state with child states names its initial child)"),
        (#"{"feature":"S","states":{"A":{"initial":"Q","states":{"B":{}}}}}"#,
         UF_ESCHEMA, "features[0].states.A.initial: 'Q' is not a child state of A"),
        (#"{"feature":"S","fields":{"n":"number"},"states":{"A":{"initial":"B","states":{"B":{"fields":{"n":"string"}}}}}}"#,
         UF_ESCHEMA, "features[0].states.A.states.B.fields.n: field 'n' is declared twice along one configuration (in the feature and A.B)"),
        (#"{"feature":"S","type":"parallel","states":{"R1":{"fields":{"n":"number"},"initial":"a","states":{"a":{}}},"R2":{"initial":"b","states":{"b":{"fields":{"n":"number"}}}}}}"#,
         UF_ESCHEMA, "features[0].states.R2.states.b.fields.n: field 'n' is declared twice along one configuration (in R1 and R2.b)"),
        (#"{"feature":"S","states":{"F":{"type":"final","on":{"x":"F"}}}}"#,
         UF_ESCHEMA, "features[0].states.F.on: a final state has no 'on'"),
        (#"{"feature":"S","states":{"A":{"on":{"x":{"into":"A","actualize":true}}}},"entry":[]}"#,
         UF_ESCHEMA, "features[0].states.A.on.x: 'actualize' is not a key of statechart targets (a target without 'into' stays)"),
        (#"{"feature":"S","states":{"A":{"type":"weird"}},"entry":[]}"#,
         UF_ESCHEMA, "features[0].states.A.type: expected \"parallel\", \"final\" or \"history\", got \"weird\""),
        (#"{"feature":"S","states":{"A":{"on":{"go":"B"}},"B":{"initial":"C","states":{"C":{}}}},"transitions":{"B":["A"]}}"#,
         UF_ESCHEMA, "features[0].states.A.on.go: A -> B is not a declared transition"),
        (#"{"feature":"S","type":"parallel","states":{"P":{"initial":"a","states":{"a":{"on":{"go":{"into":["P.b","P.a"]}}},"b":{}}}}}"#,
         UF_ESCHEMA, "features[0].states.P.states.a.on.go.into: P.b and P.a cannot be entered together"),
        (#"{"feature":"S","states":{"P":{"initial":"H","states":{"H":{"type":"history","default":"P"},"A":{}}}}}"#,
         UF_ESCHEMA, "features[0].states.P.states.H.default: P is not a state inside P"),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"H":{"type":"history","default":"P.G"},"G":{"type":"history"},"A":{}}}}}"#,
         UF_ESCHEMA, "features[0].states.P.states.H.default: P.G is not a state inside P"),
        (#"{"feature":"S","states":{"A":{"entry":[{"call":"nobody"}]}}}"#,
         UF_ENOTFOUND, "features[0].states.A.entry[0].call: unknown handler 'nobody'"),
        (#"{"feature":"S","states":{"A":{"always":{"into":"A","call":{"and":["ok","nobody"]}}}}}"#,
         UF_ENOTFOUND, "features[0].states.A.always.call: unknown handler 'nobody'"),
    ])
    func refusedDefinitions(_ definition: String, _ status: Int32, _ message: String) {
        let h = Harness()
        registerHandler(h, "ok") { _ in 1 }
        #expect(uf_register(h.d, definition) == status)
        #expect(h.lastError == message)
    }

    @Test func moreThan32LevelsIsRefused() {
        var states = #"{"L33":{}}"#
        for level in stride(from: 32, through: 1, by: -1) { states = #"{"L\#(level)":{"initial":"L\#(level + 1)","states":\#(states)}}"# }
        let h = Harness()
        #expect(uf_register(h.d, #"{"feature":"Deep","states":\#(states)}"#) == UF_ESCHEMA)
        #expect(h.lastError.hasSuffix("states nest at most 32 levels deep"))
        #expect(h.lastError.hasPrefix("features[0].states.L1.states."))
    }

    @Test func moreThan4096StatesIsRefused() {
        let children = (0..<4096).map { #""s\#($0)":{}"# }.joined(separator: ",")
        let h = Harness()
        #expect(uf_register(h.d, #"{"feature":"Wide","states":{"P":{"initial":"s0","states":{\#(children)}}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].states.P.states.s4095: a statechart has at most 4096 states")
    }

    @Test func aFlatFeatureIsReadAsBefore() throws {
        let definitions = try DefinitionParser.parse(try JSONParser.parse(#"{"feature":"T","states":{"A":{"on":{"go":"B"}},"B":{}}}"#))
        #expect(definitions[0].chart == nil)
    }
}

@Suite struct StatechartBehaviourTests {
    @Test func aCompoundStateEntersItsInitialChildAndTheConfigurationNamesLeaves() {
        let h = Harness(player)
        #expect(h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#) == UF_OK, "\(h.lastError)")
        #expect(h.state == #"{"Player":{"state":"Stopped","payload":{"volume":5}}}"#)
        #expect(send(h, "Player", "play") == UF_OK, "\(h.lastError)")
        #expect(stateOf(h, "Player") == "Active.Playing")
        #expect(send(h, "Player", "pause") == UF_OK)
        #expect(stateOf(h, "Player") == "Active.Paused")
        // The feature's ancestors' `on` are tried after the leaf's.
        #expect(send(h, "Player", "stop") == UF_OK)
        #expect(stateOf(h, "Player") == "Stopped")
    }

    @Test func anUnhandledEventIsRejectedNamingTheConfiguration() {
        let h = Harness(player)
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        #expect(send(h, "Player", "pause") == UF_REJECTED)
        #expect(h.lastError == "Player in state Stopped has no transition for event 'pause'")
    }

    @Test func aReservedEventNameCannotBeSentFromOutside() {
        let h = Harness(player)
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        #expect(h.submit(#"{"kind":"send","feature":"Player","event":"xstate.init"}"#) == UF_ESCHEMA)
        #expect(h.submit(#"{"kind":"send","feature":"Player","event":"xstate.done.state.Active"}"#) == UF_ESCHEMA)
        #expect(h.lastError == "action.event: 'xstate.done.state.Active' is reserved: only the library sends it")
    }

    @Test func parallelRegionsAreAllActiveAndTheStateIsEveryLeaf() {
        let h = Harness(sound)
        #expect(h.submit(#"{"kind":"initialize","feature":"Sound","into":"Audio"}"#) == UF_OK, "\(h.lastError)")
        #expect(stateOf(h, "Sound") == "Audio.Off,Video.Off")
        #expect(send(h, "Sound", "flip") == UF_OK)
        #expect(stateOf(h, "Sound") == "Audio.Off,Video.On")
        #expect(send(h, "Sound", "toggle") == UF_OK)
        #expect(stateOf(h, "Sound") == "Audio.On,Video.On")
    }

    @Test func stateActiveAnswersForAnyLevel() {
        let h = Harness(sound)
        h.submit(#"{"kind":"initialize","feature":"Sound","into":"Audio"}"#)
        var active: Int32 = -1
        #expect(uf_state_active(h.d, "Sound", nil, "Audio", &active) == UF_OK)
        #expect(active == 1)
        #expect(uf_state_active(h.d, "Sound", nil, "Video.On", &active) == UF_OK)
        #expect(active == 0)
        #expect(uf_state_active(h.d, "Sound", nil, "On", &active) == UF_ESCHEMA)
        #expect(h.lastError == "ambiguous state 'On' (Audio.On, Video.On)")
        #expect(uf_state_active(h.d, "Sound", nil, "Nope", &active) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'Nope' of feature Sound")
    }

    @Test func mutationsCarryEnteredAndExitedInOrder() {
        let h = Harness(player)
        let recorder = h.record()
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        #expect(send(h, "Player", "play") == UF_OK)
        #expect(recorder.mutations.last == #"{"seq":2,"kind":"transition","feature":"Player","old":{"state":"Stopped","payload":{"volume":5}},"new":{"state":"Active.Playing","payload":{"volume":5}},"action":{"kind":"send","feature":"Player","event":"play"},"entered":["Active","Active.Playing"],"exited":["Stopped"]}"#)
    }

    @Test func alwaysRunsAfterTheEventAsItsOwnMicrostep() {
        let h = Harness(player)
        let recorder = h.record()
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        send(h, "Player", "play")
        send(h, "Player", "pause")
        // A targetless transition that assigns: an actualization; then `always` leaves.
        #expect(send(h, "Player", "mute") == UF_OK, "\(h.lastError)")
        #expect(stateOf(h, "Player") == "Active.Paused")
        #expect(send(h, "Player", "play") == UF_OK)
        #expect(stateOf(h, "Player") == "Stopped")
        #expect(recorder.mutations.suffix(2).map { $0.contains(#""action":{"kind":"always"}"#) } == [false, true])
    }

    @Test func shallowHistoryRestoresTheChildLastActive() {
        let h = Harness(player)
        h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        // Never left: the history state stands for the parent's initial child.
        send(h, "Player", "resume")
        #expect(stateOf(h, "Player") == "Active.Playing")
        send(h, "Player", "pause")
        send(h, "Player", "stop")
        #expect(h.feature("Player") == #"{"state":"Stopped","payload":{"volume":5},"history":{"Active.Resume":["Active.Paused"]}}"#)
        send(h, "Player", "resume")
        #expect(stateOf(h, "Player") == "Active.Paused")
    }

    @Test func theHotPathNeverTakesAStatechart() {
        let h = Harness(sound)
        let a = CAction(UF_ACTION_INITIALIZE, feature: "Sound", into: "Audio")
        #expect(a.dispatch(h.d) == UF_OK, "\(h.lastError)")
        let s = CAction(UF_ACTION_SEND, feature: "Sound", event: "flip")
        #expect(s.dispatch(h.d) == UF_OK)
        #expect(stateOf(h, "Sound") == "Audio.Off,Video.On")
    }
}

// MARK: The rules, one test each (W3C SCXML test numbers where the idea comes from one)


private func log(_ text: String) -> String { #"{"call":"log","params":"\#(text)"}"# }

@Suite struct StatechartRuleTests {
    /// W3C 404/405/406: exits in reverse document order, then the transition's
    /// actions, then entries in document order.
    @Test func w3c404_405_406_exitsThenActionsThenEntries() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
          "S0": {"initial": "S01", "exit": [\#(log("exit S0"))],
                 "states": {"P": {"type": "parallel", "exit": [\#(log("exit P"))], "states": {
                    "R1": {"initial": "A", "exit": [\#(log("exit R1"))], "states": {"A": {"exit": [\#(log("exit A"))]}}},
                    "R2": {"initial": "B", "exit": [\#(log("exit R2"))], "states": {"B": {"exit": [\#(log("exit B"))]}}}}},
                            "S01": {"on": {"go": "P"}}},
                 "on": {"next": {"into": "S1", "actions": [\#(log("action"))]}}},
          "S1": {"initial": "S11", "entry": [\#(log("enter S1"))],
                 "states": {"S11": {"entry": [\#(log("enter S11"))]}}}}}
        """#)
        #expect(c.start("S0") == UF_OK, "\(c.h.lastError)")
        #expect(c.send("go") == UF_OK)
        #expect(c.state == "S0.P.R1.A,S0.P.R2.B")
        c.log = []
        #expect(c.send("next") == UF_OK)
        #expect(c.log == ["exit B", "exit R2", "exit A", "exit R1", "exit P", "exit S0", "action", "enter S1", "enter S11"])
    }

    /// W3C 505: a transition to a descendant of its source, not re-entering, leaves the source active.
    @Test func w3c505_aTransitionIntoItsOwnSubtreeDoesNotExitTheSource() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"S": {"initial": "A", "exit": [\#(log("exit S"))], "entry": [\#(log("enter S"))],
                                          "on": {"go": "S.B", "again": {"into": "S.B", "reenter": true}},
                                          "states": {"A": {}, "B": {}}}}}
        """#)
        #expect(c.start("S") == UF_OK)
        c.log = []
        #expect(c.send("go") == UF_OK)
        #expect(c.state == "S.B")
        #expect(c.log == [])
        // W3C 504's counterpart: with reenter the source is left and entered again.
        #expect(c.send("again") == UF_OK)
        #expect(c.log == ["exit S", "enter S"])
    }

    /// W3C 533: from a parallel state into one of its regions, the domain is the
    /// parallel state: every region is left, the others entered again with defaults.
    @Test func w3c533_aTransitionFromAParallelStateLeavesEveryRegion() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"P": {"type": "parallel", "on": {"reset": "P.R1.A2"}, "states": {
           "R1": {"initial": "A1", "states": {"A1": {}, "A2": {}}},
           "R2": {"initial": "B1", "states": {"B1": {"on": {"b": "B2"}}, "B2": {"exit": [\#(log("exit B2"))]}}}}}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("b") == UF_OK)
        #expect(c.state == "P.R1.A1,P.R2.B2")
        #expect(c.send("reset") == UF_OK)
        #expect(c.state == "P.R1.A2,P.R2.B1")
        #expect(c.log == ["exit B2"])
    }

    /// W3C 403c: in a parallel state, each region selects its own transition; a
    /// parallel state's own `on` is tried only when no region took the event.
    @Test func w3c403_regionsSelectTheirOwnAndTheParallelStateOnlyWhenNoneDid() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"P": {"type": "parallel", "on": {"e": "Out", "f": "Out"}, "states": {
           "R1": {"initial": "A1", "states": {"A1": {"on": {"e": "A2"}}, "A2": {}}},
           "R2": {"initial": "B1", "states": {"B1": {"on": {"e": "B2"}}, "B2": {}}}}},
           "Out": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("e") == UF_OK)
        #expect(c.state == "P.R1.A2,P.R2.B2")
        #expect(c.send("f") == UF_OK)
        #expect(c.state == "Out")
    }

    /// W3C 403a: two selected transitions whose exit sets meet: the earlier in document order wins.
    @Test func w3c403a_conflictingTransitionsTheEarlierWins() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"P": {"type": "parallel", "states": {
           "R1": {"initial": "A", "states": {"A": {"on": {"e": "X"}}}},
           "R2": {"initial": "B", "states": {"B": {"on": {"e": "Y"}}}}}},
           "X": {}, "Y": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("e") == UF_OK)
        #expect(c.state == "X")
    }

    /// Several targets, one per region.
    @Test func multipleTargetsEnterOneStatePerRegion() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"Off": {"on": {"on": {"into": ["P.R1.A2", "P.R2.B2"]}}},
           "P": {"type": "parallel", "states": {
             "R1": {"initial": "A1", "states": {"A1": {}, "A2": {}}},
             "R2": {"initial": "B1", "states": {"B1": {}, "B2": {}}}}}}}
        """#)
        #expect(c.start("Off") == UF_OK)
        #expect(c.send("on") == UF_OK)
        #expect(c.state == "P.R1.A2,P.R2.B2")
    }

    /// W3C 387/388: deep history restores the atomic states below, shallow the child with its defaults.
    @Test func w3c388_deepAndShallowHistory() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "Off": {"on": {"deep": "On.Deep", "shallow": "On.Shallow"}},
           "On": {"initial": "A", "on": {"off": "Off"}, "states": {
             "A": {"initial": "A1", "states": {"A1": {"on": {"next": "A2"}}, "A2": {}}},
             "Deep": {"type": "history", "history": "deep"},
             "Shallow": {"type": "history"}}}}}
        """#)
        #expect(c.start("On") == UF_OK)
        #expect(c.send("next") == UF_OK)
        #expect(c.send("off") == UF_OK)
        #expect(c.send("deep") == UF_OK)
        #expect(c.state == "On.A.A2")
        #expect(c.send("off") == UF_OK)
        #expect(c.send("shallow") == UF_OK)
        #expect(c.state == "On.A.A1")
    }

    /// A history state's `default` when it remembers nothing yet.
    @Test func w3c579_historyDefaultWhenNothingIsRemembered() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"Off": {"on": {"back": "On.H"}},
           "On": {"initial": "A", "states": {"A": {}, "B": {}, "H": {"type": "history", "default": "On.B"}}}}}
        """#)
        #expect(c.start("Off") == UF_OK)
        #expect(c.send("back") == UF_OK)
        #expect(c.state == "On.B")
    }

    /// W3C 416/417: entering a final child raises done.state for its parent, and
    /// a parallel state is done when every region is.
    @Test func w3c416_417_doneEventsOfCompoundAndParallelStates() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "P": {"type": "parallel", "onDone": "Both", "states": {
             "R1": {"initial": "A", "onDone": {"actions": [\#(log("R1 done"))]},
                    "states": {"A": {"on": {"a": "Fa"}}, "Fa": {"type": "final"}}},
             "R2": {"initial": "B", "states": {"B": {"on": {"b": "Fb"}}, "Fb": {"type": "final"}}}}},
           "Both": {}}}
        """#)
        #expect(c.start("P") == UF_OK)
        #expect(c.send("a") == UF_OK)
        #expect(c.log == ["R1 done"])
        #expect(c.state == "P.R1.Fa,P.R2.B")
        #expect(c.send("b") == UF_OK)
        #expect(c.state == "Both")
    }

    /// A top-level final state makes the instance done: exit effects run, the
    /// configuration stays, later sends are rejected, deinitialize still works.
    @Test func reachingATopLevelFinalStateMakesTheInstanceDone() {
        let c = ChartLog(#"""
        {"feature": "C", "exit": [\#(log("exit feature"))],
         "states": {"A": {"on": {"end": "End"}}, "End": {"type": "final", "exit": [\#(log("exit End"))]}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("end") == UF_OK)
        #expect(c.log == ["exit End", "exit feature"])
        #expect(c.h.feature("C") == #"{"state":"End","payload":{},"status":"done"}"#)
        #expect(c.send("end") == UF_REJECTED)
        #expect(c.h.lastError == "C is done (in state End)")
        #expect(c.h.submit(#"{"kind":"deinitialize","feature":"C"}"#) == UF_OK)
    }

    /// W3C 419/421: `always` before internal events, internal events in the order raised.
    @Test func w3c419_421_alwaysBeforeInternalEventsInOrder() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {
           "A": {"on": {"go": {"into": "B", "actions": [{"send": "first"}, {"send": "second"}]}}},
           "B": {"always": {"into": "C1"}},
           "C1": {"on": {"first": "C2", "second": "Wrong"}},
           "C2": {"on": {"second": "Right", "first": "Wrong"}},
           "Right": {}, "Wrong": {}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("go") == UF_OK)
        #expect(c.state == "Right")
    }

    /// `always` runs after an event no transition takes; the send is still rejected.
    @Test func alwaysRunsAfterAnEventNothingTakes() {
        let h = Harness()
        var answers = [false, true]
        registerHandler(h, "ready") { _ in answers.isEmpty ? 0 : (answers.removeFirst() ? 1 : 0) }
        #expect(uf_register(h.d, #"{"feature": "C", "states": {"A": {"always": {"into": "B", "call": "ready"}}, "B": {}}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#) == UF_OK)
        #expect(stateOf(h, "C") == "A")
        #expect(uf_send(h.d, "C", nil, "nobody", nil) == UF_REJECTED)
        #expect(stateOf(h, "C") == "B")
    }

    /// An endless `always` loop is `UF_ELOOP` past max_cascade, and changes nothing.
    @Test func anEndlessMacrostepIsUndoneAsUFELOOP() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"A": {"on": {"spin": "B"}}, "B": {"always": {"into": "D"}}, "D": {"always": {"into": "B"}}}}
        """#, options: #"{"max_cascade": 50}"#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("spin") == UF_ELOOP)
        #expect(c.h.lastError == "C: more than 50 microsteps in one macrostep (max_cascade)")
        #expect(c.state == "A")
    }

    /// A payload check that fails anywhere in the macrostep undoes all of it.
    @Test func aPayloadThatFailsItsCheckUndoesTheMacrostep() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"n": {"type": "number", "default": 0}},
         "states": {"A": {"on": {"go": {"into": "B", "actions": [{"assign": {"n": "text"}}]}}}, "B": {}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("go") == UF_ESCHEMA)
        #expect(c.h.lastError == "C.B.n: expected number, got string")
        #expect(c.h.feature("C") == #"{"state":"A","payload":{"n":0}}"#)
    }

    /// A state's fields enter the payload with their defaults and leave it with the state.
    @Test func fieldsOfAStateComeAndGoWithIt() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"A": {"on": {"go": "B"}},
           "B": {"initial": "B1", "fields": {"tries": {"type": "integer", "default": 3}}, "on": {"back": "A"},
                 "states": {"B1": {}}}}}
        """#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("go") == UF_OK)
        #expect(c.h.feature("C") == #"{"state":"B.B1","payload":{"tries":3}}"#)
        #expect(c.send("back") == UF_OK)
        #expect(c.h.feature("C") == #"{"state":"A","payload":{}}"#)
    }

    /// Guards: `feature.active` in rules, and call trees with `in`, `not`, `and`, `or`.
    @Test func guardsSeeActiveStatesAndCallTrees() {
        let h = Harness()
        registerHandler(h, "yes") { _ in 1 }
        registerHandler(h, "no") { _ in 0 }
        #expect(uf_register(h.d, #"""
        {"feature": "C", "type": "parallel", "states": {
           "R1": {"initial": "A", "states": {"A": {"on": {
              "e": [{"into": "R1.X", "if": {"in": ["R2.B2", {"var": "feature.active"}]}},
                    {"into": "R1.Y", "call": {"and": ["yes", {"not": "no"}, {"in": "R2.B1"}, {"or": ["no", "yes"]}]}}]}},
              "X": {}, "Y": {}}},
           "R2": {"initial": "B1", "states": {"B1": {}, "B2": {}}}}}
        """#) == UF_OK, "\(h.lastError)")
        #expect(h.submit(#"{"kind":"initialize","feature":"C","into":"R1"}"#) == UF_OK)
        #expect(uf_send(h.d, "C", nil, "e", nil) == UF_OK)
        #expect(stateOf(h, "C") == "R1.Y,R2.B1")
    }

    /// Explicit actions: `transition` from an active state, `actualize` in one,
    /// `from` failing when the state is not active, and the initial list.
    @Test func explicitActionsUseActiveStates() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"n": {"type": "number", "default": 0}},
         "states": {"A": {"initial": "A1", "states": {"A1": {}, "A2": {}}}, "B": {}}, "initial": ["A"]}
        """#)
        #expect(c.start("B") == UF_REJECTED)
        #expect(c.h.lastError == "C cannot be initialized into B: not an initial state")
        #expect(c.start("A.A2") == UF_OK)
        #expect(c.state == "A.A2")
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","from":"B","into":"A1"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C is in state A.A2, not B")
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","from":"A","into":"B"}"#) == UF_OK)
        #expect(c.state == "B")
        #expect(c.h.submit(#"{"kind":"actualize","feature":"C","in":"B","payload":{"n":7}}"#) == UF_OK)
        #expect(c.h.feature("C") == #"{"state":"B","payload":{"n":7}}"#)
        #expect(c.h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C is already initialized (in state B)")
    }

    /// Keyed statecharts: each instance has its own configuration.
    @Test func keyedInstancesHaveTheirOwnConfiguration() {
        let h = Harness(#"{"feature": "C", "instances": "keyed", "type": "parallel", "states": {"R1": {"initial": "A", "states": {"A": {"on": {"a": "R1.B"}}, "B": {}}}, "R2": {"initial": "C1", "states": {"C1": {}}}}}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"C","key":"x","into":"R1"}"#) == UF_OK, "\(h.lastError)")
        #expect(h.submit(#"{"kind":"initialize","feature":"C","key":"y","into":"R1"}"#) == UF_OK)
        #expect(uf_send(h.d, "C", "x", "a", nil) == UF_OK)
        #expect(h.state == #"{"C":{"x":{"state":"R1.B,R2.C1","payload":{}},"y":{"state":"R1.A,R2.C1","payload":{}}}}"#)
        var active: Int32 = -1
        #expect(uf_state_active(h.d, "C", "y", "R1.B", &active) == UF_OK)
        #expect(active == 0)
        #expect(uf_state_active(h.d, "C", nil, "R1.B", &active) == UF_EINVAL)
    }

    /// A batch that fails after a statechart's macrostep undoes it too.
    @Test func aFailedBatchUndoesAStatechartsMicrosteps() {
        let h = Harness(#"{"feature": "C", "states": {"A": {"on": {"go": "B"}}, "B": {"always": "D"}, "D": {}}}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#) == UF_OK)
        let batch = #"[{"kind":"send","feature":"C","event":"go"},{"kind":"send","feature":"C","event":"nothing"}]"#
        #expect(uf_submit_batch(h.d, batch) == UF_REJECTED)
        #expect(stateOf(h, "C") == "A")
        #expect(uf_submit_batch(h.d, #"[{"kind":"send","feature":"C","event":"go"}]"#) == UF_OK)
        #expect(stateOf(h, "C") == "D")
    }
}

@Suite struct StatechartErrorTests {
    @Test func aFailingGuardHandlerIsUFECALLBACKAndChangesNothing() {
        let h = Harness()
        registerHandler(h, "broken") { _ in -3 }
        #expect(uf_register(h.d, #"{"feature": "C", "states": {"A": {"on": {"go": {"into": "B", "call": "broken"}}}, "B": {"initial": "B1", "states": {"B1": {}}}}}"#) == UF_OK)
        h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#)
        #expect(uf_send(h.d, "C", nil, "go", nil) == UF_ECALLBACK)
        #expect(h.lastError == "C: event 'go': handler 'broken' failed (returned -3)")
        #expect(stateOf(h, "C") == "A")
    }

    @Test func aRuleErrorInAGuardIsUFESCHEMA() {
        let h = Harness(#"{"feature": "C", "states": {"A": {"on": {"go": {"into": "B", "if": {"/": [1, 0]}}}}, "B": {"entry": []}}}"#)
        h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#)
        #expect(uf_send(h.d, "C", nil, "go", nil) == UF_ESCHEMA)
        #expect(h.lastError.hasPrefix("C: event 'go': rule error: "))
    }

    @Test func anAmbiguousBareNameInAnActionIsUFESCHEMA() {
        let h = Harness(sound)
        #expect(h.submit(#"{"kind":"initialize","feature":"Sound","into":"On"}"#) == UF_ESCHEMA)
        #expect(h.lastError == "ambiguous state 'On' (Audio.On, Video.On)")
        #expect(h.submit(#"{"kind":"initialize","feature":"Sound","into":"Nowhere"}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'Nowhere' of feature Sound")
    }

    @Test func aSendBeforeInitializationIsRejected() {
        let h = Harness(sound)
        #expect(uf_send(h.d, "Sound", nil, "flip", nil) == UF_REJECTED)
        #expect(h.lastError == "Sound is not initialized")
    }
}

@Suite struct StatechartPersistenceTests {
    @Test func aJournalReplaysConfigurationsHistoryAndStatus() {
        let path = temporaryPath("charts")
        defer { unlink(path) }
        let expected: String
        do {
            let h = Harness(options: #"{"journal":"\#(path)"}"#, player)
            h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
            send(h, "Player", "play")
            send(h, "Player", "pause")
            send(h, "Player", "stop")
            expected = h.state
        }
        #expect(expected == #"{"Player":{"state":"Stopped","payload":{"volume":5},"history":{"Active.Resume":["Active.Paused"]}}}"#)
        let reader = Harness(player)
        #expect(uf_replay_file(reader.d, path) == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        // The history came back with it: resuming restores Paused.
        #expect(send(reader, "Player", "resume") == UF_OK)
        #expect(stateOf(reader, "Player") == "Active.Paused")
    }

    @Test func aSnapshotWithTimersComesBackWhole() {
        let light = #"{"feature": "L", "states": {"Green": {"after": [{"ms": 100, "send": "go"}], "on": {"go": "Red"}}, "Red": {"initial": "A", "states": {"A": {}}}}}"#
        let h = Harness(options: #"{"clock":"manual"}"#, light, sound)
        h.submit(#"{"kind":"initialize","feature":"L","into":"Green"}"#)
        h.submit(#"{"kind":"initialize","feature":"Sound","into":"Audio"}"#)
        send(h, "Sound", "toggle")
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_snapshot_get(h.d, &out) == UF_OK)
        let snapshot = String(cString: out!)
        uf_free(out)
        let other = Harness(options: #"{"clock":"manual"}"#, light, sound)
        #expect(uf_snapshot_restore(other.d, snapshot) == UF_OK, "\(other.lastError)")
        #expect(other.state == h.state)
        #expect(uf_clock_advance(other.d, 100) == UF_OK)
        #expect(stateOf(other, "L") == "Red.A")
    }

    @Test func aRestoredModelKeepsConfigurationsAndIsCheckedAgainstTheChart() {
        let h = Harness(sound, player)
        #expect(uf_state_restore(h.d, #"{"Sound":{"state":"Audio.On,Video.Off","payload":{}},"Player":{"state":"Stopped","payload":{},"history":{"Active.Resume":["Active.Paused"]}}}"#) == UF_OK, "\(h.lastError)")
        #expect(h.state == #"{"Sound":{"state":"Audio.On,Video.Off","payload":{}},"Player":{"state":"Stopped","payload":{"volume":5},"history":{"Active.Resume":["Active.Paused"]}}}"#)
        #expect(send(h, "Sound", "toggle") == UF_OK)
        #expect(stateOf(h, "Sound") == "Audio.Off,Video.Off")
        #expect(uf_state_restore(h.d, #"{"Sound":{"state":"Audio.On","payload":{}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "Sound.state: 'Audio.On' is not a configuration of Sound")
        #expect(uf_state_restore(h.d, #"{"Sound":{"state":"Audio.On,Audio.Off,Video.On","payload":{}}}"#) == UF_ESCHEMA)
        #expect(uf_state_restore(h.d, #"{"Sound":{"state":"Audio","payload":{}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "Sound.state: Audio is not an atomic state")
        #expect(uf_state_restore(h.d, #"{"Player":{"state":"Stopped","payload":{},"status":"sleeping"}}"#) == UF_ESCHEMA)
        #expect(h.lastError == #"Player.status: expected "done" or "failed", got "sleeping""#)
    }
}

@Suite struct StatechartTimerTests {
    private let light = #"""
    {"feature": "Light", "states": {
       "Green": {"after": [{"ms": 1000, "send": "xstate.after.1000.Green"}], "on": {"xstate.after.1000.Green": "Yellow", "walk": "Red"}},
       "Yellow": {"after": [{"ms": 500, "send": "tick"}], "on": {"tick": "Red"}},
       "Red": {"initial": "Wait", "states": {"Wait": {"after": [{"ms": 200, "send": "go"}], "on": {"go": "Red.Walk"}}, "Walk": {}}}}}
    """#

    @Test func timersAreArmedOnEntryAndSendTheirEvent() {
        let h = Harness(options: #"{"clock":"manual","timers":"host"}"#, light)
        #expect(h.submit(#"{"kind":"initialize","feature":"Light","into":"Green"}"#) == UF_OK, "\(h.lastError)")
        #expect(uf_clock_advance(h.d, 999) == UF_OK)
        #expect(stateOf(h, "Light") == "Green")
        #expect(uf_clock_advance(h.d, 1) == UF_OK)
        #expect(stateOf(h, "Light") == "Yellow")
        #expect(uf_clock_advance(h.d, 700) == UF_OK)
        #expect(stateOf(h, "Light") == "Red.Walk")
    }

    @Test func leavingAStateDisarmsItsTimers() {
        let h = Harness(options: #"{"clock":"manual","timers":"host"}"#, light)
        h.submit(#"{"kind":"initialize","feature":"Light","into":"Green"}"#)
        #expect(send(h, "Light", "walk") == UF_OK)
        #expect(stateOf(h, "Light") == "Red.Wait")
        #expect(uf_clock_advance(h.d, 5000) == UF_OK)
        // Green's timer was disarmed: only Wait's fired.
        #expect(stateOf(h, "Light") == "Red.Walk")
    }

    @Test func aTimerOnlySends() {
        let h = Harness()
        #expect(uf_register(h.d, #"{"feature":"C","states":{"A":{"initial":"B","states":{"B":{}}, "after":[{"ms":1,"submit":[]}]}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].states.A.after[0]: a statechart's timer sends an event ('send'), it does not submit")
    }
}

/// A service whose start and stop are recorded; `startResult` is what start
/// returns, and an invocation whose id is in `doneInStart` is done at once,
/// from inside its start.
final class ServiceLog {
    var started: [(serial: UInt64, id: String, input: String, key: String?)] = []
    var stopped: [UInt64] = []
    var startResult: Int32 = 0
    var doneInStart: Set<String> = []
    fileprivate(set) var dispatcher: OpaquePointer?
}

func registerService(_ h: Harness, _ name: String, _ log: ServiceLog) -> Int32 {
    let box = Box<ServiceLog>(log, freed: FreeCounter())
    log.dispatcher = h.d
    return uf_register_service(h.d, name, { inv, payload in
        let log = Unmanaged<Box<ServiceLog>>.fromOpaque(payload!).takeUnretainedValue().value
        let serial = uf_invocation_serial(inv)
        let id = String(cString: uf_invocation_id(inv))
        log.started.append((serial, id, String(cString: uf_invocation_input_json(inv)),
                            uf_invocation_key(inv).map { String(cString: $0) }))
        if log.doneInStart.contains(id) { _ = uf_service_done(log.dispatcher, serial, nil) }
        return log.startResult
    }, { inv, payload in
        let log = Unmanaged<Box<ServiceLog>>.fromOpaque(payload!).takeUnretainedValue().value
        log.stopped.append(uf_invocation_serial(inv))
        return 0
    }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
}

@Suite struct StatechartServiceTests {
    private let fetcher = #"""
    {"feature": "F", "states": {
       "Idle": {"on": {"load": "Loading"}},
       "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"n": {"$": {"var": "feature.payload.n"}}},
                              "onDone": {"into": "Ready", "actions": [{"assign": {"n": {"$": {"var": "event.payload.output"}}}}]},
                              "onError": "Idle"},
                   "on": {"cancel": "Idle"}},
       "Ready": {}},
     "fields": {"n": {"type": "any", "default": 1}}}
    """#

    @Test func anInvokedServiceStartsAfterTheActionAndItsResultIsAnEvent() {
        let h = Harness()
        let log = ServiceLog()
        #expect(registerService(h, "fetch", log) == UF_OK)
        #expect(uf_register(h.d, fetcher) == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"F","into":"Idle"}"#)
        #expect(uf_send(h.d, "F", nil, "load", nil) == UF_OK)
        #expect(log.started.count == 1)
        #expect(log.started.first?.id == "get")
        #expect(log.started.first?.input == #"{"n":1}"#)
        #expect(h.feature("F") == #"{"state":"Loading","payload":{"n":1},"invocations":[{"id":"get","src":"fetch","input":{"n":1}}]}"#)
        #expect(uf_service_done(h.d, log.started[0].serial, "42") == UF_OK)
        #expect(h.feature("F") == #"{"state":"Ready","payload":{"n":42}}"#)
        // Settled once: a second result is dropped, and is no error.
        #expect(uf_service_done(h.d, log.started[0].serial, "43") == UF_OK)
        #expect(log.stopped == [])
    }

    @Test func leavingTheInvokingStateStopsTheService() {
        let h = Harness()
        let log = ServiceLog()
        registerService(h, "fetch", log)
        #expect(uf_register(h.d, fetcher) == UF_OK)
        h.submit(#"{"kind":"initialize","feature":"F","into":"Idle"}"#)
        uf_send(h.d, "F", nil, "load", nil)
        #expect(uf_send(h.d, "F", nil, "cancel", nil) == UF_OK)
        #expect(log.stopped == [log.started[0].serial])
        #expect(uf_service_done(h.d, log.started[0].serial, "42") == UF_OK)
        #expect(stateOf(h, "F") == "Idle")
    }

    @Test func anErrorTakesOnErrorOrFailsTheInstance() {
        let h = Harness()
        let log = ServiceLog()
        registerService(h, "fetch", log)
        #expect(uf_register(h.d, fetcher) == UF_OK)
        #expect(uf_register(h.d, #"{"feature": "G", "states": {"Work": {"invoke": {"src": "fetch"}}}, "entry": []}"#) == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"F","into":"Idle"}"#)
        uf_send(h.d, "F", nil, "load", nil)
        #expect(uf_service_error(h.d, log.started[0].serial, #""timeout""#) == UF_OK)
        #expect(stateOf(h, "F") == "Idle")
        #expect(h.submit(#"{"kind":"initialize","feature":"G","into":"Work"}"#) == UF_OK)
        #expect(log.started.last?.id == "0.Work")
        #expect(uf_service_error(h.d, log.started.last!.serial, #""broken""#) == UF_OK)
        #expect(h.feature("G") == #"{"state":"Work","payload":{},"status":"failed"}"#)
        #expect(uf_send(h.d, "G", nil, "anything", nil) == UF_REJECTED)
    }

    @Test func aStartThatFailsSettlesAsAnError() {
        let h = Harness()
        let log = ServiceLog()
        log.startResult = -1
        registerService(h, "fetch", log)
        #expect(uf_register(h.d, fetcher) == UF_OK)
        h.submit(#"{"kind":"initialize","feature":"F","into":"Idle"}"#)
        #expect(uf_send(h.d, "F", nil, "load", nil) == UF_OK)
        #expect(stateOf(h, "F") == "Idle")
    }

    @Test func anUnknownServiceIsRefusedAtRegistration() {
        let h = Harness()
        #expect(uf_register(h.d, fetcher) == UF_ENOTFOUND)
        #expect(h.lastError == "features[0].states.Loading.invoke: unknown service 'fetch'")
        let log = ServiceLog()
        #expect(registerService(h, "fetch", log) == UF_OK)
        #expect(registerService(h, "fetch", log) == UF_EEXISTS)
        #expect(registerService(h, "no-name", log) == UF_EINVAL)
    }
}

@Suite struct StatechartEffectTests {
    private let kettle = #"""
    {"feature": "K", "states": {
       "Off": {"on": {"boil": {"into": "Heating", "actions": [{"send": "done", "delay": 300, "id": "timer"}]}}},
       "Heating": {"on": {"done": "Ready", "stop": {"into": "Off", "actions": [{"cancel": "timer"}]}}},
       "Ready": {"entry": [{"submit": [{"kind": "send", "feature": "Log", "event": "note", "payload": {"what": {"$": {"var": "event.name"}}}}]}]}}}
    """#
    private let logFeature = #"{"feature": "Log", "states": {"Idle": {"fields": {"what": {"type": "string", "optional": true}}, "on": {"note": {"into": "Idle", "actualize": true}}}}}"#

    @Test func aDelayedSendArrivesLaterAsAnOuterEventAndSubmitQueuesActions() {
        let h = Harness(options: #"{"clock":"manual"}"#, logFeature, kettle)
        h.submit(#"{"kind":"initialize","feature":"Log","into":"Idle"}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"K","into":"Off"}"#) == UF_OK, "\(h.lastError)")
        #expect(send(h, "K", "boil") == UF_OK)
        #expect(stateOf(h, "K") == "Heating")
        #expect(uf_clock_advance(h.d, 299) == UF_OK)
        #expect(stateOf(h, "K") == "Heating")
        #expect(uf_clock_advance(h.d, 1) == UF_OK)
        #expect(stateOf(h, "K") == "Ready")
        #expect(h.feature("Log") == #"{"state":"Idle","payload":{"what":"done"}}"#)
    }

    @Test func cancelDisarmsADelayedSend() {
        let h = Harness(options: #"{"clock":"manual"}"#, logFeature, kettle)
        h.submit(#"{"kind":"initialize","feature":"K","into":"Off"}"#)
        send(h, "K", "boil")
        #expect(send(h, "K", "stop") == UF_OK)
        #expect(uf_clock_advance(h.d, 1000) == UF_OK)
        #expect(stateOf(h, "K") == "Off")
    }

    @Test func aCallEffectsOutputIsAssigned() {
        let h = Harness()
        var given = ""
        registerHandler(h, "measure") { call in
            given = String(cString: uf_binding_call_given_json(call))
            return uf_binding_call_set_output(call, #"{"n": 5}"#) == UF_OK ? 0 : -1
        }
        #expect(uf_register(h.d, #"{"feature": "C", "fields": {"n": {"type": "integer", "default": 1}}, "states": {"A": {"on": {"go": {"into": "B", "actions": [{"call": "measure", "params": {"unit": "cm"}}]}}}, "B": {}}}"#) == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#)
        #expect(send(h, "C", "go") == UF_OK, "\(h.lastError)")
        #expect(h.feature("C") == #"{"state":"B","payload":{"n":5}}"#)
        #expect(given.contains(#""params":{"unit":"cm"}"#) && given.contains(#""payload":{"n":1}"#) && given.contains(#""mutation":null"#))
    }

    @Test func effectsThatCannotBeSatisfiedAreRefused() {
        let h = Harness()
        #expect(uf_register(h.d, #"{"feature": "C", "states": {"A": {"entry": [{"send": "x", "id": "t"}]}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].states.A.entry[0].id: only a delayed send has an id")
        #expect(uf_register(h.d, #"{"feature": "C", "states": {"A": {"entry": [{"send": "x", "delay": -1}]}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].states.A.entry[0].delay: expected an integer from 0 to 2^53, got -1")
        #expect(uf_register(h.d, #"{"feature": "C", "states": {"A": {"entry": [{"jump": "x"}]}}}"#) == UF_ESCHEMA)
        #expect(h.lastError == "features[0].states.A.entry[0]: expected one of 'assign', 'call', 'send', 'cancel', 'submit'")
    }

    @Test func aSubmitThatFailsItsCheckUndoesTheMacrostep() {
        let h = Harness(#"{"feature": "C", "states": {"A": {"on": {"go": {"into": "B", "actions": [{"submit": [{"kind": "send", "feature": "Nobody", "event": "x"}]}]}}}, "B": {}}}"#)
        h.submit(#"{"kind":"initialize","feature":"C","into":"A"}"#)
        #expect(send(h, "C", "go") == UF_ENOTFOUND)
        #expect(h.lastError == "C: event 'go': submit[0]: unknown feature 'Nobody'")
        #expect(stateOf(h, "C") == "A")
    }
}

@Suite struct StatechartFilterTests {
    @Test func kindFiltersSeeEveryMutationOfAStatechart() {
        let h = Harness(sound)
        let recorder = h.record("AnyMutationOf<Sound>")
        h.submit(#"{"kind":"initialize","feature":"Sound","into":"Audio"}"#)
        #expect(recorder.mutations.count == 1)
    }
}

@Suite struct StatechartGraphTests {
    @Test func aStatechartIsDrawnAsNestedClusters() {
        let h = Harness(player, sound)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(h.d, "Player", &out) == UF_OK)
        let dot = String(cString: out!)
        uf_free(out)
        #expect(dot.contains(#"subgraph "cluster_Player.Active" {"#))
        #expect(dot.contains(#""Player.Active.Playing" [label="Playing", peripheries=2];"#))
        #expect(dot.contains(#""Player.Active.Resume" [shape=circle, label="H"];"#))
        #expect(dot.contains(#""Player.Stopped" -> "Player.Active.Playing" [label="on play", lhead="cluster_Player.Active"];"#))
        #expect(dot.contains(#""Player.Active.Playing" -> "Player.Stopped" [label="always", style=dashed];"#))
        #expect(uf_graph_dot(h.d, "Sound", &out) == UF_OK)
        let parallel = String(cString: out!)
        uf_free(out)
        #expect(parallel.contains(#"style="rounded,dashed""#))
    }
}

@Suite struct StatechartServiceRestartTests {
    private let fetcher = #"{"feature": "F", "states": {"Idle": {}, "Loading": {"invoke": {"src": "fetch", "id": "get", "onDone": "Idle"}}}, "entry": []}"#

    @Test func aRestoreStartsWhatTheModelListsWithItsInput() {
        let h = Harness()
        let log = ServiceLog()
        #expect(registerService(h, "fetch", log) == UF_OK)
        #expect(uf_register(h.d, fetcher) == UF_OK, "\(h.lastError)")
        let loading = #"{"F": {"state": "Loading", "payload": {}, "invocations": [{"id": "get", "src": "fetch", "input": {"page": 2}}]}}"#
        #expect(uf_state_restore(h.d, loading) == UF_OK, "\(h.lastError)")
        #expect(log.started.map(\.id) == ["get"])
        #expect(log.started.map(\.input) == [#"{"page":2}"#])
        #expect(h.state == #"{"F":{"state":"Loading","payload":{},"invocations":[{"id":"get","src":"fetch","input":{"page":2}}]}}"#)
        #expect(uf_service_done(h.d, log.started[0].serial, nil) == UF_OK)
        #expect(stateOf(h, "F") == "Idle")
        // Restoring again stops what runs and starts anew, with a new serial.
        #expect(uf_state_restore(h.d, loading) == UF_OK)
        #expect(uf_state_restore(h.d, loading) == UF_OK)
        #expect(log.started.count == 3)
        #expect(log.stopped == [log.started[1].serial])
        #expect(Set(log.started.map(\.serial)).count == 3)
    }

    /// The model is the whole truth: an invoking state whose service is not
    /// listed (it settled, and the result left the instance where it was)
    /// runs nothing once restored, as in the model it came from.
    @Test func aRestoreStartsNothingTheModelDoesNotList() {
        let h = Harness()
        let log = ServiceLog()
        #expect(registerService(h, "fetch", log) == UF_OK)
        #expect(uf_register(h.d, fetcher) == UF_OK, "\(h.lastError)")
        #expect(uf_state_restore(h.d, #"{"F": {"state": "Loading", "payload": {}}}"#) == UF_OK, "\(h.lastError)")
        #expect(log.started.isEmpty)
        #expect(h.state == #"{"F":{"state":"Loading","payload":{}}}"#)
    }

    @Test func aListedInvocationMustBeOneOfAnActiveState() {
        let h = Harness()
        let log = ServiceLog()
        #expect(registerService(h, "fetch", log) == UF_OK)
        #expect(uf_register(h.d, fetcher) == UF_OK, "\(h.lastError)")
        #expect(uf_state_restore(h.d, #"{"F": {"state": "Loading", "payload": {}, "invocations": [{"id": "get", "src": "fetch", "input": null}]}}"#) == UF_OK)
        let before = h.state
        for (model, message) in [
            (#"{"F": {"state": "Idle", "payload": {}, "invocations": [{"id": "get", "src": "fetch"}]}}"#,
             "F.invocations[0]: no active state of F invokes 'fetch' as 'get'"),
            (#"{"F": {"state": "Loading", "payload": {}, "invocations": [{"id": "other", "src": "fetch"}]}}"#,
             "F.invocations[0]: no active state of F invokes 'fetch' as 'other'"),
            (#"{"F": {"state": "Loading", "payload": {}, "invocations": {"id": "get"}}}"#,
             "F.invocations: expected an array, got object"),
            (#"{"F": {"state": "Loading", "payload": {}, "invocations": [{"id": "get"}]}}"#,
             #"F.invocations[0]: expected {"id", "src", "input"}, got {"id":"get"}"#),
        ] {
            #expect(uf_state_restore(h.d, model) == UF_ESCHEMA, "\(model)")
            #expect(h.lastError == message)
            #expect(h.state == before)
        }
        #expect(log.started.count == 1)
        #expect(log.stopped.isEmpty)
    }
}
