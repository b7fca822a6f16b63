import CUniFlow
import Testing
@testable import UniFlow

/// SPEC 7.4: "A rejected action changes nothing and notifies no binding and no
/// subscriber; it is reported. Actions it queued before it was rejected stay queued."
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
