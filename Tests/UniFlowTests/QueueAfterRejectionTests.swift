import CUniFlow
import Testing
@testable import UniFlow

/// A rejected action changes nothing and notifies no binding and no subscriber; it
/// is reported. Actions it queued before it was rejected stay queued
/// (docs/processing.md, "One action, step by step").
@Suite struct QueueAfterRejection {
    @Test(arguments: [(Int32(1), UF_REJECTED, "Toggle: the via callback declined the action"),
                      (Int32(-1), UF_ECALLBACK, "Toggle: the via callback failed (returned -1)")])
    func actionsAViaQueuedBeforeItsActionWasRejectedStillRun(returned: Int32, status: Int32, message: String) {
        let h = Harness(Seeds.toggle, Seeds.main)
        h.captureReports()
        let recorder = h.record()
        let result = h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#) { ctx in
            let queued = uf_submit(uf_context_dispatcher(ctx), #"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1}}"#)
            return queued == UF_QUEUED ? returned : 0
        }
        #expect(result == status)
        #expect(h.lastError == message)
        #expect(h.state == #"{"Main":{"state":"Main","payload":{"val":1}}}"#)
        #expect(recorder.mutations.count == 1)
        #expect(h.reports.map { $0.hasPrefix(#"{"event":"rejected""#) } == [true, false])
    }
}

/// On the processing thread, subscribe, unsubscribe, register, handlers and the
/// reporter act immediately: a subscription added inside a via already sees the
/// mutation that via is building (docs/processing.md, "Queued actions").
@Suite struct CallsInsideAVia {
    @Test func aSubscriptionAddedInsideAViaSeesTheMutationTheViaBuilds() {
        let h = Harness(Seeds.main)
        final class Seen { var mutations: [String] = []; var status: Int32 = 99 }
        let seen = Seen()
        let status = h.submit(#"{"kind":"initialize","feature":"Main","into":"Main"}"#) { ctx in
            let box = Box<(OpaquePointer) -> Int32>({ m in
                seen.mutations.append(String(cString: uf_mutation_json(m)))
                return UF_KEEP
            }, freed: FreeCounter())
            seen.status = uf_subscribe(uf_context_dispatcher(ctx), "AnyMutationOf<Main>", { m, payload in
                Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(m!)
            }, Unmanaged.passRetained(box).toOpaque(), releaseBox, nil)
            return uf_context_become(ctx, #"{"val":3}"#)
        }
        #expect(status == UF_OK)
        #expect(seen.status == UF_OK)
        #expect(seen.mutations == [
            #"{"seq":1,"kind":"initialization","feature":"Main","old":null,"new":{"state":"Main","payload":{"val":3}},"action":{"kind":"initialize","feature":"Main","into":"Main"}}"#,
        ])
    }
}
