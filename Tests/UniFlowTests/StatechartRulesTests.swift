import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// The rules of statechart definitions and explicit actions (docs/statecharts.md)
// that StatechartTests.swift does not already check: what is refused, with its
// status and message, and that nothing changes when it is.

private func registered(_ definition: String) -> (status: Int32, error: String, h: Harness) {
    let h = Harness()
    let status = uf_register(h.d, definition)
    return (status, h.lastError, h)
}

@Suite struct StatechartDefinitionRuleTests {
    @Test(arguments: [
        // Final states: no behaviour of their own, no children.
        (#"{"feature":"S","states":{"F":{"type":"final","after":[{"ms":5,"send":"x"}]}}}"#,
         "features[0].states.F.after: a final state has no 'after'"),
        (#"{"feature":"S","states":{"A":{},"F":{"type":"final","always":{"into":"A"}}}}"#,
         "features[0].states.F.always: a final state has no 'always'"),
        (#"{"feature":"S","states":{"F":{"type":"final","invoke":{"src":"svc"}}}}"#,
         "features[0].states.F.invoke: a final state has no 'invoke'"),
        (#"{"feature":"S","states":{"F":{"type":"final","initial":"A","states":{"A":{}}}}}"#,
         "features[0].states.F.states: a final state has no child states"),
        (#"{"feature":"S","states":{"A":{"output":{"x":1}}}}"#,
         "features[0].states.A.output: only a final state has an output"),
        // History states: a pseudo-state, and only inside another state's children.
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{},"H":{"type":"history","states":{"X":{}}}}}}}"#,
         "features[0].states.P.states.H.states: a history state has no child states"),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{},"H":{"type":"history","on":{"x":"A"}}}}}}"#,
         "features[0].states.P.states.H.on: a history state has no 'on'"),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{},"H":{"type":"history","entry":[]}}}}}"#,
         "features[0].states.P.states.H.entry: a history state has no 'entry'"),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{},"H":{"type":"history","history":"all"}}}}}"#,
         "features[0].states.P.states.H.history: expected \"shallow\" or \"deep\", got \"all\""),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{"history":"deep"}}}}}"#,
         "features[0].states.P.states.A.history: only a history state has 'history'"),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{"default":"P"}}}}}"#,
         "features[0].states.P.states.A.default: only a history state has 'default'"),
        (#"{"feature":"S","states":{"P":{"initial":"A","states":{"A":{},"H":{"type":"history","default":"Q"}}},"Q":{}}}"#,
         "features[0].states.P.states.H.default: Q is not a state inside P"),
        // `initial`: a compound state's child, in the state; states of the feature, in the feature.
        (#"{"feature":"S","states":{"A":{"initial":"B"}}}"#,
         "features[0].states.A.initial: only a state with child states (not parallel) has 'initial'"),
        (#"{"feature":"S","states":{"P":{"type":"parallel","initial":"R","states":{"R":{}}}}}"#,
         "features[0].states.P.initial: only a state with child states (not parallel) has 'initial'"),
        (#"{"feature":"S","states":{"A":{"initial":"B","states":{"B":{}}},"C":{"initial":"A.B","states":{"D":{}}}}}"#,
         "features[0].states.C.initial: 'A.B' is not a child state of C"),
        (#"{"feature":"S","states":{"A":{"on":{"go":"B"}},"B":{}},"initial":["Nope"],"entry":[]}"#,
         "features[0].initial[0]: unknown state 'Nope'"),
        (#"{"feature":"S","type":"parallel","states":{"R1":{"initial":"On","states":{"On":{}}},"R2":{"initial":"On","states":{"On":{}}}},"initial":["On"]}"#,
         "features[0].initial[0]: ambiguous state 'On' (R1.On, R2.On)"),
        (#"{"feature":"S","states":{"A":{"on":{"go":"B"}},"B":{}},"initial":["A","A"],"entry":[]}"#,
         "features[0].initial[1]: duplicate state 'A'"),
        // `onDone` is a compound or parallel state's.
        (#"{"feature":"S","states":{"A":{"onDone":"B"},"B":{}}}"#,
         "features[0].states.A.onDone: only a compound or parallel state has 'onDone'"),
        // The feature's own type, and state names.
        (#"{"feature":"S","type":"final","states":{"A":{"on":{"go":"A"}}}}"#,
         "features[0].type: a feature's type is \"parallel\", got \"final\""),
        (#"{"feature":"S","states":{"A.B":{"initial":"C","states":{"C":{}}}}}"#,
         "features[0].states: 'A.B' is not a valid name"),
        (#"{"feature":"S","states":{"A":{"initial":"B","states":{"B":{}},"colour":"red"}}}"#,
         "features[0].states.A: unknown key 'colour'"),
        // Events: the reserved names may be listened to, never sent by an effect.
        (#"{"feature":"S","states":{"A":{"entry":[{"send":"xstate.init"}]}}}"#,
         "features[0].states.A.entry[0].send: 'xstate.init' is not a valid event name"),
        (#"{"feature":"S","states":{"A":{"on":{"xstate.nonsense":"A"},"initial":"B","states":{"B":{}}}}}"#,
         "features[0].states.A.on: 'xstate.nonsense' is not a valid event name"),
        (#"{"feature":"S","states":{"A":{"entry":[{"send":"go","id":"t"}]}}}"#,
         "features[0].states.A.entry[0].id: only a delayed send has an id"),
        (#"{"feature":"S","states":{"A":{"after":[{"ms":5,"submit":[]}]}},"entry":[]}"#,
         "features[0].states.A.after[0]: a statechart's timer sends an event ('send'), it does not submit"),
        // Declared transitions: every state-level target is checked at registration.
        (#"{"feature":"S","states":{"A":{"always":{"into":"B"}},"B":{"initial":"C","states":{"C":{}}}},"transitions":{"B":["A"]}}"#,
         "features[0].states.A.always.into: A -> B is not a declared transition"),
        (#"{"feature":"S","states":{"A":{"initial":"X","onDone":"B","states":{"X":{"on":{"end":"F"}},"F":{"type":"final"}}},"B":{}},"transitions":{"A":["A"]}}"#,
         "features[0].states.A.onDone: A -> B is not a declared transition"),
        (#"{"feature":"S","states":{"A":{"after":[{"ms":5,"send":"t"}],"on":{"t":"B"}},"B":{"initial":"C","states":{"C":{}}}},"transitions":{"A":["A.X"]}}"#,
         "features[0].transitions.A[0]: unknown state 'A.X'"),
        // Guards name states too.
        (#"{"feature":"S","states":{"A":{"on":{"go":{"into":"B","call":{"in":"Nope"}}}},"B":{"initial":"C","states":{"C":{}}}}}"#,
         "features[0].states.A.on.go.call.in: unknown state 'Nope'"),
    ])
    func refusedDefinitionsChangeNothing(_ definition: String, _ message: String) {
        let result = registered(definition)
        #expect(result.status == UF_ESCHEMA)
        #expect(result.error == message)
        #expect(result.h.state == "{}")
        #expect(uf_register(result.h.d, #"{"feature":"S","states":{"A":{}},"entry":[]}"#) == UF_OK, "\(result.h.lastError)")
    }

    /// The limits are inclusive: 32 levels and 4,096 states are accepted.
    @Test func thirtyTwoLevelsAnd4096StatesAreAccepted() {
        var states = #"{"L32":{}}"#
        for level in stride(from: 31, through: 1, by: -1) { states = #"{"L\#(level)":{"initial":"L\#(level + 1)","states":\#(states)}}"# }
        let deep = registered(#"{"feature":"Deep","states":\#(states)}"#)
        #expect(deep.status == UF_OK, "\(deep.error)")
        #expect(deep.h.submit(#"{"kind":"initialize","feature":"Deep","into":"L1"}"#) == UF_OK)
        var active: Int32 = 0
        #expect(uf_state_active(deep.h.d, "Deep", nil, "L32", &active) == UF_OK)
        #expect(active == 1)

        let children = (0..<4095).map { #""s\#($0)":{}"# }.joined(separator: ",")
        let wide = registered(#"{"feature":"Wide","states":{"P":{"initial":"s0","states":{\#(children)}}}}"#)
        #expect(wide.status == UF_OK, "\(wide.error)")
    }

    /// A field may be declared in two states that are never active together.
    @Test func aFieldMayBeDeclaredInExclusiveStates() {
        let c = ChartLog(#"""
        {"feature": "C", "type": "parallel",
         "states": {"R": {"initial": "A", "states": {"A": {"fields": {"n": {"type": "number", "default": 1}}, "on": {"go": "B"}},
                                                     "B": {"fields": {"n": {"type": "string", "default": "one"}}}}}}}
        """#)
        #expect(c.start("R") == UF_OK)
        #expect(c.payload == #"{"n":1}"#)
        #expect(c.send("go") == UF_OK, "\(c.h.lastError)")
        // The field left with A and came back with B's default.
        #expect(c.payload == #"{"n":"one"}"#)
    }

    /// An invoke's `src` must be a registered service (UF_ENOTFOUND), also in a list.
    @Test func anInvokeListNamesTheServiceThatIsMissing() {
        let h = Harness()
        #expect(uf_register_service(h.d, "known", { _, _ in 0 }, nil, nil, nil) == UF_OK)
        #expect(uf_register(h.d, #"{"feature":"S","states":{"A":{"invoke":[{"src":"known"},{"src":"unknown"}]}}}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "features[0].states.A.invoke[1]: unknown service 'unknown'")
        #expect(h.state == "{}")
    }
}

@Suite struct StatechartActionRuleTests {
    private static let chart = #"""
    {"feature": "C", "fields": {"n": {"type": "number", "default": 0}},
     "states": {"A": {"on": {"go": "B"}},
                "B": {"initial": "B1", "fields": {"label": {"type": "string", "default": "b"}},
                      "states": {"B1": {}, "B2": {}}},
                "D": {}},
     "on": {"jump": "D"},
     "transitions": {"A": ["B"], "B": ["A", "B"], "D": ["A"]},
     "initial": ["A", "B"]}
    """#

    /// Outer sends of the names only the library sends are UF_ESCHEMA, from
    /// JSON and from `uf_send` alike (a name that fits no pattern at all stays
    /// UF_EINVAL from C, as any bad argument).
    @Test(arguments: ["xstate.done.actor.x", "xstate.error.actor.x", "xstate.after.5.A", "xstate.done.state.B", "xstate.init"])
    func anOuterSendOfAReservedNameIsRefused(_ event: String) {
        let c = ChartLog(StatechartActionRuleTests.chart)
        #expect(c.start("A") == UF_OK)
        #expect(c.h.submit(#"{"kind":"send","feature":"C","event":"\#(event)"}"#) == UF_ESCHEMA)
        #expect(c.h.lastError == "action.event: '\(event)' is reserved: only the library sends it")
        #expect(uf_send(c.h.d, "C", nil, event, nil) == UF_ESCHEMA)
        #expect(c.h.lastError == "uf_action.event: '\(event)' is reserved: only the library sends it")
        #expect(uf_send(c.h.d, "C", nil, "xstate.nonsense", nil) == UF_EINVAL)
        #expect(c.h.lastError == "uf_action.event: 'xstate.nonsense' is not a valid event name")
        #expect(c.state == "A")
    }

    /// A feature-level target is checked when taken: one `transitions` does not
    /// allow is not taken.
    @Test func aFeatureLevelTargetNotDeclaredIsNotTaken() {
        let c = ChartLog(StatechartActionRuleTests.chart)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("jump") == UF_REJECTED)
        #expect(c.h.lastError == "C in state A has no transition for event 'jump'")
        #expect(c.state == "A")
    }

    /// Explicit actions: a transition `transitions` does not allow, an initial
    /// state `initial` does not list, an ambiguous or unknown name.
    @Test func explicitActionsAreCheckedAgainstTheDeclarations() {
        let c = ChartLog(StatechartActionRuleTests.chart)
        #expect(c.h.submit(#"{"kind":"initialize","feature":"C","into":"D"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C cannot be initialized into D: not an initial state")
        #expect(c.h.submit(#"{"kind":"initialize","feature":"C","into":"B.B2"}"#) == UF_OK, "\(c.h.lastError)")
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","into":"D"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C cannot transition from B.B2 into D: not a declared transition")
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","into":"B2"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C is already in state B.B2")
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","from":"B","into":"B1"}"#) == UF_OK, "\(c.h.lastError)")
        #expect(c.state == "B.B1")
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","into":"Z"}"#) == UF_ENOTFOUND)
        #expect(c.h.lastError == "unknown state 'Z' of feature C")
        #expect(c.h.submit(#"{"kind":"actualize","feature":"C","in":"A"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C is in state B.B1, not A")
        #expect(c.state == "B.B1")
    }

    /// An action's payload sets the fields it names; the others keep their values.
    @Test func anActionsPayloadSetsTheFieldsItNames() {
        let c = ChartLog(StatechartActionRuleTests.chart)
        #expect(c.h.submit(#"{"kind":"initialize","feature":"C","into":"B","payload":{"n":2}}"#) == UF_OK)
        #expect(c.payload == #"{"n":2,"label":"b"}"#)
        #expect(c.h.submit(#"{"kind":"actualize","feature":"C","in":"B","payload":{"label":"x"}}"#) == UF_OK)
        #expect(c.payload == #"{"n":2,"label":"x"}"#)
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","into":"A","payload":{"n":3}}"#) == UF_OK)
        // `label` left with B.
        #expect(c.payload == #"{"n":3}"#)
        #expect(c.h.submit(#"{"kind":"actualize","feature":"C","in":"A","payload":{"n":"three"}}"#) == UF_ESCHEMA)
        #expect(c.h.lastError == "C.A.n: expected number, got string")
        #expect(c.payload == #"{"n":3}"#)
    }

    /// `in`/`from` of any level hold when that state is active.
    @Test func fromHoldsForAnActiveAncestor() {
        let c = ChartLog(StatechartActionRuleTests.chart)
        #expect(c.start("B") == UF_OK)
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","from":"A","into":"B"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C is in state B.B1, not A")
        #expect(c.h.submit(#"{"kind":"trigger","feature":"C","in":"B"}"#) == UF_OK, "\(c.h.lastError)")
    }

    /// A done instance refuses everything but deinitialization.
    @Test func aDoneInstanceOnlyDeinitializes() {
        let c = ChartLog(#"{"feature": "C", "states": {"A": {"on": {"end": "F"}}, "F": {"type": "final"}}}"#)
        #expect(c.start("A") == UF_OK)
        #expect(c.send("end") == UF_OK)
        #expect(c.h.submit(#"{"kind":"transition","feature":"C","into":"A"}"#) == UF_REJECTED)
        #expect(c.h.lastError == "C is done (in state F)")
        #expect(c.h.submit(#"{"kind":"deinitialize","feature":"C"}"#) == UF_OK)
        #expect(c.h.feature("C") == nil)
    }

    /// Every region of a parallel feature final: the instance is done.
    @Test func aParallelFeatureIsDoneWhenEveryRegionIs() {
        let c = ChartLog(#"""
        {"feature": "C", "type": "parallel", "states": {
           "R1": {"initial": "A", "states": {"A": {"on": {"a": "R1.F"}}, "F": {"type": "final"}}},
           "R2": {"initial": "B", "states": {"B": {"on": {"b": "R2.F"}}, "F": {"type": "final"}}}}}
        """#)
        #expect(c.start("R1") == UF_OK, "\(c.h.lastError)")
        #expect(c.send("a") == UF_OK)
        #expect(c.h.feature("C") == #"{"state":"R1.F,R2.B","payload":{}}"#)
        #expect(c.send("b") == UF_OK)
        #expect(c.h.feature("C") == #"{"state":"R1.F,R2.F","payload":{},"status":"done"}"#)
        #expect(c.send("a") == UF_REJECTED)
        #expect(c.h.lastError == "C is done (in state R1.F,R2.F)")
    }

    /// A macrostep undone by a failed payload check leaves no timer armed and
    /// no history written.
    @Test func anUndoneMacrostepArmsNoTimerAndWritesNoHistory() {
        let c = ChartLog(#"""
        {"feature": "C", "fields": {"n": {"type": "integer", "default": 0}},
         "states": {
           "P": {"initial": "A", "on": {"leave": {"into": "Q", "actions": [{"assign": {"n": "many"}}]}},
                 "states": {"A": {}, "H": {"type": "history"}}},
           "Q": {"after": [{"ms": 10, "send": "tick"}], "on": {"tick": "P.H"}}}}
        """#, options: #"{"clock":"manual"}"#)
        #expect(c.start("P") == UF_OK)
        let before = c.h.state
        #expect(c.send("leave") == UF_ESCHEMA)
        #expect(c.h.lastError == "C.Q.n: expected integer, got string")
        #expect(c.h.state == before)
        #expect(c.h.timers == "[]")
    }

    /// `deinitialize` runs no exit effects and stops the instance's services.
    @Test func deinitializeRunsNoExitEffectsAndStopsServices() {
        var stops = 0
        let box = Box<() -> Void>({ stops += 1 }, freed: FreeCounter())
        let c = ChartLog(#"""
        {"feature": "C", "states": {"A": {"exit": [\#(logged("exit A"))], "invoke": {"src": "svc"}}}}
        """#) { h in
            _ = uf_register_service(h.d, "svc", { _, _ in 0 }, { _, payload in
                Unmanaged<Box<() -> Void>>.fromOpaque(payload!).takeUnretainedValue().value()
                return 0
            }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
        }
        #expect(c.start("A") == UF_OK)
        #expect(c.h.submit(#"{"kind":"deinitialize","feature":"C"}"#) == UF_OK)
        #expect(c.log == [])
        #expect(stops == 1)
        #expect(c.h.feature("C") == nil)
    }

    /// A `submit` effect's template on its own keyed feature, without a key,
    /// acts on the instance whose effect it is.
    @Test func aSubmitWithoutAKeyActsOnItsOwnInstance() {
        let h = Harness(#"""
        {"feature": "K", "instances": "keyed", "states": {
           "A": {"on": {"go": {"into": "B", "actions": [{"submit": [{"kind": "send", "feature": "K", "event": "next"}]}]}}},
           "B": {"on": {"next": "C"}}, "C": {}}}
        """#)
        for key in ["x", "y"] { h.submit(#"{"kind":"initialize","feature":"K","key":"\#(key)","into":"A"}"#) }
        #expect(uf_send(h.d, "K", "x", "go", nil) == UF_OK, "\(h.lastError)")
        #expect(h.state == #"{"K":{"x":{"state":"C","payload":{}},"y":{"state":"A","payload":{}}}}"#)
    }

    /// Interceptors see outer actions only, not the internal microsteps of
    /// their macrostep (which subscribers do see, as queued actions).
    @Test func interceptorsSeeOnlyTheOuterAction() {
        let c = ChartLog(#"""
        {"feature": "C", "states": {"A": {"on": {"go": {"into": "B", "actions": [{"send": "more"}]}}},
                                    "B": {"on": {"more": "D"}}, "D": {"always": {"into": "E"}}, "E": {}}}
        """#)
        #expect(c.start("A") == UF_OK)
        var seen: [String] = []
        intercept(c.h, "C") { a in
            seen.append(String(cString: uf_intercepted_json(a)))
            return 0
        }
        let recorder = c.h.record()
        #expect(c.send("go") == UF_OK)
        #expect(c.state == "E")
        #expect(seen.count == 1)
        #expect(seen.first?.contains(#""event":"go""#) == true)
        #expect(recorder.mutations.map { $0.contains(#""action":{"kind":"send","event":"more"}"#) } == [false, true, false])
        #expect(recorder.mutations.last?.contains(#""action":{"kind":"always"}"#) == true)
    }
}

/// An explicit action's own payload sets only fields the configuration it
/// reaches declares: a field no active state (nor the feature) declares is a
/// typo, refused with its path, not dropped with the fields that leave.
@Suite struct StatechartOwnPayloadTests {
    static let player = #"""
    {"feature": "Player", "fields": {"volume": {"type": "integer", "default": 5}},
     "states": {"Off": {"on": {"power": "On"}},
                "On": {"fields": {"track": {"type": "string", "default": ""}}, "initial": "Idle",
                       "states": {"Idle": {}, "Busy": {}}}}}
    """#

    @Test(arguments: [
        (#"{"kind":"initialize","feature":"Player","into":"Off","payload":{"track":"x"}}"#, "", "Player.Off.track: unknown field"),
        (#"{"kind":"transition","feature":"Player","into":"On","payload":{"volum":3}}"#, "Off", "Player.On.Idle.volum: unknown field"),
        (#"{"kind":"actualize","feature":"Player","in":"Off","payload":{"track":"y"}}"#, "Off", "Player.Off.track: unknown field"),
    ])
    func anUndeclaredFieldIsUFESCHEMAAndChangesNothing(action: String, start: String, message: String) {
        let h = Harness(Self.player)
        if !start.isEmpty {
            #expect(h.submit(#"{"kind":"initialize","feature":"Player","into":"\#(start)"}"#) == UF_OK, "\(h.lastError)")
        }
        let before = h.state
        #expect(h.submit(action) == UF_ESCHEMA)
        #expect(h.lastError == message)
        #expect(h.state == before)
    }

    @Test func declaredFieldsOfTheStatesEnteredAreSet() {
        let h = Harness(Self.player)
        #expect(h.submit(#"{"kind":"initialize","feature":"Player","into":"Off","payload":{"volume":2}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Player","into":"Busy","payload":{"track":"t"}}"#) == UF_OK, "\(h.lastError)")
        #expect(h.feature("Player") == #"{"state":"On.Busy","payload":{"volume":2,"track":"t"}}"#)
    }
}
