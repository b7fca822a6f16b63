import CUniFlow
import Testing
@testable import UniFlow

/// The twelve action forms and their preconditions (docs/actions.md).
@Suite struct ActionForms {
    private func harness() -> Harness { Harness(Seeds.fileDownloading, Seeds.toggle) }

    @Test func initializeRequiresTheFeatureAbsentAndAnInitialState() {
        let h = harness()
        #expect(h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Completed"}"#) == UF_REJECTED)
        #expect(h.lastError == "FileDownloading cannot be initialized into Completed: not an initial state")
        #expect(h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#) == UF_REJECTED)
        #expect(h.lastError == "FileDownloading is already initialized (in state Starting)")
    }

    @Test func initializeViaBecomesThePayload() {
        let h = harness()
        let freed = FreeCounter()
        let status = h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#, freed: freed) { ctx in
            #expect(String(cString: uf_context_feature(ctx)) == "Toggle")
            #expect(uf_context_payload_json(ctx) == nil)
            return 0
        }
        #expect(status == UF_OK)
        #expect(freed.count == 1)
    }

    @Test func actualizeRequiresTheState() {
        let h = harness()
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        #expect(h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":1}}"#) == UF_REJECTED)
        #expect(h.lastError == "FileDownloading is in state Starting, not InProgress")
        #expect(h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"Starting"}"#) == UF_OK)
    }

    @Test func transitionBetweenRequiresFromAndADeclaredPair() {
        let h = harness()
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"FileDownloading","from":"Starting","into":"Completed"}"#) == UF_REJECTED)
        #expect(h.lastError == "FileDownloading cannot transition from Starting into Completed: not a declared transition")
        #expect(h.submit(#"{"kind":"transition","feature":"FileDownloading","from":"InProgress","into":"Completed"}"#) == UF_REJECTED)
        #expect(h.lastError == "FileDownloading is in state Starting, not InProgress")
        #expect(h.feature("FileDownloading") == #"{"state":"Starting","payload":{}}"#)
    }

    @Test func transitionIntoRefusesTheSameStateUnlessSame() {
        let h = harness()
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_REJECTED)
        #expect(h.lastError == "Toggle is not initialized")
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_REJECTED)
        #expect(h.lastError == "Toggle is already in state On")
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On","same":true}"#) == UF_OK)
        #expect(recorder.mutations.count == 1)
    }

    @Test func transitionIntoAutoStateFillsDefaults() {
        let h = Harness(#"{"feature":"Retry","states":{"Idle":{},"Waiting":{"fields":{"attempts":{"type":"integer","default":3},"note":{"type":"string","optional":true}}}}}"#)
        h.submit(#"{"kind":"initialize","feature":"Retry","into":"Idle"}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Retry","into":"Waiting"}"#) == UF_OK)
        #expect(h.feature("Retry") == #"{"state":"Waiting","payload":{"attempts":3}}"#)
    }

    @Test func deinitializeFromRequiresTheState() {
        let h = harness()
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Toggle","from":"Off"}"#) == UF_REJECTED)
        #expect(h.lastError == "Toggle is in state On, not Off")
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Toggle","from":"On"}"#) == UF_OK)
        #expect(h.state == "{}")
    }

    @Test func triggersCheckTheirPreconditionAndNotifyNobody() {
        let h = harness()
        h.captureReports()
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"trigger","feature":"Toggle"}"#) == UF_REJECTED)
        #expect(h.submit(#"{"kind":"trigger","feature":"Toggle","initialized":false}"#) == UF_OK)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(h.submit(#"{"kind":"trigger","feature":"Toggle","in":"On"}"#) == UF_REJECTED)
        #expect(h.lastError == "Toggle is in state Off, not On")
        #expect(h.submit(#"{"kind":"trigger","feature":"Toggle","initialized":false}"#) == UF_REJECTED)
        #expect(h.lastError == "Toggle is initialized (in state Off), not absent")
        #expect(h.submit(#"{"kind":"trigger","feature":"Toggle","in":"Off"}"#) == UF_OK)
        #expect(recorder.mutations.count == 1)
        #expect(h.reports.filter { $0.contains(#""kind":"trigger""#) && $0.contains(#""event":"processed""#) }.count == 2)
    }

    @Test func aTriggerQueuesItsSubmitOnlyWhenProcessed() {
        let h = harness()
        let trigger = #"{"kind":"trigger","feature":"Toggle","in":"Off","submit":[{"kind":"transition","feature":"Toggle","into":"On"}]}"#
        #expect(h.submit(trigger) == UF_REJECTED)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        let declined = h.submit(trigger) { _ in 1 }
        #expect(declined == UF_REJECTED)
        #expect(h.feature("Toggle") == #"{"state":"Off","payload":{}}"#)
        #expect(h.submit(trigger) == UF_OK)
        #expect(h.feature("Toggle") == #"{"state":"On","payload":{}}"#)
    }

    @Test func aTriggerWithOneInvalidActionIsRefusedWhole() {
        let h = harness()
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        let trigger = #"{"kind":"trigger","feature":"Toggle","submit":[{"kind":"transition","feature":"Toggle","into":"On"},{"kind":"transition","feature":"Toggle","into":"Nope"}]}"#
        #expect(h.submit(trigger) == UF_ENOTFOUND)
        #expect(h.lastError == "submit[1]: unknown state 'Nope' of feature Toggle")
        #expect(h.feature("Toggle") == #"{"state":"Off","payload":{}}"#)
    }
}
