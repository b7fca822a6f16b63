import CUniFlow
import Testing
@testable import UniFlow

// `uf_submit` reads an action straight from jansson's tree (`BorrowedAction`);
// batches and binding templates decode a `JSONValue` (`ActionRequest`). Both must
// give every action the same outcome: the same status, the same message (checked in the
// order of docs/actions.md: JSON, shape, names, payload) and the same resulting model. Each case runs
// both ways, on two dispatchers in the same starting state.

private let definitions = "[\(Seeds.toggle), \(Seeds.typedFileDownloading)]"

/// Toggle is Off; FileDownloading is InProgress at 10.
private func started() -> Harness {
    let h = Harness(definitions)
    precondition(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
    precondition(h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"InProgress","payload":{"progress":10}}"#) == UF_OK)
    return h
}

/// What an action did: its status, the thread's last error, and the model after it.
private struct Outcome: Equatable, CustomStringConvertible {
    var status: Int32
    var message: String
    var model: String

    var description: String { "\(status) \"\(message)\" \(model)" }
}

private func viaSubmit(_ text: String) -> Outcome {
    let h = started()
    let status = h.submit(text)
    return Outcome(status: status, message: status < 0 ? h.lastError : "", model: h.state)
}

/// The same action through `ActionRequest`: parsed into a `JSONValue`, decoded,
/// resolved and processed the way batches and bindings do it.
private func viaActionRequest(_ text: String) -> Outcome {
    let h = started()
    let d = dispatcher(from: UnsafeMutableRawPointer(h.d))
    do throws(UniFlowError) {
        let request = try ActionRequest.decode(try JSONParser.parse(text))
        _ = try d.submit(via: nil) { () throws(UniFlowError) in try d.resolve(request, hasVia: false) }
        return Outcome(status: 0, message: "", model: h.state)
    } catch {
        // As `uf_last_error` spells a NUL (a C string would end there).
        return Outcome(status: error.status.rawValue, message: error.message.replacing("\0", with: "\\u0000"), model: h.state)
    }
}

private func expectSameOutcome(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let submitted = viaSubmit(text)
    let decoded = viaActionRequest(text)
    #expect(submitted == decoded, "\(text)", sourceLocation: sourceLocation)
}

@Suite struct SubmitDecodingTests {
    @Test(arguments: [
        // The twelve forms and their keys.
        #"{"kind":"transition","feature":"Toggle","from":"Off","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On","same":false,"scope":"a.c","context":"main","id":"7"}"#,
        #"{"kind":"transition","feature":"Toggle","into":"Off","same":true}"#,
        #"{"kind":"transition","feature":"Toggle","into":"Off"}"#,
        #"{"kind":"deinitialize","feature":"Toggle"}"#,
        #"{"kind":"deinitialize","feature":"Toggle","from":"On"}"#,
        #"{"kind":"initialize","feature":"Toggle","into":"On"}"#,
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":11.5}}"#,
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{}}"#,
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress"}"#,
        #"{"kind":"transition","feature":"FileDownloading","from":"InProgress","into":"Failed","payload":{"retries":2,"code":28.0,"reason":"x"}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x"}}"#,
        #"{"kind":"trigger","feature":"Toggle","initialized":false}"#,
        #"{"kind":"trigger","feature":"Toggle","initialized":true}"#,
        #"{"kind":"trigger","feature":"Toggle","in":"Off","submit":[{"kind":"transition","feature":"Toggle","into":"On"},{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":12}}]}"#,
        #"{"kind":"trigger","feature":"Toggle","submit":[{"kind":"trigger","feature":"Toggle","submit":[{"kind":"deinitialize","feature":"Toggle","scope":"deep"}]}]}"#,
    ])
    func acceptedActions(text: String) {
        expectSameOutcome(text)
    }

    @Test(arguments: [
        "[]", "3", "null", #""kind""#,
        #"{"feature":"Toggle"}"#,
        #"{"kind":1,"feature":"Toggle"}"#,
        #"{"kind":"reset","feature":"Toggle"}"#,
        #"{"kind":"transition\u0000","feature":"Toggle","into":"On"}"#,
        #"{"kind":"Transition","feature":"Toggle","into":"On"}"#,
        #"{"kind":"initialize","into":"On"}"#,
        #"{"kind":"initialize","feature":null,"into":"On"}"#,
        #"{"kind":"initialize","feature":"Toggle"}"#,
        #"{"kind":"initialize","feature":"Toggle","into":5}"#,
        #"{"kind":"actualize","feature":"Toggle","payload":{}}"#,
        #"{"kind":"transition","feature":"Toggle","from":"Off"}"#,
        #"{"kind":"transition","feature":"Toggle","form":"Off","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On","Kind":1,"from":"Off","form":2}"#,
        #"{"kind":"initialize","feature":"Toggle","from":"Off","into":"On"}"#,
        #"{"kind":"actualize","feature":"Toggle","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle","in":"On"}"#,
        #"{"kind":"deinitialize","feature":"Toggle","payload":{}}"#,
        #"{"kind":"deinitialize","feature":"Toggle","payload":{},"bogus":1}"#,
        #"{"kind":"initialize","feature":"Toggle","into":"On","submit":[]}"#,
        #"{"kind":"trigger","feature":"Toggle","same":true}"#,
        #"{"kind":"transition","feature":"Toggle","from":"Off","into":"On","same":true}"#,
        #"{"kind":"transition","feature":"Toggle","from":"Off","into":"On","same":false}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On","same":"yes"}"#,
        #"{"kind":"transition","feature":"Toggle","from":3,"into":"On"}"#,
        #"{"kind":"initialize","feature":"Toggle","into":"On","payload":[1]}"#,
        #"{"kind":"actualize","feature":"Toggle","in":"On","payload":null}"#,
        #"{"kind":"deinitialize","feature":"Toggle","scope":1}"#,
        #"{"kind":"deinitialize","feature":"Toggle","context":{}}"#,
        #"{"kind":"deinitialize","feature":"Toggle","id":7}"#,
        #"{"kind":"trigger","feature":"Toggle","in":"On","initialized":true}"#,
        #"{"kind":"trigger","feature":"Toggle","initialized":1}"#,
        #"{"kind":"trigger","feature":"Toggle","in":false}"#,
        #"{"kind":"trigger","feature":"Toggle","submit":{}}"#,
        #"{"kind":"trigger","feature":"Toggle","submit":[{"kind":"deinitialize","feature":"Toggle"},3]}"#,
        #"{"kind":"trigger","feature":"Nope","submit":[{"kind":"deinitialize","feature":"Toggle","form":"On"}]}"#,
    ])
    func shapeErrors(text: String) {
        expectSameOutcome(text)
    }

    @Test(arguments: [
        #"{"kind":"initialize","feature":"Nope","into":"On"}"#,
        #"{"kind":"initialize","feature":"","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle\u0000junk","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On\u0000"}"#,
        #"{"kind":"transition","feature":"Toggle","from":"\u0000Off","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle","from":"Of","into":"On"}"#,
        #"{"kind":"transition","feature":"Toggle","from":"Off","into":"Nope"}"#,
        #"{"kind":"transition","feature":"Togglé","into":"On"}"#,
        #"{"kind":"trigger","feature":"Toggle","submit":[{"kind":"deinitialize","feature":"Toggle"},{"kind":"deinitialize","feature":"Nope"}]}"#,
        #"{"kind":"trigger","feature":"Nope","submit":[{"kind":"deinitialize","feature":"Nope"}]}"#,
        #"{"kind":"deinitialize","feature":"Toggle","scope":"a\u0000b","id":"\u0000"}"#,
    ])
    func nameErrors(text: String) {
        expectSameOutcome(text)
    }

    /// A NUL anywhere in a name, whatever its length, makes it name nothing (as a
    /// C string it would name the part before the NUL).
    @Test func aNameWithANULNamesNothing() {
        let h = started()
        for (name, suffixes) in [("Toggle", 0...12), ("FileDownloading", 0...20)] {
            for suffix in suffixes {
                let text = #"{"kind":"deinitialize","feature":"\#(name)\u0000\#(String(repeating: "x", count: suffix))"}"#
                #expect(h.submit(text) == UF_ENOTFOUND, "\(text)")
            }
        }
        for state in ["On", "Off"] {
            for suffix in 0...18 {
                let text = #"{"kind":"transition","feature":"Toggle","into":"\#(state)\u0000\#(String(repeating: "x", count: suffix))"}"#
                #expect(h.submit(text) == UF_ENOTFOUND, "\(text)")
            }
        }
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"O\u0000n"}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'O\\u0000n' of feature Toggle")
        #expect(h.state == started().state)
    }

    @Test func namesLongerThan256BytesNameNothing() {
        let long = String(repeating: "T", count: 300)
        expectSameOutcome(#"{"kind":"initialize","feature":"\#(long)","into":"On"}"#)
        expectSameOutcome(#"{"kind":"transition","feature":"Toggle","into":"\#(long)"}"#)
    }

    @Test(arguments: [
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progres":1}}"#,
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":"1"}}"#,
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":null}}"#,
        #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":1,"extra":[]}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"code":"x","reasn":"y"}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"code":1}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","code":null}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","code":1.5}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","code":9007199254740993}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","code":-9007199254740992}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"x","retries":1e300}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Failed"}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"y":null,"a":[1,{"b":[]}],"o":{"k":{"l":null}},"b":false,"i":-3,"n":1e-7,"s":"é\u0000"}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"s":1}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"b":"true"}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"o":[]}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"a":{}}}"#,
        #"{"kind":"transition","feature":"FileDownloading","into":"Typed"}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On","payload":{"x":1}}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On","payload":{}}"#,
        #"{"kind":"initialize","feature":"Nope","into":"On","payload":{"x":1}}"#,
        #"{"kind":"trigger","feature":"Toggle","submit":[{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":true}}]}"#,
    ])
    func payloadErrorsAndPayloads(text: String) {
        expectSameOutcome(text)
    }

    @Test func nestingLimitsAgree() {
        let deep = String(repeating: "[", count: 300) + String(repeating: "]", count: 300)
        expectSameOutcome(#"{"kind":"initialize","feature":"Nope","into":"On","context":\#(deep)}"#)
        expectSameOutcome(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":\#(deep)}}"#)
        expectSameOutcome(#"{"bogus":\#(deep)}"#)
        let fits = String(repeating: "[", count: 254) + String(repeating: "]", count: 254)
        expectSameOutcome(#"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"a":\#(fits)}}"#)
        let tooDeep = String(repeating: "[", count: 255) + String(repeating: "]", count: 255)
        expectSameOutcome(#"{"kind":"transition","feature":"FileDownloading","into":"Typed","payload":{"a":\#(tooDeep)}}"#)
        /// A trigger whose submit list nests `levels` more triggers: 1 + 2 * levels JSON levels.
        func nested(_ levels: Int) -> String {
            levels == 0 ? #"{"kind":"trigger","feature":"Toggle"}"#
                : #"{"kind":"trigger","feature":"Toggle","submit":[\#(nested(levels - 1))]}"#
        }
        expectSameOutcome(nested(127))
        expectSameOutcome(nested(128))
        expectSameOutcome(nested(1100))
    }

    @Test func invalidJSONIsRefusedBeforeAnythingElse() {
        for text in ["", "{", #"{"kind":"initialize","kind":"initialize"}"#, #"{"kind":"initialize","feature":"Toggle","into":"On","id":99999999999999999999}"#,
                     #"{"kind":"initialize","feature":"Toggle","into":"On","id":1e999}"#, "{\"kind\":\"\u{FFFF}\"} x"] {
            let outcome = viaSubmit(text)
            #expect(outcome.status == UF_EJSON, "\(text)")
            #expect(outcome == viaActionRequest(text), "\(text)")
        }
        let h = started()
        let invalidUTF8: [CChar] = Array(#"{"kind":"initialize","feature":"T"#.utf8CString.dropLast()) + [-1, 34, 125, 0]
        #expect(uf_submit(h.d, invalidUTF8) == UF_EJSON)
    }

    @Test func aPayloadWithAViaIsInvalidBeforeNamesAreResolved() {
        let h = started()
        var freed = FreeCounter()
        #expect(h.submit(#"{"kind":"initialize","feature":"Nope","into":"X","payload":{}}"#, freed: freed) { _ in 0 } == UF_EINVAL)
        #expect(h.lastError == "action has both a JSON payload and a via callback")
        #expect(freed.count == 1)
        freed = FreeCounter()
        #expect(h.submit(#"{"kind":"initialize","feature":"Nope","into":"X"}"#, freed: freed) { _ in 0 } == UF_ENOTFOUND)
        #expect(freed.count == 1)
        freed = FreeCounter()
        #expect(h.submit(#"{"kind":"initialize""#, freed: freed) { _ in 0 } == UF_EJSON)
        #expect(freed.count == 1)
        freed = FreeCounter()
        #expect(h.submit(#"{"kind":"initialize"}"#, freed: freed) { _ in 0 } == UF_ESCHEMA)
        #expect(freed.count == 1)
    }

    /// Scope, context and id are borrowed from jansson's tree while the action runs;
    /// what a trigger queues (and what is queued from a callback) must own them.
    @Test func queuedActionsKeepTheirDiagnosticStrings() {
        let h = started()
        h.captureReports()
        #expect(h.submit(#"""
            {"kind":"trigger","feature":"Toggle","id":"outer","submit":[
              {"kind":"transition","feature":"Toggle","into":"On","scope":"s1","context":"c1","id":"i1"}]}
            """#) == UF_OK)
        var inner: Int32 = 99
        _ = h.subscribe("TransitionInto<Toggle.On>") { m in
            let d = uf_mutation_dispatcher(m)
            inner = uf_submit(d, #"{"kind":"transition","feature":"Toggle","into":"Off","scope":"s2","context":"c2","id":"i2"}"#)
            return UF_STOP
        }
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        #expect(inner == UF_QUEUED)
        let actions = h.reports.filter { $0.contains("\"processed\"") }
        #expect(actions.contains { $0.contains(#""scope":"s1","context":"c1","id":"i1""#) }, "\(actions)")
        #expect(actions.contains { $0.contains(#""scope":"s2","context":"c2","id":"i2""#) }, "\(actions)")
        #expect(h.feature("Toggle") == #"{"state":"Off","payload":{}}"#)
    }
}
