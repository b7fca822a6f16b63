import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// What a watch's callback reads: the new and previous values as JSON text, right
/// for every kind of value and valid until the callback returns, also while a
/// watch made inside it is delivered its own.
@Suite struct WatchTextTests {
    static let definitions = #"""
    {"features": [
     {"feature": "T", "states": {"A": {}, "B": {}, "S": {"fields": {"s": {"type": "string"}}}}},
     {"feature": "K", "instances": "keyed", "states": {"A": {}, "B": {}}}
    ]}
    """#

    /// Adds a watch whose callback is `body`; fails the test if `uf_watch` does.
    static func watch(_ h: Harness, _ selector: String, _ body: @escaping (OpaquePointer) -> Int32) {
        let box = Box<(OpaquePointer) -> Int32>(body, freed: FreeCounter())
        let status = uf_watch(h.d, selector, { w, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(w!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, nil)
        #expect(status == UF_OK, "\(String(cString: uf_last_error()))")
    }

    /// "value <- previous" for each call ("(first)" when there is no previous value).
    static func record(_ h: Harness, _ selector: String) -> Lines {
        let lines = Lines()
        watch(h, selector) { w in
            let previous = uf_watch_previous_json(w).map { String(cString: $0) } ?? "(first)"
            lines.all.append("\(String(cString: uf_watch_value_json(w))) <- \(previous)")
            return UF_KEEP
        }
        return lines
    }

    final class Lines {
        var all: [String] = []
    }

    @Test func aStateWatchFollowsAFeatureFromBeforeItBeginsToAfterItEnds() {
        let h = Harness(Self.definitions)
        let single = Self.record(h, #"{"var": "model.T.state"}"#)
        let keyed = Self.record(h, #"{"var": "model.K.k1.state"}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"T","into":"A"}"#) == UF_OK)
        #expect(CAction(UF_ACTION_TRANSITION, feature: "T", into: "B").dispatch(h.d) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"T"}"#) == UF_OK)
        #expect(single.all == [#"null <- (first)"#, #""A" <- null"#, #""B" <- "A""#, #"null <- "B""#])

        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"k2","into":"A"}"#) == UF_OK)  // another instance
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"k1","into":"B"}"#) == UF_OK)
        #expect(CAction(UF_ACTION_TRANSITION, feature: "K", key: "k1", into: "A").dispatch(h.d) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"K","key":"k1"}"#) == UF_OK)
        #expect(keyed.all == [#"null <- (first)"#, #""B" <- null"#, #""A" <- "B""#, #"null <- "A""#])
    }

    @Test func aStateWatchMadeBeforeItsFeatureIsRegisteredFollowsIt() {
        let h = Harness()
        let lines = Self.record(h, #"{"var": "model.T.state"}"#)
        #expect(uf_register(h.d, Self.definitions) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"T","into":"B"}"#) == UF_OK)
        #expect(lines.all == [#"null <- (first)"#, #""B" <- null"#])
    }

    @Test func stringsThatNeedEscapesAndLongValuesAreWrittenWhole() {
        let h = Harness(Self.definitions)
        let lines = Self.record(h, #"{"var": "model.T.payload.s"}"#)
        // Quotes, a backslash, control characters and non-ASCII text; then a value
        // longer than the text kept from one delivery to the next; then short again.
        let long = String(repeating: "0123456789", count: 500)
        for (action, s) in [(#""kind":"initialize","into""#, #"say \"hi\"\\ \n\t\u0001 é ✓"#),
                            (#""kind":"actualize","in""#, long), (#""kind":"actualize","in""#, "x")] {
            #expect(h.submit(#"{\#(action):"S","feature":"T","payload":{"s":"\#(s)"}}"#) == UF_OK,
                    "\(h.lastError)")
        }
        #expect(lines.all == [
            "null <- (first)",
            #""say \"hi\"\\ \n\t\u0001 é ✓" <- null"#,
            #""\#(long)" <- "say \"hi\"\\ \n\t\u0001 é ✓""#,
            #""x" <- "\#(long)""#,
        ])
    }

    @Test func aWatchMadeInsideAnothersCallbackLeavesTheOuterTextAsItWas() {
        let h = Harness(Self.definitions)
        #expect(h.submit(#"{"kind":"initialize","feature":"T","into":"A"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"k1","into":"B"}"#) == UF_OK)
        var outer: [String] = [], inner: [String] = []
        var made = false
        Self.watch(h, #"{"var": "model.T.state"}"#) { w in
            let text = uf_watch_value_json(w)!
            if !made {
                made = true
                // Delivered its first value now, before uf_watch returns.
                Self.watch(h, #"{"cat": ["K is ", {"var": "model.K.k1.state"}]}"#) { w in
                    inner.append(String(cString: uf_watch_value_json(w)))
                    return UF_KEEP
                }
            }
            // The pointer read before the inner delivery still holds this value.
            outer.append(String(cString: text))
            #expect(uf_watch_value_json(w) == UnsafePointer(text))
            return UF_KEEP
        }
        #expect(CAction(UF_ACTION_TRANSITION, feature: "T", into: "B").dispatch(h.d) == UF_OK)
        #expect(outer == [#""A""#, #""B""#])
        #expect(inner == [#""K is B""#])
    }
}
