import CUniFlow
import Testing
@testable import UniFlow

/// The scenarios of the original Swift UniFlow library (a file download, the
/// arithmetic Main, a search), through the C API.
@Suite struct OriginalUniFlowScenarios {
    @Test func fileDownloadingRunsFromStartToFinish() {
        let h = Harness(Seeds.fileDownloading)
        let recorder = h.record("AnyMutationOf<FileDownloading>")
        #expect(h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"FileDownloading","from":"Starting","into":"InProgress","payload":{"progress":10}}"#) == UF_OK)
        #expect(h.state == #"{"FileDownloading":{"state":"InProgress","payload":{"progress":10}}}"#)
        #expect(h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":100}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"FileDownloading","from":"InProgress","into":"Completed","scope":"downloader.c","context":"finish"}"#) == UF_OK)
        #expect(h.state == #"{"FileDownloading":{"state":"Completed","payload":{}}}"#)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"FileDownloading","from":"Completed"}"#) == UF_OK)
        #expect(h.state == "{}")
        #expect(recorder.mutations == [
            #"{"seq":1,"kind":"initialization","feature":"FileDownloading","old":null,"new":{"state":"Starting","payload":{}},"action":{"kind":"initialize","feature":"FileDownloading","into":"Starting"}}"#,
            #"{"seq":2,"kind":"transition","feature":"FileDownloading","old":{"state":"Starting","payload":{}},"new":{"state":"InProgress","payload":{"progress":10}},"action":{"kind":"transition","feature":"FileDownloading","from":"Starting","into":"InProgress"}}"#,
            #"{"seq":3,"kind":"actualization","feature":"FileDownloading","old":{"state":"InProgress","payload":{"progress":10}},"new":{"state":"InProgress","payload":{"progress":100}},"action":{"kind":"actualize","feature":"FileDownloading","in":"InProgress"}}"#,
            #"{"seq":4,"kind":"transition","feature":"FileDownloading","old":{"state":"InProgress","payload":{"progress":100}},"new":{"state":"Completed","payload":{}},"action":{"kind":"transition","feature":"FileDownloading","from":"InProgress","into":"Completed","scope":"downloader.c","context":"finish"}}"#,
            #"{"seq":5,"kind":"deinitialization","feature":"FileDownloading","old":{"state":"Completed","payload":{}},"new":null,"action":{"kind":"deinitialize","feature":"FileDownloading","from":"Completed"}}"#,
        ])
    }

    /// `begin` initializes Main {val: 0}; its via submits setExplicit(10) then incFive.
    @Test func arithmeticViaQueuesInOrder() {
        let h = Harness(Seeds.main)
        let recorder = h.record()
        let status = h.submit(#"{"kind":"initialize","feature":"Main","into":"Main","context":"begin"}"#) { ctx in
            #expect(uf_context_state(ctx) == nil)
            #expect(uf_context_become(ctx, #"{"val":0}"#) == UF_OK)
            let d = uf_context_dispatcher(ctx)
            #expect(uf_submit(d, #"{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":10},"context":"setExplicit"}"#) == UF_QUEUED)
            let incFive = uf_submit_via(d, #"{"kind":"actualize","feature":"Main","in":"Main","context":"incFive"}"#, { ctx, _ in
                let text = String(cString: uf_context_payload_json(ctx)!)
                let value = Int(text.split(separator: ":")[1].dropLast())!
                return uf_context_become(ctx, "{\"val\":\(value + 5)}")
            }, nil, nil)
            #expect(incFive == UF_QUEUED)
            return 0
        }
        #expect(status == UF_OK)
        #expect(h.state == #"{"Main":{"state":"Main","payload":{"val":15}}}"#)
        #expect(recorder.mutations.map { $0.contains(#""context":"begin""#) } == [true, false, false])
        #expect(recorder.mutations[1].contains(#""new":{"state":"Main","payload":{"val":10}}"#))
        #expect(recorder.mutations[2].contains(#""new":{"state":"Main","payload":{"val":15}}"#))
    }

    @Test func setExplicitToTheCurrentValueIsRejected() {
        let h = Harness(Seeds.main)
        h.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":15}}"#)
        let status = h.submit(#"{"kind":"actualize","feature":"Main","in":"Main"}"#) { ctx in
            let current = String(cString: uf_context_payload_json(ctx)!)
            return current == #"{"val":15}"# ? 1 : uf_context_become(ctx, #"{"val":15}"#)
        }
        #expect(status == UF_REJECTED)
        #expect(h.lastError == "Main: the via callback declined the action")
        #expect(h.state == #"{"Main":{"state":"Main","payload":{"val":15}}}"#)
    }

    @Test func actionsOnAnUninitializedFeatureAreRejectedNamingIt() {
        let h = Harness(Seeds.main)
        #expect(h.submit(#"{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":1}}"#) == UF_REJECTED)
        #expect(h.lastError == "Main is not initialized (expected state Main)")
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Main"}"#) == UF_REJECTED)
        #expect(h.lastError == "Main is not initialized")
        #expect(h.state == "{}")
    }

    /// setup -> begin -> simulate (progress 10, 30, 70) -> fail -> cleanup.
    @Test func searchProgressesThenFails() {
        let h = Harness(Seeds.search)
        let recorder = h.record("AnyUpdateOf<Search>")
        #expect(h.submit(#"{"kind":"initialize","feature":"Search","into":"Ready"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Search","from":"Ready","into":"InProgress","payload":{"query":"uniflow","progress":0}}"#) == UF_OK)
        for progress in [10, 30, 70] {
            #expect(h.submit(#"{"kind":"actualize","feature":"Search","in":"InProgress","payload":{"query":"uniflow","progress":\#(progress)}}"#) == UF_OK)
        }
        #expect(h.feature("Search") == #"{"state":"InProgress","payload":{"query":"uniflow","progress":70}}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Search","into":"Failed","payload":{"reason":"timeout"}}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Search","from":"Failed"}"#) == UF_OK)
        #expect(h.feature("Search") == nil)
        #expect(recorder.mutations.count == 5)
        #expect(recorder.mutations.last!.contains(#""new":{"state":"Failed","payload":{"reason":"timeout"}}"#))
    }
}
