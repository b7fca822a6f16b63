import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// Events (docs/events.md): a state's or a feature's `on` names events, and a
// `send` lets the definition choose the next state.

// MARK: Helpers

/// Registers a host handler backed by a closure; its `payload_free` is counted.
@discardableResult
func registerHandler(_ h: Harness, _ name: String, freed: FreeCounter = FreeCounter(),
                     _ body: @escaping (OpaquePointer) -> Int32) -> Int32 {
    let box = Box(body, freed: freed)
    return uf_register_handler(h.d, name, { call, payload in
        Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(call!)
    }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
}

/// Adds an interceptor backed by a closure; returns its id.
@discardableResult
func intercept(_ h: Harness, _ feature: String?, _ body: @escaping (OpaquePointer) -> Int32) -> UInt64 {
    let box = Box(body, freed: FreeCounter())
    var id: UInt64 = 0
    let status = uf_intercept(h.d, feature, { a, payload in
        Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(a!)
    }, Unmanaged.passRetained(box).toOpaque(), releaseBox, &id)
    #expect(status == UF_OK)
    return id
}

/// A `uf_action` whose strings live as long as the value.
final class CAction {
    private var strings: [UnsafeMutablePointer<CChar>] = []
    var action = uf_action()

    init(_ kind: uf_action_kind, feature: String?, event: String? = nil, key: String? = nil,
         payload: String? = nil, from: String? = nil, into: String? = nil) {
        action.size = UInt32(MemoryLayout<uf_action>.size)
        action.kind = kind
        action.feature = keep(feature)
        action.event = keep(event)
        action.key = keep(key)
        action.payload_json = keep(payload)
        action.from = keep(from)
        action.into = keep(into)
    }

    func keep(_ text: String?) -> UnsafePointer<CChar>? {
        guard let text, let copy = strdup(text) else { return nil }
        strings.append(copy)
        return UnsafePointer(copy)
    }

    func dispatch(_ d: OpaquePointer) -> Int32 { uf_dispatch(d, &action) }

    deinit { strings.forEach { free($0) } }
}

/// The last `uf_binding_call` data a handler saw, and what it returned.
final class GuardLog {
    var given: [String] = []
    var mutation: [String] = []
    var setOutput: [Int32] = []
}

@Suite struct EventDefinitions {
    @Test func onOnStatesAndOnTheFeatureIsKeptExactlyAsRegistered() {
        let definition = #"{"feature":"Door","states":{"Closed":{"on":{"open":"Open","knock":[{"into":"Closed","actualize":true,"spec":"nobody home","if":{"var":"event.payload.loud"}},{"into":"Open","call":"answer","payload":{"by":{"$":{"var":"event.payload.who"}}}}]}},"Open":{"fields":{"by":{"type":"string","optional":true}}}},"initial":["Closed"],"transitions":{"Closed":["Open"],"Open":["Closed"]},"on":{"slam":"Closed"}}"#
        let h = Harness()
        registerHandler(h, "answer") { _ in 1 }
        #expect(uf_register(h.d, definition) == UF_OK, "\(h.lastError)")
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(h.d, &out) == UF_OK)
        defer { uf_free(out) }
        #expect(out.map { String(cString: $0) } == #"{"features":[\#(definition)]}"#)
    }

    @Test func anActualizationOfItsOwnStateNeedsNoDeclaredTransition() {
        let h = Harness(#"{"feature": "F", "states": {"A": {"on": {"poke": {"into": "A", "actualize": true}}}, "B": {}}, "transitions": {"A": ["B"]}}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        #expect(uf_send(h.d, "F", nil, "poke", nil) == UF_OK)
        #expect(h.state == #"{"F":{"state":"A","payload":{}}}"#)
    }

    /// Each malformed `on`, with the status and the exact message (the path of
    /// the element, from `features[i]`).
    @Test(arguments: [
        // Unknown target states, in every form.
        (#"{"feature":"T","states":{"Amount":{"on":{"next":[{"into":"InvalidAmount"},{"into":"Tarifs"}]}},"InvalidAmount":{},"Tariffs":{}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next[1].into: unknown state 'Tarifs'"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":["Tariffs","Tarifs"]}},"Tariffs":{}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next[1]: unknown state 'Tarifs'"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":"Tarifs"}},"Tariffs":{}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next: unknown state 'Tarifs'"),
        (#"{"feature":"T","states":{"Amount":{}},"on":{"cancel":{"into":"Start"}}}"#,
         UF_ESCHEMA, "features[0].on.cancel.into: unknown state 'Start'"),
        // Empty target lists.
        (#"{"feature":"T","states":{"Amount":{"on":{"next":[]}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next: a list of targets must not be empty"),
        (#"{"feature":"T","states":{"Amount":{}},"on":{"cancel":[]}}"#,
         UF_ESCHEMA, "features[0].on.cancel: a list of targets must not be empty"),
        // A state's target must be a declared transition.
        (#"{"feature":"T","states":{"Amount":{"on":{"next":"Tariffs"}},"Tariffs":{}},"transitions":{"Tariffs":["Amount"]}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next: Amount -> Tariffs is not a declared transition"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":["Amount",{"into":"Tariffs","spec":"ok"}]}},"Tariffs":{}},"transitions":{"Amount":["Amount"]}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next[1].into: Amount -> Tariffs is not a declared transition"),
        (#"{"feature":"T","states":{"Amount":{"on":{"stay":{"into":"Amount"}}},"Tariffs":{}},"transitions":{"Amount":["Tariffs"]}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.stay.into: Amount -> Amount is not a declared transition"),
        // Event names follow the name pattern.
        (#"{"feature":"T","states":{"Amount":{"on":{"next-step":"Amount"}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on: 'next-step' is not a valid event name"),
        (#"{"feature":"T","states":{"Amount":{}},"on":{"":"Amount"}}"#,
         UF_ESCHEMA, "features[0].on: '' is not a valid event name"),
        (#"{"feature":"T","states":{"Amount":{}},"on":{"9lives":"Amount"}}"#,
         UF_ESCHEMA, "features[0].on: '9lives' is not a valid event name"),
        // The shape of a target.
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","guard":"ok"}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next: unknown key 'guard'"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":[{"if":true}]}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next[0]: missing key 'into'"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":1}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.into: expected a state name, got number"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":2}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next: expected a state name or an object, got number"),
        (#"{"feature":"T","states":{"Amount":{"on":["next"]}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on: expected object, got array"),
        (#"{"feature":"T","states":{"Amount":{}},"on":"next"}"#,
         UF_ESCHEMA, "features[0].on: expected object, got string"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","if":{"bogus":[1]}}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.if: unknown operator 'bogus'"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","call":7}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.call: expected string, got number"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","payload":[]}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.payload: expected object, got array"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","payload":{"a":{"$":{"==":[1]}}}}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.payload.a.$: operator '==' takes 2 arguments, got 1"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","spec":false}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.spec: expected string, got boolean"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","actualize":"yes"}}}}}"#,
         UF_ESCHEMA, "features[0].states.Amount.on.next.actualize: expected boolean, got string"),
        // Handlers must be registered first, as for bindings.
        (#"{"feature":"T","states":{"Amount":{"on":{"next":[{"into":"Amount","call":"approve"}]}}}}"#,
         UF_ENOTFOUND, "features[0].states.Amount.on.next[0].call: unknown handler 'approve'"),
        (#"{"feature":"T","states":{"Amount":{"on":{"next":{"into":"Amount","call":"approve"}}}}}"#,
         UF_ENOTFOUND, "features[0].states.Amount.on.next.call: unknown handler 'approve'"),
        (#"[{"feature":"Ok","states":{"S":{}}},{"feature":"T","states":{"Amount":{}},"on":{"cancel":{"into":"Amount","call":"approve"}}}]"#,
         UF_ENOTFOUND, "features[1].on.cancel.call: unknown handler 'approve'"),
    ] as [(String, Int32, String)])
    func aMalformedOnIsRefusedWithItsPath(definition: String, status: Int32, message: String) {
        let h = Harness()
        #expect(uf_register(h.d, definition) == status)
        #expect(h.lastStatus == status)
        #expect(h.lastError == message)
        // All or nothing: nothing of the call was registered.
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(h.d, &out) == UF_OK)
        #expect(out.map { String(cString: $0) } == #"{"features":[]}"#)
        uf_free(out)
    }
}

@Suite struct Sends {
    // MARK: Choosing the target

    static let router = #"""
    {"feature": "Router",
     "states": {"A": {"on": {"go": [{"into": "B", "if": false}, {"into": "C"}],
                             "fall": {"into": "B", "if": {"var": "event.payload.take"}}}},
                "B": {}, "C": {}, "D": {}, "Final": {}},
     "initial": ["A"],
     "transitions": {"A": ["B", "C", "D"], "B": ["D", "Final"], "C": ["A"], "D": ["A"], "Final": []},
     "on": {"go": "D", "fall": "D", "home": ["A", "D"], "stay": {"into": "B", "actualize": true}}}
    """#

    @Test func aStatesOwnTargetsAreTriedInOrderBeforeTheFeatures() {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        // A's own `go`: the first target's guard fails, the second is taken.
        #expect(uf_send(h.d, "Router", nil, "go", nil) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"C","payload":{}}}"#)
        // C has no `go`... and the feature's `go` leads to D, which C -> D does not
        // allow: passed over. C takes `home` (feature-level, into A).
        #expect(uf_send(h.d, "Router", nil, "go", nil) == UF_REJECTED)
        #expect(h.lastError == "Router in state C has no transition for event 'go'")
        #expect(uf_send(h.d, "Router", nil, "home", nil) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
        // A's own `fall` is guarded: it is taken when the guard holds...
        #expect(uf_send(h.d, "Router", nil, "fall", #"{"take":true}"#) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"B","payload":{}}}"#)
        #expect(uf_send(h.d, "Router", nil, "go", nil) == UF_OK)  // feature-level: B -> D
        #expect(uf_send(h.d, "Router", nil, "home", nil) == UF_OK)
        // ...else the feature's `fall` is tried next.
        #expect(uf_send(h.d, "Router", nil, "fall", #"{"take":false}"#) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"D","payload":{}}}"#)
    }

    @Test func aFeatureLevelTargetIsPassedOverWhereTransitionsDoNotAllowItSoFinalStatesTakeNoEvent() {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        // `home` lists A first: from A, A -> A is not declared and is passed over,
        // so D is taken; from D, A is.
        #expect(uf_send(h.d, "Router", nil, "home", nil) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"D","payload":{}}}"#)
        #expect(uf_send(h.d, "Router", nil, "home", nil) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Router","from":"A","into":"B"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Router","from":"B","into":"Final"}"#) == UF_OK)
        let recorder = h.record()
        for event in ["go", "fall", "home"] {
            #expect(uf_send(h.d, "Router", nil, event, nil) == UF_REJECTED)
            #expect(h.lastError == "Router in state Final has no transition for event '\(event)'")
        }
        #expect(recorder.mutations.isEmpty)
        #expect(h.state == #"{"Router":{"state":"Final","payload":{}}}"#)
    }

    @Test func aFeatureLevelActualizationOfTheCurrentStateIsNotFilteredByTransitions() {
        let h = Harness(Self.router)
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Router","from":"A","into":"B"}"#) == UF_OK)
        // B -> B is not declared, but an actualization never needs a transition.
        #expect(uf_send(h.d, "Router", nil, "stay", nil) == UF_OK)
        #expect(recorder.mutations.last == #"{"seq":3,"kind":"actualization","feature":"Router","old":{"state":"B","payload":{}},"new":{"state":"B","payload":{}},"action":{"kind":"send","feature":"Router","event":"stay","into":"B"}}"#)
        // Elsewhere it is a transition into B, which A -> B allows but D -> B does not.
        #expect(h.submit(#"{"kind":"transition","feature":"Router","from":"B","into":"D"}"#) == UF_OK)
        #expect(uf_send(h.d, "Router", nil, "stay", nil) == UF_REJECTED)
        #expect(h.lastError == "Router in state D has no transition for event 'stay'")
    }

    @Test func aSendToAnAbsentFeatureOrWithNoTargetIsRejectedAndChangesNothing() {
        let h = Harness(Self.router)
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"send","feature":"Router","event":"go","id":"s1"}"#) == UF_REJECTED)
        #expect(h.lastError == "Router is not initialized")
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        // A valid name that no state takes.
        #expect(h.submit(#"{"kind":"send","feature":"Router","event":"unheard","payload":{"x":1}}"#) == UF_REJECTED)
        #expect(h.lastError == "Router in state A has no transition for event 'unheard'")
        #expect(h.lastStatus == UF_REJECTED)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
        #expect(recorder.mutations.count == 1)
        #expect(h.reports == [
            #"{"event":"rejected","action":{"kind":"send","feature":"Router","event":"go","id":"s1"},"status":"UF_REJECTED","reason":"Router is not initialized"}"#,
            #"{"event":"processed","action":{"kind":"initialize","feature":"Router","into":"A"}}"#,
            #"{"event":"rejected","action":{"kind":"send","feature":"Router","event":"unheard"},"status":"UF_REJECTED","reason":"Router in state A has no transition for event 'unheard'"}"#,
        ])
    }

    // MARK: Guards

    static let guarded = #"""
    {"feature": "Gate",
     "states": {"Closed": {"fields": {"code": {"type": "integer", "default": 42}},
                           "on": {"open": [{"into": "Open", "spec": "right code",
                                            "if": {"==": [{"var": "event.payload.code"}, {"var": "feature.payload.code"}]}},
                                           {"into": "Alarm", "spec": "the alarm is armed",
                                            "if": {"==": [{"var": "model.Alarm.state"}, "Armed"]}},
                                           {"into": "Open", "spec": "the host agrees", "call": "ask"},
                                           {"into": "Jammed", "spec": "both", "if": {"var": "event.payload.force"}, "call": "ask"}]}},
                "Open": {}, "Alarm": {}, "Jammed": {}}}
    """#

    static let alarm = #"{"feature": "Alarm", "states": {"Off": {}, "Armed": {}}}"#

    @Test func aGuardRuleReadsTheModelTheEventAndTheFeature() {
        let h = Harness()
        registerHandler(h, "ask") { _ in 0 }
        #expect(uf_register(h.d, Self.alarm) == UF_OK)
        #expect(uf_register(h.d, Self.guarded) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Gate","into":"Closed"}"#) == UF_OK)
        // event.payload against feature.payload: the right code opens.
        #expect(uf_send(h.d, "Gate", nil, "open", #"{"code":42}"#) == UF_OK)
        #expect(h.feature("Gate") == #"{"state":"Open","payload":{}}"#)
        // model: a wrong code with the alarm armed raises it.
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Gate"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Gate","into":"Closed"}"#) == UF_OK)
        #expect(uf_send(h.d, "Gate", nil, "open", #"{"code":1}"#) == UF_REJECTED)
        #expect(h.lastError == "Gate in state Closed has no transition for event 'open'")
        #expect(h.submit(#"{"kind":"initialize","feature":"Alarm","into":"Armed"}"#) == UF_OK)
        #expect(uf_send(h.d, "Gate", nil, "open", #"{"code":1}"#) == UF_OK)
        #expect(h.state == #"{"Alarm":{"state":"Armed","payload":{}},"Gate":{"state":"Alarm","payload":{}}}"#)
    }

    @Test func aGuardHandlerSeesTheSameDataAndDecidesByItsResult() {
        let h = Harness()
        let log = GuardLog()
        var answer: Int32 = 0
        registerHandler(h, "ask") { call in
            log.given.append(String(cString: uf_binding_call_given_json(call)))
            log.mutation.append(String(cString: uf_binding_call_mutation_json(call)))
            log.setOutput.append(uf_binding_call_set_output(call, "1"))
            return answer
        }
        #expect(uf_register(h.d, Self.alarm) == UF_OK)
        #expect(uf_register(h.d, Self.guarded) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Alarm","into":"Off"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Gate","into":"Closed"}"#) == UF_OK)
        // 0 passes the target over (the fourth's `if` does not hold: the handler is
        // not asked again).
        #expect(uf_send(h.d, "Gate", nil, "open", #"{"code":7}"#) == UF_REJECTED)
        #expect(log.given == [#"{"model":{"Alarm":{"state":"Off","payload":{}},"Gate":{"state":"Closed","payload":{"code":42}}},"event":{"name":"open","payload":{"code":7}},"feature":{"state":"Closed","payload":{"code":42}}}"#])
        #expect(log.mutation == ["null"])
        #expect(log.setOutput == [UF_EMISUSE])
        // With `force`, the fourth target's `if` holds and its handler is asked too.
        #expect(uf_send(h.d, "Gate", nil, "open", #"{"force":true}"#) == UF_REJECTED)
        #expect(log.given.count == 3)
        // Any value above 0 takes the target.
        answer = 2
        #expect(uf_send(h.d, "Gate", nil, "open", nil) == UF_OK)
        #expect(log.given.count == 4)
        #expect(log.given.last == #"{"model":{"Alarm":{"state":"Off","payload":{}},"Gate":{"state":"Closed","payload":{"code":42}}},"event":{"name":"open","payload":{}},"feature":{"state":"Closed","payload":{"code":42}}}"#)
        #expect(h.feature("Gate") == #"{"state":"Open","payload":{}}"#)
    }

    @Test func aGuardRuleErrorFailsTheSendReportedAndNothingChanges() {
        let h = Harness(#"""
        {"feature": "F", "states": {"A": {"fields": {"n": {"type": "integer", "default": 0}},
                                          "on": {"divide": [{"into": "B", "if": {"/": [1, {"var": "feature.payload.n"}]}}, "C"],
                                                 "fill": {"into": "B", "payload": {"x": {"$": {"%": [1, 0]}}}}}},
                                    "B": {"fields": {"x": {"type": "number", "optional": true}}}, "C": {}}}
        """#)
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"send","feature":"F","event":"divide","id":"d"}"#) == UF_ESCHEMA)
        #expect(h.lastError == "F: event 'divide': rule error: rule result is not a finite number")
        #expect(h.submit(#"{"kind":"send","feature":"F","event":"fill"}"#) == UF_ESCHEMA)
        #expect(h.lastError == "F: event 'fill': rule error: rule result is not a finite number")
        #expect(h.state == #"{"F":{"state":"A","payload":{"n":0}}}"#)
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports == [
            #"{"event":"rejected","action":{"kind":"send","feature":"F","event":"divide","id":"d"},"status":"UF_ESCHEMA","reason":"F: event 'divide': rule error: rule result is not a finite number"}"#,
            #"{"event":"rejected","action":{"kind":"send","feature":"F","event":"fill"},"status":"UF_ESCHEMA","reason":"F: event 'fill': rule error: rule result is not a finite number"}"#,
        ])
    }

    @Test func aFailingGuardHandlerFailsTheSendWithECallback() {
        let h = Harness()
        registerHandler(h, "broken") { _ in -3 }
        #expect(uf_register(h.d, #"{"feature": "F", "states": {"A": {"on": {"go": [{"into": "B", "call": "broken"}, "A"]}}, "B": {}}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        h.captureReports()
        let recorder = h.record()
        #expect(uf_send(h.d, "F", nil, "go", nil) == UF_ECALLBACK)
        #expect(h.lastError == "F: event 'go': handler 'broken' failed (returned -3)")
        #expect(h.state == #"{"F":{"state":"A","payload":{}}}"#)
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports == [#"{"event":"rejected","action":{"kind":"send","feature":"F","event":"go"},"status":"UF_ECALLBACK","reason":"F: event 'go': handler 'broken' failed (returned -3)"}"#])
    }

    // MARK: Payloads

    static let steps = #"""
    {"feature": "Steps",
     "states": {"One": {"fields": {"name": {"type": "string", "optional": true}, "age": {"type": "integer", "optional": true},
                                   "draft": {"type": "boolean", "default": true}},
                        "on": {"next": "Two",
                               "skip": {"into": "Three", "payload": {"summary": {"$": {"cat": [{"var": "feature.payload.name"}, "/", {"var": "event.payload.note"}]}},
                                                                      "from": {"$": {"var": "feature.state"}}}}}},
                "Two": {"fields": {"name": "string", "age": {"type": "integer", "default": 18},
                                   "country": {"type": "string", "optional": true}, "step": {"type": "integer", "default": 2}},
                        "on": {"next": "Three", "back": "One"}},
                "Three": {"fields": {"summary": {"type": "string", "optional": true}, "from": {"type": "string", "optional": true},
                                     "name": {"type": "integer", "optional": true}},
                          "on": {"back": "Two"}}}}
    """#

    @Test func withoutATemplateEachFieldComesFromTheEventElseTheCurrentPayloadElseItsDefault() {
        let h = Harness(Self.steps)
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Steps","into":"One","payload":{"name":"Ada","draft":false}}"#) == UF_OK)
        // name: the event's (over the current one); age: none has it, its default;
        // country: none has it, optional, absent; step: default; `draft` is not a
        // field of Two and `extra` not a field at all: both dropped.
        #expect(uf_send(h.d, "Steps", nil, "next", #"{"name":"Grace","extra":1}"#) == UF_OK)
        #expect(h.feature("Steps") == #"{"state":"Two","payload":{"name":"Grace","age":18,"step":2}}"#)
        // Back: name and age come from the current payload (One declares both).
        #expect(uf_send(h.d, "Steps", nil, "back", nil) == UF_OK)
        #expect(h.feature("Steps") == #"{"state":"One","payload":{"name":"Grace","age":18,"draft":true}}"#)
        // Forth again: the event's age wins over the current one; its country is
        // taken.
        #expect(uf_send(h.d, "Steps", nil, "next", #"{"age":30,"country":"NZ"}"#) == UF_OK)
        #expect(h.feature("Steps") == #"{"state":"Two","payload":{"name":"Grace","age":30,"country":"NZ","step":2}}"#)
        #expect(recorder.mutations.count == 4)
    }

    @Test func aTemplateMakesThePayloadFromTheSameDataAsTheGuards() {
        let h = Harness(Self.steps)
        #expect(h.submit(#"{"kind":"initialize","feature":"Steps","into":"One","payload":{"name":"Ada"}}"#) == UF_OK)
        // Nothing carries forward next to a template: Three's `name` is not taken.
        #expect(uf_send(h.d, "Steps", nil, "skip", #"{"note":"later","name":5}"#) == UF_OK)
        #expect(h.feature("Steps") == #"{"state":"Three","payload":{"summary":"Ada/later","from":"One"}}"#)
    }

    @Test(arguments: ["5", #""s""#, "[1]", "true", "null", "{}"])
    func aPayloadTemplateThatGivesNoObjectFailsTheSend(eventPayload: String) {
        // The template is the whole payload: whatever it gives is checked, never taken as {}.
        let h = Harness(#"""
        {"feature": "F", "states": {"A": {"on": {"t": {"into": "B", "payload": {"$": {"var": "event.payload.v"}}}}},
                                    "B": {"fields": {"x": {"type": "integer", "optional": true}}}}}
        """#)
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        let missing = eventPayload == "{}"
        #expect(uf_send(h.d, "F", nil, "t", missing ? "{}" : #"{"v":\#(eventPayload)}"#) == UF_ESCHEMA)
        let got = missing ? "null" : (try! JSONParser.parse(eventPayload)).jsonTypeName
        #expect(h.lastError == "F: event 't': payload: expected object, got \(got)")
        #expect(h.feature("F") == #"{"state":"A","payload":{}}"#)
        #expect(uf_send(h.d, "F", nil, "t", #"{"v":{"x":2}}"#) == UF_OK)
        #expect(h.feature("F") == #"{"state":"B","payload":{"x":2}}"#)
    }

    @Test func aPayloadThatDoesNotFitTheTargetFailsTheSendAndNothingChanges() {
        let h = Harness(Self.steps)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"Steps","into":"One","payload":{"age":3}}"#) == UF_OK)
        let recorder = h.record()
        // Two needs a name: neither the event nor the current payload has one.
        #expect(uf_send(h.d, "Steps", nil, "next", nil) == UF_ESCHEMA)
        #expect(h.lastError == "Steps.Two.name: required field missing")
        // The event's value has the wrong type.
        #expect(uf_send(h.d, "Steps", nil, "next", #"{"name":7}"#) == UF_ESCHEMA)
        #expect(h.lastError == "Steps.Two.name: expected string, got number")
        #expect(h.state == #"{"Steps":{"state":"One","payload":{"age":3,"draft":true}}}"#)
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports.last == #"{"event":"rejected","action":{"kind":"send","feature":"Steps","event":"next"},"status":"UF_ESCHEMA","reason":"Steps.Two.name: expected string, got number"}"#)
        // A carried value that does not fit the target's type fails the same way.
        #expect(uf_send(h.d, "Steps", nil, "next", #"{"name":"Ada"}"#) == UF_OK)
        #expect(uf_send(h.d, "Steps", nil, "next", nil) == UF_ESCHEMA)
        #expect(h.lastError == "Steps.Three.name: expected integer, got string")
        #expect(h.feature("Steps") == #"{"state":"Two","payload":{"name":"Ada","age":3,"step":2}}"#)
    }

    // MARK: Transitions and actualizations

    @Test func actualizeTrueIntoTheCurrentStateIsAnActualizationWithoutItATransitionIntoTheSameState() {
        let h = Harness(options: #"{"clock":"manual"}"#, #"""
        {"feature": "Counter",
         "states": {"Counting": {"fields": {"n": {"type": "integer", "default": 0}},
                                 "after": [{"ms": 100, "submit": [{"kind": "transition", "feature": "Counter", "into": "Idle"}]}],
                                 "on": {"add": {"into": "Counting", "actualize": true,
                                                "payload": {"n": {"$": {"+": [{"var": "feature.payload.n"}, 1]}}}},
                                        "restart": "Counting",
                                        "leave": {"into": "Idle", "actualize": true}}},
                    "Idle": {}},
         "transitions": {"Counting": ["Counting", "Idle"], "Idle": ["Counting"]}}
        """#)
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Counter","into":"Counting"}"#) == UF_OK)
        #expect(uf_clock_advance(h.d, 60) == UF_OK)
        #expect(uf_send(h.d, "Counter", nil, "add", nil) == UF_OK)
        #expect(uf_send(h.d, "Counter", nil, "restart", nil) == UF_OK)
        #expect(recorder.mutations[1] == #"{"seq":2,"kind":"actualization","feature":"Counter","old":{"state":"Counting","payload":{"n":0}},"new":{"state":"Counting","payload":{"n":1}},"action":{"kind":"send","feature":"Counter","event":"add","into":"Counting"}}"#)
        #expect(recorder.mutations[2] == #"{"seq":3,"kind":"transition","feature":"Counter","old":{"state":"Counting","payload":{"n":1}},"new":{"state":"Counting","payload":{"n":1}},"action":{"kind":"send","feature":"Counter","event":"restart","into":"Counting"}}"#)
        // The transition re-entered the state: its timer started again at 60 ms.
        #expect(uf_clock_advance(h.d, 99) == UF_OK)
        #expect(h.feature("Counter") == #"{"state":"Counting","payload":{"n":1}}"#)
        #expect(uf_clock_advance(h.d, 1) == UF_OK)
        #expect(h.feature("Counter") == #"{"state":"Idle","payload":{}}"#)
        // `actualize` into another state is a plain transition.
        #expect(h.submit(#"{"kind":"transition","feature":"Counter","into":"Counting"}"#) == UF_OK)
        #expect(uf_send(h.d, "Counter", nil, "leave", nil) == UF_OK)
        #expect(recorder.mutations.last?.contains(#""kind":"transition","feature":"Counter","old":{"state":"Counting""#) == true)
        #expect(h.feature("Counter") == #"{"state":"Idle","payload":{}}"#)
    }

    @Test func anActualizationKeepsTheStateTimerRunning() {
        let h = Harness(options: #"{"clock":"manual"}"#, #"""
        {"feature": "Counter",
         "states": {"Counting": {"after": [{"ms": 100, "submit": [{"kind": "transition", "feature": "Counter", "into": "Idle"}]}],
                                 "on": {"poke": {"into": "Counting", "actualize": true}}},
                    "Idle": {}}}
        """#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Counter","into":"Counting"}"#) == UF_OK)
        #expect(uf_clock_advance(h.d, 60) == UF_OK)
        #expect(uf_send(h.d, "Counter", nil, "poke", nil) == UF_OK)
        #expect(uf_clock_advance(h.d, 40) == UF_OK)
        #expect(h.feature("Counter") == #"{"state":"Idle","payload":{}}"#)
    }

    // MARK: What a send carries

    @Test func mutationsAndReportsOfASendCarryItsEvent() {
        let h = Harness(#"{"feature": "Toggle", "states": {"Off": {"on": {"flip": "On"}}, "On": {"on": {"flip": "Off"}}}}"#)
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"send","feature":"Toggle","event":"flip","payload":{"why":"test"},"scope":"s.c","context":"main","id":"f1"}"#) == UF_OK)
        #expect(recorder.mutations.last == #"{"seq":2,"kind":"transition","feature":"Toggle","old":{"state":"Off","payload":{}},"new":{"state":"On","payload":{}},"action":{"kind":"send","feature":"Toggle","event":"flip","into":"On","scope":"s.c","context":"main","id":"f1"}}"#)
        #expect(h.reports.last == #"{"event":"processed","action":{"kind":"send","feature":"Toggle","event":"flip","into":"On","scope":"s.c","context":"main","id":"f1"}}"#)
    }

    @Test func interceptorsSeeASendOnceItsTargetIsChosen() {
        let h = Harness()
        var order: [String] = []
        registerHandler(h, "ask") { _ in order.append("guard"); return 1 }
        #expect(uf_register(h.d, #"{"feature": "F", "states": {"A": {"on": {"go": {"into": "B", "call": "ask"}}}, "B": {}}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        var veto: Int32 = 1
        let id = intercept(h, "F") { a in
            order.append("intercept")
            #expect(uf_intercepted_kind(a) == UF_ACTION_SEND)
            #expect(String(cString: uf_intercepted_feature(a)) == "F")
            #expect(uf_intercepted_key(a) == nil)
            #expect(String(cString: uf_intercepted_state(a)) == "B")
            #expect(String(cString: uf_intercepted_json(a)) == #"{"kind":"send","feature":"F","event":"go","into":"B","id":"x","payload":{"why":1}}"#)
            return veto
        }
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"send","feature":"F","event":"go","payload":{"why":1},"id":"x"}"#) == UF_REJECTED)
        #expect(h.lastError == "intercepted by \(id)")
        #expect(order == ["guard", "intercept"])
        #expect(recorder.mutations.isEmpty)
        #expect(h.state == #"{"F":{"state":"A","payload":{}}}"#)
        // No target, no interceptor: the send was rejected before.
        #expect(uf_send(h.d, "F", nil, "nothing", nil) == UF_REJECTED)
        #expect(order.count == 2)
        veto = 0
        #expect(h.submit(#"{"kind":"send","feature":"F","event":"go","payload":{"why":1},"id":"x"}"#) == UF_OK)
        #expect(order == ["guard", "intercept", "guard", "intercept"])
        #expect(h.state == #"{"F":{"state":"B","payload":{}}}"#)
    }

    // MARK: Refused at once

    @Test func aSendTakesNoViaCallback() {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        let freed = FreeCounter()
        var called = false
        #expect(h.submit(#"{"kind":"send","feature":"Router","event":"go"}"#, freed: freed) { _ in called = true; return 0 } == UF_EINVAL)
        #expect(h.lastError == "a send takes no via callback: its target and payload come from the definition")
        #expect(freed.count == 1)
        #expect(!called)
        // The struct's via, whatever else the action has, is refused and released once.
        let box = Box<(OpaquePointer) -> Int32>({ _ in called = true; return 0 }, freed: freed)
        let send = CAction(UF_ACTION_SEND, feature: "Router", event: "go")
        send.action.via = { ctx, payload in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(ctx!)
        }
        send.action.via_payload = Unmanaged.passRetained(box).toOpaque()
        send.action.via_payload_free = releaseBox
        #expect(send.dispatch(h.d) == UF_EINVAL)
        #expect(h.lastError == "uf_action: a via callback is not allowed on a send action")
        #expect(freed.count == 2)
        #expect(!called)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
    }

    @Test(arguments: [
        (#"{"kind":"send","feature":"Router","event":"next-step"}"#, UF_ESCHEMA, "action.event: 'next-step' is not a valid event name"),
        (#"{"kind":"send","feature":"Router","event":""}"#, UF_ESCHEMA, "action.event: '' is not a valid event name"),
        (#"{"kind":"send","feature":"Router","event":"2go"}"#, UF_ESCHEMA, "action.event: '2go' is not a valid event name"),
        (#"{"kind":"send","feature":"Router","event":"\#(String(repeating: "e", count: 257))"}"#, UF_ESCHEMA,
         "action.event: '\(String(repeating: "e", count: 257))' is not a valid event name"),
        (#"{"kind":"send","feature":"Router","event":7}"#, UF_ESCHEMA, "action.event: expected string, got number"),
        (#"{"kind":"send","feature":"Router"}"#, UF_ESCHEMA, "action: missing key 'event'"),
        (#"{"kind":"send","feature":"Router","event":"go","into":"B"}"#, UF_ESCHEMA, "action: 'into' cannot be used with kind 'send'"),
        (#"{"kind":"send","feature":"Router","event":"go","payload":[1]}"#, UF_ESCHEMA, "action.payload: expected object, got array"),
        (#"{"kind":"transition","feature":"Router","into":"B","event":"go"}"#, UF_ESCHEMA, "action: 'event' cannot be used with kind 'transition'"),
        (#"{"kind":"send","feature":"Nope","event":"go"}"#, UF_ENOTFOUND, "unknown feature 'Nope'"),
        (#"{"kind":"send","feature":"Router","key":"a","event":"go"}"#, UF_ESCHEMA, "Router is a single feature: an action on it takes no key"),
        (#"{"kind":"send","feature":"Router","event":"go","payload":{"a":1},}"#, UF_EJSON, "line 1, column 66: string or '}' expected near '}'"),
    ] as [(String, Int32, String)])
    func aMalformedSendInJSONIsRefusedAtOnce(action: String, status: Int32, message: String) {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        #expect(h.submit(action) == status)
        #expect(h.lastStatus == status)
        #expect(h.lastError == message)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
    }

    @Test(arguments: [
        (CActionCase(event: "next-step"), UF_EINVAL, "uf_action.event: 'next-step' is not a valid event name"),
        (CActionCase(event: ""), UF_EINVAL, "uf_action.event: '' is not a valid event name"),
        (CActionCase(event: nil), UF_EINVAL, "uf_action: 'event' is required on a send action"),
        (CActionCase(event: "go", from: "A"), UF_EINVAL, "uf_action: 'from' is not allowed on a send action"),
        (CActionCase(event: "go", into: "B"), UF_EINVAL, "uf_action: 'into' is not allowed on a send action"),
        (CActionCase(event: "go", same: true), UF_EINVAL, "uf_action: 'same' is not allowed on a send action"),
        (CActionCase(kind: UF_ACTION_TRANSITION, event: "go", into: "B"), UF_EINVAL, "uf_action: 'event' is not allowed on a transition action"),
        (CActionCase(event: "go", key: "a"), UF_EINVAL, "Router is a single feature: an action on it takes no key"),
        (CActionCase(event: "go", payload: "[1]"), UF_ESCHEMA, "uf_action.payload_json must be an object, got array"),
        (CActionCase(event: "go", feature: "Nope"), UF_ENOTFOUND, "unknown feature 'Nope'"),
    ] as [(CActionCase, Int32, String)])
    func aMalformedSendStructIsRefusedAtOnce(action: CActionCase, status: Int32, message: String) {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        let a = CAction(action.kind, feature: action.feature, event: action.event, key: action.key,
                        payload: action.payload, from: action.from, into: action.into)
        a.action.same = action.same ? 1 : 0
        #expect(a.dispatch(h.d) == status)
        #expect(h.lastStatus == status)
        #expect(h.lastError == message)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
    }

    @Test func ufSendChecksItsArguments() {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        #expect(uf_send(nil, "Router", nil, "go", nil) == UF_EINVAL)
        #expect(h.lastError == "uf_send: dispatcher is NULL")
        #expect(uf_send(h.d, nil, nil, "go", nil) == UF_EINVAL)
        #expect(h.lastError == "uf_send: feature is NULL")
        #expect(uf_send(h.d, "Router", nil, nil, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_send: event is NULL")
        #expect(uf_send(h.d, "Router", nil, "go", "{") == UF_EJSON)
        #expect(h.lastError == "line 1, column 1: string or '}' expected near end of file")
        #expect(uf_send(h.d, "Router", nil, "go", "null") == UF_ESCHEMA)
        #expect(h.lastError == "uf_action.payload_json must be an object, got null")
        #expect(uf_send(h.d, "Router", nil, "go-on", nil) == UF_EINVAL)
        #expect(h.lastError == "uf_action.event: 'go-on' is not a valid event name")
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)
        // NULL and {} are the same empty event payload.
        #expect(uf_send(h.d, "Router", nil, "go", "{}") == UF_OK)
        #expect(h.state == #"{"Router":{"state":"C","payload":{}}}"#)
    }

    // MARK: Keyed instances

    static let downloads = #"""
    {"feature": "Download", "instances": "keyed",
     "states": {"Idle": {"on": {"start": [{"into": "Busy", "spec": "only a_pdf", "if": {"==": [{"var": "feature.key"}, "a_pdf"]}},
                                          {"into": "Queued"}]}},
                "Busy": {"on": {"stop": "Idle"}}, "Queued": {}},
     "initial": ["Idle"], "transitions": {"Idle": ["Busy", "Queued"], "Busy": ["Idle"], "Queued": ["Idle"]},
     "on": {"reset": "Idle"}}
    """#

    @Test func aSendToAKeyedFeatureNeedsAKeyAndActsOnThatInstance() {
        let h = Harness(Self.downloads)
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","key":"a_pdf","into":"Idle"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","key":"b_iso","into":"Idle"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"send","feature":"Download","event":"start"}"#) == UF_ESCHEMA)
        #expect(h.lastError == "Download is keyed: an action on it needs a key")
        #expect(uf_send(h.d, "Download", nil, "start", nil) == UF_EINVAL)
        #expect(h.lastError == "Download is keyed: an action on it needs a key")
        #expect(uf_send(h.d, "Download", "a.pdf", "start", nil) == UF_EINVAL)
        #expect(h.lastError == "uf_action.key: 'a.pdf' contains '.'")
        // The guard reads feature.key: each instance takes its own target.
        #expect(uf_send(h.d, "Download", "a_pdf", "start", nil) == UF_OK)
        #expect(h.submit(#"{"kind":"send","feature":"Download","key":"b_iso","event":"start"}"#) == UF_OK)
        #expect(h.state == #"{"Download":{"a_pdf":{"state":"Busy","payload":{}},"b_iso":{"state":"Queued","payload":{}}}}"#)
        #expect(recorder.mutations.last == #"{"seq":4,"kind":"transition","feature":"Download","key":"b_iso","old":{"state":"Idle","payload":{}},"new":{"state":"Queued","payload":{}},"action":{"kind":"send","feature":"Download","key":"b_iso","event":"start","into":"Queued"}}"#)
        // Preconditions and rejections are per instance.
        #expect(uf_send(h.d, "Download", "b_iso", "stop", nil) == UF_REJECTED)
        #expect(h.lastError == "Download[b_iso] in state Queued has no transition for event 'stop'")
        #expect(uf_send(h.d, "Download", "c_zip", "reset", nil) == UF_REJECTED)
        #expect(h.lastError == "Download[c_zip] is not initialized")
        #expect(uf_send(h.d, "Download", "a_pdf", "stop", nil) == UF_OK)
        #expect(uf_send(h.d, "Download", "b_iso", "reset", nil) == UF_OK)
        #expect(h.state == #"{"Download":{"a_pdf":{"state":"Idle","payload":{}},"b_iso":{"state":"Idle","payload":{}}}}"#)
    }

    // MARK: Where sends come from

    @Test func bindingsSendEventsFromTheirTemplates() {
        let h = Harness(Self.downloads, #"""
        {"feature": "Queue", "states": {"Waiting": {"fields": {"n": {"type": "integer", "default": 0}},
                                                    "on": {"count": {"into": "Waiting", "actualize": true,
                                                                     "payload": {"n": {"$": {"+": [{"var": "feature.payload.n"}, {"var": "event.payload.by"}]}}}}}}},
         "bindings": [{"scenario": "Count queued downloads", "when": "TransitionInto<Download.Queued>",
                       "then": {"submit": [{"kind": "send", "feature": "Queue", "event": "count", "payload": {"by": 1}},
                                           {"kind": "send", "feature": "Download", "key": {"$": {"var": "mutation.key"}}, "event": "reset"}]}}]}
        """#)
        h.captureReports()
        #expect(h.submit(#"{"kind":"initialize","feature":"Queue","into":"Waiting"}"#) == UF_OK)
        for key in ["a_pdf", "b_iso", "c_zip"] {
            #expect(h.submit(#"{"kind":"initialize","feature":"Download","key":"\#(key)","into":"Idle"}"#) == UF_OK)
            #expect(uf_send(h.d, "Download", key, "start", nil) == UF_OK)
        }
        #expect(h.state == #"{"Download":{"a_pdf":{"state":"Busy","payload":{}},"b_iso":{"state":"Idle","payload":{}},"c_zip":{"state":"Idle","payload":{}}},"Queue":{"state":"Waiting","payload":{"n":2}}}"#)
        #expect(h.reports.filter { $0.contains(#""event":"count""#) } == [
            #"{"event":"processed","action":{"kind":"send","feature":"Queue","event":"count","into":"Waiting"}}"#,
            #"{"event":"processed","action":{"kind":"send","feature":"Queue","event":"count","into":"Waiting"}}"#,
        ])
    }

    @Test func timersSendEvents() {
        let h = Harness(options: #"{"clock":"manual"}"#, #"""
        {"feature": "Light", "states": {"Green": {"after": [{"ms": 500, "submit": [{"kind": "send", "feature": "Light", "event": "tick"}]}],
                                                  "on": {"tick": "Yellow"}},
                                        "Yellow": {"after": [{"ms": 250, "submit": [{"kind": "send", "feature": "Light", "event": "tick"}]}],
                                                   "on": {"tick": "Red"}},
                                        "Red": {"on": {"tick": "Green"}}}}
        """#)
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Light","into":"Green"}"#) == UF_OK)
        #expect(uf_clock_advance(h.d, 750) == UF_OK)
        #expect(h.feature("Light") == #"{"state":"Red","payload":{}}"#)
        #expect(recorder.mutations[1] == #"{"seq":2,"kind":"transition","feature":"Light","old":{"state":"Green","payload":{}},"new":{"state":"Yellow","payload":{}},"action":{"kind":"send","feature":"Light","event":"tick","into":"Yellow","timer":"Light.Green.after[0]"}}"#)
        // API timers take sends too, as JSON and as a struct.
        #expect(uf_submit_after(h.d, #"{"kind":"send","feature":"Light","event":"tick"}"#, 100, "json", 0) == UF_OK)
        #expect(uf_submit_after(h.d, #"{"kind":"send","feature":"Light","event":"tick-tock"}"#, 100, nil, 0) == UF_ESCHEMA)
        #expect(h.lastError == "action.event: 'tick-tock' is not a valid event name")
        #expect(uf_clock_advance(h.d, 100) == UF_OK)
        #expect(h.feature("Light") == #"{"state":"Green","payload":{}}"#)
        let tick = CAction(UF_ACTION_SEND, feature: "Light", event: "tick")
        #expect(uf_dispatch_after(h.d, &tick.action, 600, "struct", 0) == UF_OK)
        #expect(uf_clock_advance(h.d, 500) == UF_OK)  // the state timer: Yellow
        #expect(uf_clock_advance(h.d, 100) == UF_OK)  // the API timer: Red, before Yellow's own
        #expect(h.feature("Light") == #"{"state":"Red","payload":{}}"#)
        #expect(h.reports.contains(#"{"event":"processed","action":{"kind":"send","feature":"Light","event":"tick","into":"Red","timer":"struct"}}"#))
    }

    @Test func aTriggerSubmitsSendsCheckedWhenItIsSubmitted() {
        let h = Harness(Self.router)
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"trigger","feature":"Router","in":"A","submit":[{"kind":"send","feature":"Router","event":"go"},{"kind":"send","feature":"Router","event":"bad name"}]}"#) == UF_ESCHEMA)
        #expect(h.lastError == "submit[1]: action.event: 'bad name' is not a valid event name")
        #expect(h.submit(#"{"kind":"trigger","feature":"Router","in":"A","submit":[{"kind":"send","feature":"Router","event":"go"},{"kind":"send","feature":"Router","event":"home"}]}"#) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"A","payload":{}}}"#)  // A -> C -> A
    }

    @Test func aBatchOfSendsChoosesEachTargetOnTheModelItsPredecessorsLeft() {
        let h = Harness(Self.router)
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Router","into":"A"}"#) == UF_OK)
        // go: A -> C; home from C: A; fall with take: B.
        #expect(uf_submit_batch(h.d, #"[{"kind":"send","feature":"Router","event":"go"},{"kind":"send","feature":"Router","event":"home"},{"kind":"send","feature":"Router","event":"fall","payload":{"take":1}}]"#) == UF_OK)
        #expect(h.state == #"{"Router":{"state":"B","payload":{}}}"#)
        #expect(recorder.mutations.count == 4)
        #expect(recorder.mutations[1].contains(#""action":{"kind":"send","feature":"Router","event":"go","into":"C"}"#))
        // A send that finds no target rolls the whole batch back.
        let reports = h.reports.count
        #expect(uf_submit_batch(h.d, #"[{"kind":"send","feature":"Router","event":"go"},{"kind":"send","feature":"Router","event":"go"}]"#) == UF_REJECTED)
        #expect(h.lastError == "batch[1]: Router in state D has no transition for event 'go'")
        #expect(h.state == #"{"Router":{"state":"B","payload":{}}}"#)
        #expect(recorder.mutations.count == 4)
        #expect(Array(h.reports[reports...]) == [#"{"event":"rejected","action":{"kind":"send","feature":"Router","event":"go"},"status":"UF_REJECTED","reason":"Router in state D has no transition for event 'go'"}"#])
    }

    @Test func whatAGuardHandlerQueuesInsideABatchThatRollsBackIsDropped() {
        let h = Harness(Seeds.toggle)
        var queued: [Int32] = []
        registerHandler(h, "ask") { call in
            queued.append(uf_submit(uf_binding_call_dispatcher(call), #"{"kind":"initialize","feature":"Toggle","into":"On"}"#))
            return 1
        }
        #expect(uf_register(h.d, #"{"feature": "F", "states": {"A": {"on": {"go": {"into": "B", "call": "ask"}}}, "B": {}}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        #expect(uf_submit_batch(h.d, #"[{"kind":"send","feature":"F","event":"go"},{"kind":"send","feature":"F","event":"go"}]"#) == UF_REJECTED)
        #expect(h.lastError == "batch[1]: F in state B has no transition for event 'go'")
        #expect(queued == [UF_QUEUED])
        #expect(h.state == #"{"F":{"state":"A","payload":{}}}"#)
        // Committed, the batch runs what the guard queued after it.
        #expect(uf_submit_batch(h.d, #"[{"kind":"send","feature":"F","event":"go"}]"#) == UF_OK)
        #expect(queued == [UF_QUEUED, UF_QUEUED])
        #expect(h.state == #"{"Toggle":{"state":"On","payload":{}},"F":{"state":"B","payload":{}}}"#)
    }

    // MARK: The documented flow

    @Test func theTransferExampleRunsAsDocsEventsMdTellsIt() throws {
        let h = Harness()
        let root = "\(#filePath)".split(separator: "/").dropLast(3).joined(separator: "/")
        #expect(uf_register_file(h.d, "/\(root)/examples/definitions/transfer.json") == UF_OK, "\(h.lastError)")
        let steps: [(String, Int32, String)] = [
            (#"{"kind":"initialize","feature":"Transfer","into":"Amount","payload":{"country":"FR"}}"#, UF_OK,
             #"{"state":"Amount","payload":{"country":"FR"}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"next","payload":{"amount":50}}"#, UF_OK,
             #"{"state":"InvalidAmount","payload":{"country":"FR","amount":50}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"retry"}"#, UF_OK,
             #"{"state":"Amount","payload":{"country":"FR","amount":50}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"next","payload":{"amount":150}}"#, UF_OK,
             #"{"state":"Tariffs","payload":{"country":"FR","amount":150}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"select","payload":{"tariff":"express"}}"#, UF_OK,
             #"{"state":"Confirmation","payload":{"country":"FR","amount":150,"tariff":"express","fee":5}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"confirm","payload":{"error":"Please retry"}}"#, UF_OK,
             #"{"state":"Confirmation","payload":{"country":"FR","amount":150,"tariff":"express","fee":5,"error":"Please retry"}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"edit_tariff"}"#, UF_OK,
             #"{"state":"Tariffs","payload":{"country":"FR","amount":150}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"select"}"#, UF_OK,
             #"{"state":"Confirmation","payload":{"country":"FR","amount":150,"tariff":"standard","fee":1}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"cancel"}"#, UF_OK,
             #"{"state":"Amount","payload":{"country":"FR"}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"cancel"}"#, UF_REJECTED,
             #"{"state":"Amount","payload":{"country":"FR"}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"next","payload":{"amount":"a lot"}}"#, UF_ESCHEMA,
             #"{"state":"Amount","payload":{"country":"FR"}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"next","payload":{"amount":120}}"#, UF_OK,
             #"{"state":"Tariffs","payload":{"country":"FR","amount":120}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"select","payload":{"tariff":"standard"}}"#, UF_OK,
             #"{"state":"Confirmation","payload":{"country":"FR","amount":120,"tariff":"standard","fee":1}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"confirm","payload":{"reference":"TX-1"}}"#, UF_OK,
             #"{"state":"Success","payload":{"country":"FR","amount":120,"tariff":"standard","fee":1,"reference":"TX-1"}}"#),
            (#"{"kind":"send","feature":"Transfer","event":"cancel"}"#, UF_REJECTED,
             #"{"state":"Success","payload":{"country":"FR","amount":120,"tariff":"standard","fee":1,"reference":"TX-1"}}"#),
        ]
        for (i, (action, status, state)) in steps.enumerated() {
            #expect(h.submit(action) == status, "step \(i): \(h.lastError)")
            #expect(h.feature("Transfer") == state, "step \(i)")
        }
        #expect(h.lastError == "Transfer in state Success has no transition for event 'cancel'")
        // The binding picks the express tariff for large amounts, in the same call.
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Transfer"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Transfer","into":"Amount"}"#) == UF_OK)
        #expect(uf_send(h.d, "Transfer", nil, "next", #"{"amount":25000}"#) == UF_OK)
        #expect(h.feature("Transfer") == #"{"state":"Confirmation","payload":{"country":"DE","amount":25000,"tariff":"express","fee":5}}"#)
        #expect(recorder.mutations.count == 4)
    }
}

/// The fields of a `uf_action` a case sets (for parameterized tests).
struct CActionCase: CustomStringConvertible, Sendable {
    var kind = UF_ACTION_SEND
    var event: String?
    var feature = "Router"
    var key: String?
    var payload: String?
    var from: String?
    var into: String?
    var same = false

    init(kind: uf_action_kind = UF_ACTION_SEND, event: String?, feature: String = "Router", key: String? = nil,
         payload: String? = nil, from: String? = nil, into: String? = nil, same: Bool = false) {
        self.kind = kind
        self.event = event
        self.feature = feature
        self.key = key
        self.payload = payload
        self.from = from
        self.into = into
        self.same = same
    }

    var description: String { "\(kind.rawValue) \(event ?? "NULL") \(feature) \(from ?? "-") \(into ?? "-")" }
}
