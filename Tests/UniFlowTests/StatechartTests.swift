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
        #expect(h.lastError == "action.event: 'xstate.done.state.Active' is not a valid event name")
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
