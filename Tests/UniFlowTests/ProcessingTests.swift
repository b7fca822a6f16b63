import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Processing order, queueing, the cascade limit, reports and re-entrancy (docs/processing.md).
@Suite struct Processing {
    @Test func aRejectedActionIsReportedAndNotifiesNobody() {
        let h = Harness(Seeds.toggle)
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On","id":"t1"}"#) == UF_REJECTED)
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports == [#"{"event":"rejected","action":{"kind":"transition","feature":"Toggle","into":"On","same":false,"id":"t1"},"status":"UF_REJECTED","reason":"Toggle is not initialized"}"#])
    }

    @Test func processedIsReportedAfterTheSubscribers() {
        let h = Harness(Seeds.toggle)
        h.captureReports()
        var reportsSeenBySubscriber = -1
        h.subscribe(nil) { _ in reportsSeenBySubscriber = h.reports.count; return 0 }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off","scope":"test.swift","context":"setUp"}"#)
        #expect(reportsSeenBySubscriber == 0)
        #expect(h.reports == [#"{"event":"processed","action":{"kind":"initialize","feature":"Toggle","into":"Off","scope":"test.swift","context":"setUp"}}"#])
    }

    @Test func queuedActionsRunFirstInFirstOutBeforeTheOuterCallReturns() {
        let h = Harness(Seeds.main)
        let recorder = h.record()
        h.subscribe("Initialization<Main>") { m in
            let d = uf_mutation_dispatcher(m)
            for value in 1...3 {
                #expect(uf_submit(d, #"{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":\#(value)}}"#) == UF_QUEUED)
            }
            return 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":0}}"#) == UF_OK)
        #expect(recorder.mutations.count == 4)
        #expect(h.state == #"{"Main":{"state":"Main","payload":{"val":3}}}"#)
    }

    @Test func queuedRejectionsGoToTheReporterNotTheLastError() {
        let h = Harness(Seeds.toggle)
        h.captureReports()
        h.subscribe("Initialization<Toggle>") { m in
            #expect(uf_submit(uf_mutation_dispatcher(m), #"{"kind":"initialize","feature":"Toggle","into":"On"}"#) == UF_QUEUED)
            return 0
        }
        _ = uf_submit(nil, "{}")
        let before = h.lastError
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(h.lastError == before)
        #expect(h.reports.last!.contains(#""event":"rejected""#))
        #expect(h.reports.last!.contains("Toggle is already initialized (in state Off)"))
    }

    @Test func aCycleIsStoppedByTheCascadeLimit() {
        let h = Harness(options: #"{"max_cascade":10}"#, Seeds.toggle)
        h.captureReports()
        var applied = 0
        h.subscribe("Transition<Toggle>") { m in
            applied += 1
            _ = uf_submit(uf_mutation_dispatcher(m), #"{"kind":"transition","feature":"Toggle","into":"On","same":true}"#)
            return 0
        }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On","same":true}"#) == UF_OK)
        #expect(applied == 10)
        let dropped = h.reports.filter { $0.contains(#""event":"dropped""#) }
        #expect(dropped.count == 1)
        #expect(dropped[0].contains(#""status":"UF_ELOOP""#))
        // The next outer call starts a fresh count.
        applied = 0
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(applied == 10)
    }

    @Test func aViaThatFailsOrForgetsToBecomeRejects() {
        let h = Harness(Seeds.fileDownloading)
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        let into = #"{"kind":"transition","feature":"FileDownloading","into":"InProgress"}"#
        #expect(h.submit(into) { _ in -3 } == UF_ECALLBACK)
        #expect(h.lastError == "FileDownloading: the via callback failed (returned -3)")
        #expect(h.submit(into) { _ in 0 } == UF_REJECTED)
        #expect(h.lastError == "FileDownloading.InProgress has required fields and the via callback did not become a payload")
        let becameBadly = h.submit(into) { ctx in
            #expect(uf_context_become(ctx, #"{"progress":1}"#) == UF_OK)
            #expect(uf_context_become(ctx, #"{"progress":"x"}"#) == UF_ESCHEMA)
            return 0
        }
        #expect(becameBadly == UF_ESCHEMA)
        #expect(h.lastError == "FileDownloading.InProgress.progress: expected number, got string")
        #expect(h.feature("FileDownloading") == #"{"state":"Starting","payload":{}}"#)
        let deinitialized = h.submit(#"{"kind":"deinitialize","feature":"FileDownloading"}"#) { ctx in
            #expect(uf_context_become(ctx, "{}") == UF_EMISUSE)
            return 0
        }
        #expect(deinitialized == UF_OK)
    }

    /// A trigger and a deinitialization enter no state: a via there is a side
    /// effect, and becoming a payload is misuse. The action itself goes on.
    @Test(arguments: [
        #"{"kind":"trigger","feature":"Toggle","in":"On"}"#,
        #"{"kind":"trigger","feature":"Toggle","initialized":true,"submit":[{"kind":"transition","feature":"Toggle","into":"Off"}]}"#,
        #"{"kind":"deinitialize","feature":"Toggle"}"#,
    ])
    func becomingOnATriggerOrADeinitializationIsMisuse(action: String) {
        let h = Harness(Seeds.toggle)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        var became: [Int32] = []
        var messages: [String] = []
        let status = h.submit(action) { ctx in
            for payload in ["{}", "[]"] {
                became.append(uf_context_become(ctx, payload))
                messages.append(String(cString: uf_last_error()))
            }
            return 0
        }
        #expect(status == UF_OK)
        #expect(became == [UF_EMISUSE, UF_EMISUSE])
        #expect(messages == Array(repeating: "uf_context_become is not allowed on a trigger or a deinitialization", count: 2))
    }

    /// A payload is an object; anything else is refused by the become and, as the
    /// last become, by the action.
    @Test(arguments: [("1", "number"), ("[1]", "array"), ("null", "null"), (#""val""#, "string"), ("true", "boolean")])
    func becomingAPayloadThatIsNotAnObjectIsASchemaError(payload: String, type: String) {
        let h = Harness(Seeds.main)
        let message = "Main.Main: payload must be an object, got \(type)"
        var inside = ""
        let status = h.submit(#"{"kind":"initialize","feature":"Main","into":"Main"}"#) { ctx in
            #expect(uf_context_become(ctx, payload) == UF_ESCHEMA)
            inside = String(cString: uf_last_error())
            return 0
        }
        #expect(inside == message)
        #expect(status == UF_ESCHEMA)
        #expect(h.lastError == message)
        #expect(h.state == "{}")
    }

    @Test func aViaNeverRunsWhenThePreconditionFails() {
        let h = Harness(Seeds.toggle)
        var ran = false
        let freed = FreeCounter()
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#, freed: freed) { _ in ran = true; return 0 } == UF_REJECTED)
        #expect(!ran)
        #expect(freed.count == 1)
    }

    @Test func freeingTheDispatcherInsideACallbackIsMisuse() {
        let h = Harness(Seeds.toggle)
        h.subscribe(nil) { m in
            uf_dispatcher_free(uf_mutation_dispatcher(m))
            #expect(uf_last_status() == UF_EMISUSE)
            #expect(String(cString: uf_last_error()).contains("uf_dispatcher_free"))
            return 0
        }
        let status = h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#) { ctx in
            uf_dispatcher_free(uf_context_dispatcher(ctx))
            #expect(uf_last_status() == UF_EMISUSE)
            return 0
        }
        #expect(status == UF_OK)
        #expect(h.feature("Toggle") == #"{"state":"On","payload":{}}"#)
    }

    @Test func readsInsideCallbacksSeeTheNewModel() {
        let h = Harness(Seeds.toggle)
        var seen = ""
        h.subscribe(nil) { m in
            var out: UnsafeMutablePointer<CChar>?
            #expect(uf_state_get(uf_mutation_dispatcher(m), &out) == UF_OK)
            seen = String(cString: out!)
            uf_free(out)
            return 0
        }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        #expect(seen == #"{"Toggle":{"state":"On","payload":{}}}"#)
    }

    @Test func definitionsComeBackAsRegistered() {
        let h = Harness(Seeds.toggle)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(h.d, &out) == UF_OK)
        #expect(String(cString: out!) == #"{"features":[{"feature":"Toggle","states":{"Off":{},"On":{}}}]}"#)
        uf_free(out)
    }
}

/// The struct form of actions (`uf_dispatch`), the hot path.
@Suite struct StructActions {
    @Test func dispatchAppliesEveryKind() {
        let h = Harness(Seeds.fileDownloading)
        let recorder = h.record()
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_INITIALIZE
        "FileDownloading".withCString { feature in
            "Starting".withCString { starting in
                a.feature = feature
                a.into = starting
                #expect(uf_dispatch(h.d, &a) == UF_OK)
                #expect(uf_dispatch(h.d, &a) == UF_REJECTED)
                #expect(h.lastError == "FileDownloading is already initialized (in state Starting)")
            }
            "InProgress".withCString { inProgress in
                #"{"progress":42}"#.withCString { payload in
                    a.kind = UF_ACTION_TRANSITION
                    a.into = inProgress
                    a.payload_json = payload
                    #expect(uf_dispatch(h.d, &a) == UF_OK)
                }
            }
            a.kind = UF_ACTION_DEINITIALIZE
            a.into = nil
            a.payload_json = nil
            #expect(uf_dispatch(h.d, &a) == UF_OK)
        }
        #expect(recorder.mutations.count == 3)
        #expect(recorder.mutations[1].contains(#""new":{"state":"InProgress","payload":{"progress":42}}"#))
    }

    @Test func fieldsThatDoNotFitTheKindAreInvalid() {
        let h = Harness(Seeds.toggle)
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        "Toggle".withCString { feature in
            "On".withCString { on in
                a.feature = feature
                a.kind = uf_action_kind(rawValue: 9)
                #expect(uf_dispatch(h.d, &a) == UF_EINVAL)
                a.kind = UF_ACTION_ACTUALIZE
                a.into = on
                a.from = on
                #expect(uf_dispatch(h.d, &a) == UF_EINVAL)
                #expect(h.lastError == "uf_action: 'from' is not allowed on an actualize action")
                a.kind = UF_ACTION_TRANSITION
                a.same = 1
                #expect(uf_dispatch(h.d, &a) == UF_EINVAL)
                #expect(h.lastError == "uf_action: 'same' cannot be used with 'from'")
                a.size = 8
                #expect(uf_dispatch(h.d, &a) == UF_EINVAL)
                #expect(h.lastError.contains("size"))
            }
        }
        #expect(h.state == "{}")
    }

    @Test func viaPayloadIsFreedExactlyOnceWhateverHappens() {
        let h = Harness(Seeds.toggle)
        final class Counter { var n = 0 }
        let counter = Counter()
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_TRANSITION
        a.via = { _, _ in 0 }
        a.via_payload = Unmanaged.passUnretained(counter).toOpaque()
        a.via_payload_free = { Unmanaged<Counter>.fromOpaque($0!).takeUnretainedValue().n += 1 }
        "Toggle".withCString { feature in
            "On".withCString { on in
                a.feature = feature
                a.into = on
                #expect(uf_dispatch(h.d, &a) == UF_REJECTED)   // not initialized
                a.into = nil
                #expect(uf_dispatch(h.d, &a) == UF_EINVAL)     // refused at once
            }
        }
        #expect(counter.n == 2)
    }
}

/// Four threads, 100k actions each would be slow under `swift test`'s debug
/// build; the C test runs that size. Here: every action accounted for.
@Suite struct Threads {
    @Test func concurrentSubmittersLoseNothing() async {
        let h = Harness(Seeds.main)
        h.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":0}}"#)
        final class Count: @unchecked Sendable { var n = 0 }
        let count = Count()
        h.subscribe("Actualization<Main>") { _ in count.n += 1; return 0 }
        let handle = UInt(bitPattern: h.d)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 {
                group.addTask {
                    let d = OpaquePointer(bitPattern: handle)
                    for _ in 0..<2_000 {
                        let status = uf_submit_via(d, #"{"kind":"actualize","feature":"Main","in":"Main"}"#, { ctx, _ in
                            let text = String(cString: uf_context_payload_json(ctx)!)
                            let value = Int(text.split(separator: ":")[1].dropLast())!
                            return uf_context_become(ctx, "{\"val\":\(value + 1)}")
                        }, nil, nil)
                        precondition(status == UF_OK)
                    }
                }
            }
        }
        #expect(count.n == 8_000)
        #expect(h.state == #"{"Main":{"state":"Main","payload":{"val":8000}}}"#)
    }
}
