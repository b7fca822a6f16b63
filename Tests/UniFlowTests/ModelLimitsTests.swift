import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// What the model may hold, so that everything it writes reads back: a field's value
// nests at most 251 levels and a timer's action 253 (a snapshot writes them five and
// three levels down, and reads 256), and the texts echoed to hosts as C strings
// (`scope`, `context`, `id`) hold no NUL.

private let holder = #"{"feature":"Box","states":{"Full":{"fields":{"v":"any"}}}}"#

/// `[[...]]`: `levels` arrays, one inside the other.
private func arrays(_ levels: Int) -> String {
    String(repeating: "[", count: levels) + String(repeating: "]", count: levels)
}

private func fill(_ value: String) -> String {
    #"{"kind":"initialize","feature":"Box","into":"Full","payload":{"v":\#(value)}}"#
}

@Suite struct ValueDepthTests {
    @Test func givenAValueOf251Levels_whenStored_thenTheModelAndItsSnapshotRestore() {
        let h = Harness.manual("", holder)
        #expect(h.submit(fill(arrays(251))) == UF_OK)
        let model = h.state
        let copy = Harness.manual("", holder)
        #expect(uf_state_restore(copy.d, model) == UF_OK)
        #expect(copy.state == model)
        let snapshot = h.snapshot
        #expect(uf_snapshot_restore(copy.d, snapshot) == UF_OK)
        #expect(copy.snapshot == snapshot)
    }

    @Test func givenAValueOf252Levels_whenSubmitted_thenItIsRefusedNamingTheField() {
        let h = Harness(holder)
        #expect(h.submit(fill(arrays(252))) == UF_ESCHEMA)
        #expect(h.lastError == "Box.Full.v: the value is nested deeper than 251 levels")
        #expect(h.state == "{}")
    }

    @Test func givenAKeyedInstance_whenItsValueIsAtTheLimit_thenItsSnapshotRestores() {
        // The deepest place a value is written: snapshot, model, feature, key, payload.
        let keyed = #"{"feature":"Box","instances":"keyed","states":{"Full":{"fields":{"v":"any"}}}}"#
        let h = Harness.manual("", keyed)
        #expect(h.submit(#"{"kind":"initialize","feature":"Box","key":"k","into":"Full","payload":{"v":\#(arrays(251))}}"#) == UF_OK)
        let copy = Harness.manual("", keyed)
        #expect(uf_snapshot_restore(copy.d, h.snapshot) == UF_OK)
        #expect(copy.state == h.state)
    }

    @Test func givenABindingThatNestsAValueIntoItself_whenRepeated_thenItStopsAtTheLimit() {
        // Each actualization of Tick wraps Box's payload one level deeper. Without a
        // limit this grew until writing the model overflowed the stack.
        let tick = #"""
        {"feature":"Tick","states":{"On":{}},"bindings":[{"when":"AnyMutationOf<Tick>","then":{"submit":[
          {"kind":"actualize","feature":"Box","in":"Full","payload":{"v":{"$":{"var":"model.Box.payload"}}}}]}}]}
        """#
        let h = Harness(holder, tick)
        h.captureReports()
        #expect(h.submit(fill("0")) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Tick","into":"On"}"#) == UF_OK)
        for _ in 0..<300 { #expect(h.submit(#"{"kind":"actualize","feature":"Tick","in":"On"}"#) == UF_OK) }
        let model = h.state
        // `{"v":` 251 times around the first 0: the value at the limit.
        #expect(model.hasPrefix(#"{"Box":{"state":"Full","payload":{"v":"# + String(repeating: #"{"v":"#, count: 251) + "0}"))
        #expect(h.reports.last { $0.contains("binding_rejected") }?.contains("Box.Full.v: the value is nested deeper than 251 levels") == true)
        let copy = Harness(holder, #"{"feature":"Tick","states":{"On":{}}}"#)
        #expect(uf_state_restore(copy.d, model) == UF_OK)
        #expect(copy.state == model)
    }
}

@Suite struct TimerActionDepthTests {
    private func action(_ levels: Int) -> String {
        // The action is level 1, its payload 2: `levels` in all.
        #"{"kind":"initialize","feature":"Box","into":"Full","payload":{"v":\#(arrays(levels - 2))}}"#
    }

    @Test func givenAnActionOf253Levels_whenArmed_thenTheSnapshotRestores() {
        let h = Harness.manual("", holder)
        #expect(h.after(10, action(253)) == UF_OK)
        let copy = Harness.manual("", holder)
        #expect(uf_snapshot_restore(copy.d, h.snapshot) == UF_OK)
        #expect(copy.snapshot == h.snapshot)
    }

    @Test func givenAnActionOf254Levels_whenArmed_thenItIsRefusedAndNothingIsArmed() {
        let h = Harness.manual("", holder)
        #expect(h.after(10, action(254)) == UF_ESCHEMA)
        #expect(h.lastError == "input is nested deeper than 253 levels")
        #expect(h.timers == "[]")
    }
}

@Suite struct EchoedTextTests {
    @Test(arguments: ["id", "scope", "context"])
    func givenANulInAnEchoedText_whenSubmitted_thenItIsRefused(key: String) {
        let h = Harness(holder)
        let text = #"{"kind":"initialize","feature":"Box","into":"Full","payload":{"v":1},"\#(key)":"a\u0000b"}"#
        #expect(h.submit(text) == UF_ESCHEMA)
        #expect(h.lastError == "action.\(key): contains \\u0000, which C text cannot hold")
        #expect(h.state == "{}")
    }

    @Test func givenANulInAnObjectKey_whenSubmitted_thenItIsRefusedWhereTheTextIs() {
        let h = Harness(holder)
        #expect(h.submit(fill(#"{"a\u0000b":1}"#)) == UF_EJSON)
        #expect(h.lastError.hasSuffix(#"NUL byte in object key not supported near '"a\u0000b"'"#))
        #expect(h.state == "{}")
    }
}
