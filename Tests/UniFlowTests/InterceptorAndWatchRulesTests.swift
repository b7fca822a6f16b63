import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// The rules of interceptors and watches that only show across sources and outer
/// calls: an interceptor sees actions from every source and none of a restore; a
/// veto inside a batch fails the batch and drops what interceptors queued in it; a
/// watch is evaluated once per outer call, after the whole cascade.
@Suite struct InterceptorAndWatchRules {
    /// Lamp's binding turns Counter up; Ticker's state timer (manual clock) turns
    /// the lamp off; a trigger's list initializes Counter.
    static let definitions = #"""
    {"features": [
     {"feature": "Lamp", "states": {"Off": {}, "On": {}},
      "bindings": [{"when": "TransitionInto<Lamp.On>",
                    "then": {"submit": [{"kind": "actualize", "feature": "Counter", "in": "Counting",
                                         "payload": {"n": {"$": {"+": [{"var": "model.Counter.payload.n"}, 1]}}}}]}}]},
     {"feature": "Counter", "states": {"Counting": {"fields": {"n": {"type": "integer", "default": 0}}}}},
     {"feature": "Ticker", "states": {"Armed": {"after": [{"ms": 10, "submit": [{"kind": "transition", "feature": "Lamp", "into": "Off"}]}]}}}
    ]}
    """#

    /// Adds an interceptor that records "kind feature state" and answers `answer(a)`.
    static func intercept(_ h: Harness, feature: String? = nil, _ seen: Recorder,
                          answer: @escaping (OpaquePointer) -> Int32 = { _ in 0 }) -> UInt64 {
        let box = Box<(OpaquePointer) -> Int32>({ a in
            let state = uf_intercepted_state(a).map { String(cString: $0) } ?? "-"
            seen.lines.append("\(uf_intercepted_kind(a).rawValue) \(String(cString: uf_intercepted_feature(a))) \(state)")
            return answer(a)
        }, freed: FreeCounter())
        var id: UInt64 = 0
        let status = uf_intercept(h.d, feature, { a, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(a!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, &id)
        precondition(status == UF_OK, String(cString: uf_last_error()))
        return id
    }

    static func watch(_ h: Harness, _ selector: String, _ seen: Recorder, deferred: Bool = false) {
        let box = Box<(OpaquePointer) -> Int32>({ w in
            seen.lines.append(String(cString: uf_watch_value_json(w)))
            return 0
        }, freed: FreeCounter())
        let call: uf_watch_fn = { w, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(w!)
        }
        let payload = Unmanaged.passRetained(box).toOpaque()
        let status = deferred ? uf_watch_deferred(h.d, selector, call, payload, releaseBox, nil)
                              : uf_watch(h.d, selector, call, payload, releaseBox, nil)
        precondition(status == UF_OK, String(cString: uf_last_error()))
    }

    final class Recorder {
        var lines: [String] = []
    }

    @Test func anInterceptorSeesActionsFromEverySource() {
        let h = Harness(options: #"{"clock": "manual"}"#, Self.definitions)
        let seen = Recorder()
        _ = Self.intercept(h, seen)
        #expect(h.submit(#"{"kind":"trigger","feature":"Counter","initialized":false,"submit":[{"kind":"initialize","feature":"Counter","into":"Counting"}]}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Lamp","into":"Off"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Lamp","into":"On"}"#) == UF_OK)   // its binding actualizes Counter
        #expect(h.submit(#"{"kind":"initialize","feature":"Ticker","into":"Armed"}"#) == UF_OK)
        #expect(uf_submit_after(h.d, #"{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":9}}"#, 5, nil, 0) == UF_OK)
        #expect(uf_clock_advance(h.d, 10) == UF_OK)   // the API timer, then the state timer
        #expect(seen.lines == [
            "5 Counter -",                   // the trigger (absent: no state)
            "1 Counter Counting",            // its submit list
            "1 Lamp Off",
            "3 Lamp On",
            "2 Counter Counting",            // the binding's template
            "1 Ticker Armed",
            "2 Counter Counting",            // the API timer
            "3 Lamp Off",                    // the state timer
        ])
        // Restores install what happened: not intercepted.
        #expect(uf_state_restore(h.d, #"{"Lamp":{"state":"On","payload":{}}}"#) == UF_OK)
        #expect(seen.lines.count == 8)
    }

    @Test func theInterceptedJSONShowsAPayloadOnlyWhenTheActionCarriedOne() {
        let h = Harness(options: nil, #"{"feature": "F", "states": {"A": {"fields": {"n": {"type": "integer", "default": 7}}}, "B": {"fields": {"m": {"type": "integer", "default": 1}, "k": {"type": "string", "default": "x"}}}}}"#)
        var seen: [String] = []
        _ = UniFlowTests.intercept(h, "F") { a in
            seen.append(String(cString: uf_intercepted_json(a)))
            return 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"A"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"F","into":"B","payload":{"m":2}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"actualize","feature":"F","in":"B"}"#) == UF_OK)
        #expect(seen == [
            #"{"kind":"initialize","feature":"F","into":"A"}"#,
            // What it carried, as it will apply: the missing field's default filled in.
            #"{"kind":"transition","feature":"F","into":"B","same":false,"payload":{"m":2,"k":"x"}}"#,
            #"{"kind":"actualize","feature":"F","in":"B"}"#,
        ])
        // Either way the defaults are stored.
        #expect(h.state == #"{"F":{"state":"B","payload":{"m":1,"k":"x"}}}"#)
    }

    @Test func interceptorsEndedWithoutAnyActionLeaveNoSlotBehind() {
        let h = Harness(options: nil, Self.definitions)
        let seen = Recorder()
        let kept = Self.intercept(h, feature: "Lamp", seen)
        for _ in 0..<1000 {
            #expect(uf_unsubscribe(h.d, Self.intercept(h, seen)) == UF_OK)
        }
        let core = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(h.d)).takeUnretainedValue()
        #expect(core.interceptors.slots.count == 1)
        // The one left still runs, and only for its feature.
        #expect(h.submit(#"{"kind":"initialize","feature":"Lamp","into":"Off"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Counter","into":"Counting"}"#) == UF_OK)
        #expect(seen.lines == ["1 Lamp Off"])
        #expect(uf_unsubscribe(h.d, kept) == UF_OK)
        #expect(core.interceptors.slots.isEmpty)
    }

    @Test func endingOneInterceptorLeavesTheOthersOfItsFeatureSeeingIt() {
        let h = Harness(options: nil, Self.definitions)
        let seen = Recorder()
        let first = Self.intercept(h, feature: "Counter", seen)
        let second = Self.intercept(h, feature: "Counter", seen)
        let every = Self.intercept(h, seen)
        #expect(uf_unsubscribe(h.d, first) == UF_OK)
        #expect(uf_unsubscribe(h.d, every) == UF_OK)
        // The hot path and the general one both still see Counter's interceptor.
        let initialize = CAction(UF_ACTION_INITIALIZE, feature: "Counter", into: "Counting")
        #expect(initialize.dispatch(h.d) == UF_OK)
        #expect(h.submit(#"{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":1}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Lamp","into":"Off"}"#) == UF_OK)
        #expect(seen.lines == ["1 Counter Counting", "2 Counter Counting"])
        #expect(uf_unsubscribe(h.d, second) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Counter"}"#) == UF_OK)
        #expect(seen.lines.count == 2)
    }

    @Test func aVetoInABatchFailsItAndDropsWhatInterceptorsQueued() {
        let h = Harness(Self.definitions)
        let seen = Recorder()
        let id = Self.intercept(h, seen) { a in
            // Queues an action of its own, then vetoes the Lamp's transition.
            let feature = String(cString: uf_intercepted_feature(a))
            if feature == "Counter" {
                _ = uf_submit(uf_intercepted_dispatcher(a), #"{"kind":"initialize","feature":"Ticker","into":"Armed"}"#)
            }
            return feature == "Lamp" && uf_intercepted_kind(a) == UF_ACTION_TRANSITION ? 1 : 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Lamp","into":"Off"}"#) == UF_OK)
        let status = uf_submit_batch(h.d, #"[{"kind":"initialize","feature":"Counter","into":"Counting"},{"kind":"transition","feature":"Lamp","into":"On"}]"#)
        #expect(status == UF_REJECTED)
        #expect(h.lastError == "batch[1]: intercepted by \(id)")
        // Nothing of the batch, nor the Ticker its interceptor queued, was applied.
        #expect(h.state == #"{"Lamp":{"state":"Off","payload":{}}}"#)
    }

    /// K's instances a and b live; the batch ends a, then its interceptor (on the
    /// actualization of b) changes a's subscriptions and vetoes.
    static func rolledBackBatch(_ h: Harness, interceptor: @escaping (OpaquePointer) -> Void) {
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"a","into":"A"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"b","into":"A"}"#) == UF_OK)
        let id = Self.intercept(h, Recorder()) { a in
            guard uf_intercepted_kind(a) == UF_ACTION_TRANSITION else { return 0 }
            interceptor(a)
            return 1
        }
        #expect(uf_submit_batch(h.d, #"[{"kind":"deinitialize","feature":"K","key":"a"},{"kind":"transition","feature":"K","key":"b","into":"B"}]"#) == UF_REJECTED)
        #expect(uf_unsubscribe(h.d, id) == UF_OK)
        #expect(h.state == #"{"K":{"a":{"state":"A","payload":{}},"b":{"state":"A","payload":{}}}}"#)
    }

    static let keyed = #"{"feature": "K", "instances": "keyed", "states": {"A": {}, "B": {}}}"#

    @Test func anInstanceARolledBackBatchPutsBackFindsItsSubscriptionsByKey() {
        // Its subscription ended while it was gone, and its list went to another key.
        let h = Harness(Self.keyed)
        let a = h.subscribe("AnyMutationOf<K[a]>") { _ in 0 }
        Self.rolledBackBatch(h) { _ in #expect(uf_unsubscribe(h.d, a.id) == UF_OK) }
        let q = h.record("AnyMutationOf<K[q]>")
        #expect(h.submit(#"{"kind":"transition","feature":"K","key":"a","into":"B"}"#) == UF_OK)
        #expect(q.mutations.isEmpty)

        // A subscription made while it was gone is called once it is back.
        let h2 = Harness(Self.keyed)
        var seen: UniFlowTests.Recorder? = nil
        Self.rolledBackBatch(h2) { _ in seen = h2.record("AnyMutationOf<K[a]>") }
        #expect(h2.submit(#"{"kind":"transition","feature":"K","key":"a","into":"B"}"#) == UF_OK)
        #expect(seen?.mutations.map { $0.contains(#""key":"a""#) } == [true])
    }

    /// A batch announces its mutations after committing them all: each goes to
    /// its instance's subscriptions as they are when it is announced.
    @Test func aBatchAnnouncesEachMutationToItsInstanceSubscriptionsAsTheyAreThen() {
        let definitions = #"""
        [{"feature": "A", "states": {"On": {}}}, {"feature": "B", "states": {"On": {}}},
         {"feature": "K", "instances": "keyed", "states": {"On": {}, "Off": {}}}]
        """#
        // Made while an earlier mutation of the batch was announced: called for k's.
        let h = Harness(definitions)
        var seen: UniFlowTests.Recorder? = nil
        h.subscribe("AnyMutationOf<A>") { _ in
            seen = h.record("AnyMutationOf<K[k]>")
            return UF_STOP
        }
        #expect(uf_submit_batch(h.d, #"[{"kind":"initialize","feature":"A","into":"On"},{"kind":"initialize","feature":"K","key":"k","into":"On"}]"#) == UF_OK)
        #expect(seen?.mutations.count == 1)

        // a's only subscription ends while A's mutation is announced, and b's list is
        // made while B's is: a's transition goes to neither.
        let h2 = Harness(definitions)
        #expect(h2.submit(#"{"kind":"initialize","feature":"K","key":"a","into":"On"}"#) == UF_OK)
        #expect(h2.submit(#"{"kind":"initialize","feature":"K","key":"b","into":"On"}"#) == UF_OK)
        let a = h2.subscribe("AnyMutationOf<K[a]>") { _ in 0 }
        var b: UniFlowTests.Recorder? = nil
        h2.subscribe("AnyMutationOf<A>") { _ in uf_unsubscribe(h2.d, a.id) == UF_OK ? UF_STOP : 0 }
        h2.subscribe("AnyMutationOf<B>") { _ in
            b = h2.record("AnyMutationOf<K[b]>")
            return UF_STOP
        }
        #expect(uf_submit_batch(h2.d, #"[{"kind":"initialize","feature":"A","into":"On"},{"kind":"initialize","feature":"B","into":"On"},{"kind":"transition","feature":"K","key":"a","into":"Off"}]"#) == UF_OK)
        #expect(b?.mutations == [])
    }

    /// The hot path too: an interceptor that ends a's list and gives it to b, or
    /// makes a's list, changes where a's transition goes.
    @Test func anInterceptorThatChangesAnInstancesSubscriptionsIsHeededOnTheHotPath() {
        let h = Harness(Self.keyed)
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"a","into":"A"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"b","into":"A"}"#) == UF_OK)
        let a = h.subscribe("AnyMutationOf<K[a]>") { _ in 0 }
        var b: UniFlowTests.Recorder? = nil
        let moving = Self.intercept(h, Recorder()) { _ in
            #expect(uf_unsubscribe(h.d, a.id) == UF_OK)
            b = h.record("AnyMutationOf<K[b]>")
            return 0
        }
        let toB = CAction(UF_ACTION_TRANSITION, feature: "K", key: "a", into: "B")
        #expect(toB.dispatch(h.d) == UF_OK)
        #expect(b?.mutations == [])
        #expect(uf_unsubscribe(h.d, moving) == UF_OK)

        // No list for c yet: one made by the interceptor is called, as on the general path.
        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"c","into":"A"}"#) == UF_OK)
        var c: UniFlowTests.Recorder? = nil
        _ = Self.intercept(h, Recorder()) { _ in
            if c == nil { c = h.record("AnyMutationOf<K[c]>") }
            return 0
        }
        let cToB = CAction(UF_ACTION_TRANSITION, feature: "K", key: "c", into: "B")
        #expect(cToB.dispatch(h.d) == UF_OK)
        #expect(c?.mutations.count == 1)
    }

    @Test func aWatchAddedInABatchThatRollsBackIsCalledAgainWithTheValueThatHolds() {
        let h = Harness(Self.keyed)
        let seen = Recorder(), deferred = Recorder()
        Self.rolledBackBatch(h) { _ in
            Self.watch(h, #"{"var": "model.K.a.state"}"#, seen)
            Self.watch(h, #"{"var": "model.K.a.state"}"#, deferred, deferred: true)
        }
        // Called inside the batch with a gone, then with the state a still has.
        #expect(seen.lines == ["null", #""A""#])
        #expect(uf_loop_run(h.d, nil) == UF_OK)
        #expect(deferred.lines == [#""A""#])
    }

    @Test func aWatchIsEvaluatedOnceAfterTheWholeCascade() {
        let h = Harness(Self.definitions)
        #expect(h.submit(#"{"kind":"initialize","feature":"Counter","into":"Counting"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Lamp","into":"Off"}"#) == UF_OK)
        let seen = Recorder()
        Self.watch(h, #"{"cat": [{"var": "model.Lamp.state"}, "/", {"var": "model.Counter.payload.n"}]}"#, seen)
        // The transition and the binding's actualization are one outer call: one value,
        // never "On/0".
        #expect(h.submit(#"{"kind":"transition","feature":"Lamp","into":"On"}"#) == UF_OK)
        // A batch is one call too.
        #expect(uf_submit_batch(h.d, #"[{"kind":"transition","feature":"Lamp","into":"Off"},{"kind":"transition","feature":"Lamp","into":"On"}]"#) == UF_OK)
        // A restore is watched like any change.
        #expect(uf_state_restore(h.d, #"{"Lamp":{"state":"Off","payload":{}},"Counter":{"state":"Counting","payload":{"n":7}}}"#) == UF_OK)
        #expect(seen.lines == [#""Off/0""#, #""On/1""#, #""On/2""#, #""Off/7""#])
    }
    /// A watch that reads only a payload is not evaluated again when only the
    /// state changed, but it still sees the feature (or instance) begin and end,
    /// and a payload changed, through `uf_dispatch` (the hot path) as through JSON.
    @Test func aPayloadWatchSeesBeginningsAndEndsThroughTheHotPath() {
        let h = Harness(#"""
        {"features": [{"feature": "T", "states": {"A": {}, "B": {}, "C": {"fields": {"n": {"type": "integer"}}}}},
                      {"feature": "K", "instances": "keyed", "states": {"A": {}, "B": {}}}]}
        """#)
        let seen = Recorder(), keyed = Recorder()
        Self.watch(h, #"{"var": "model.T.payload"}"#, seen)
        Self.watch(h, #"{"var": "model.K.k1.payload"}"#, keyed)
        let initialize = CAction(UF_ACTION_INITIALIZE, feature: "T", into: "A")
        let toB = CAction(UF_ACTION_TRANSITION, feature: "T", into: "B")
        let toA = CAction(UF_ACTION_TRANSITION, feature: "T", into: "A")
        let deinitialize = CAction(UF_ACTION_DEINITIALIZE, feature: "T")
        #expect(initialize.dispatch(h.d) == UF_OK)
        #expect(toB.dispatch(h.d) == UF_OK)
        #expect(toA.dispatch(h.d) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"T","into":"C","payload":{"n":1}}"#) == UF_OK)
        #expect(toA.dispatch(h.d) == UF_OK)       // the payload goes with C
        #expect(deinitialize.dispatch(h.d) == UF_OK)
        #expect(seen.lines == ["null", "{}", #"{"n":1}"#, "{}", "null"])

        #expect(h.submit(#"{"kind":"initialize","feature":"K","key":"k1","into":"A"}"#) == UF_OK)
        let keyedToB = CAction(UF_ACTION_TRANSITION, feature: "K", key: "k1", into: "B")
        #expect(keyedToB.dispatch(h.d) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"K","key":"k1"}"#) == UF_OK)
        #expect(keyed.lines == ["null", "{}", "null"])
    }
}
