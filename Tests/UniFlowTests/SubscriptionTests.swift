import CUniFlow
import Testing
@testable import UniFlow

@Suite struct Subscriptions {
    /// Each filter form (docs/filters.md) against the same six mutations.
    @Test(arguments: [
        ("AnyMutation", [1, 2, 3, 4, 5, 6]),
        ("AnyMutationOf<FileDownloading>", [1, 2, 3, 4, 5]),
        ("AnyUpdateOf<FileDownloading>", [2, 3, 4]),
        ("AnySettingOf<FileDownloading>", [1, 2, 3, 4]),
        ("SettingInto<FileDownloading.InProgress>", [2, 3]),
        ("Initialization<FileDownloading>", [1]),
        ("Actualization<FileDownloading>", [3]),
        ("Transition<FileDownloading>", [2, 4]),
        ("Deinitialization<FileDownloading>", [5]),
        ("InitializationInto<FileDownloading.Starting>", [1]),
        ("InitializationInto<FileDownloading.InProgress>", []),
        ("ActualizationIn<FileDownloading.InProgress>", [3]),
        ("TransitionInto<FileDownloading.Completed>", [4]),
        ("TransitionFrom<FileDownloading.Starting>", [2]),
        ("TransitionBetween<FileDownloading.InProgress, FileDownloading.Completed>", [4]),
        ("TransitionBetween<FileDownloading.Starting,FileDownloading.Completed>", []),
        ("DeinitializationFrom<FileDownloading.Completed>", [5]),
        ("DeinitializationFrom<FileDownloading.Starting>", []),
        (" TransitionInto < FileDownloading . Completed > ", [4]),
        ("AnyMutationOf<Toggle>", [6]),
    ])
    func filterMatchesItsMutations(filter: String, expected: [UInt64]) {
        let h = Harness(Seeds.fileDownloading, Seeds.toggle)
        var seen: [UInt64] = []
        let subscription = h.subscribe(filter) { m in
            seen.append(uf_mutation_seq(m))
            return UF_KEEP
        }
        #expect(subscription.status == UF_OK, "\(h.lastError)")
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"InProgress","payload":{"progress":1}}"#)
        h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":2}}"#)
        h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"Completed"}"#)
        h.submit(#"{"kind":"deinitialize","feature":"FileDownloading"}"#)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(seen == expected)
    }

    @Test(arguments: ["", "Nope", "AnyMutation<F>", "AnyMutationOf<>", "Transition<FileDownloading", "TransitionInto<FileDownloading>",
                      "TransitionBetween<FileDownloading.Starting, Toggle.On>"])
    func filtersThatDoNotParseAreSchemaErrors(filter: String) {
        let h = Harness(Seeds.fileDownloading, Seeds.toggle)
        let freed = FreeCounter()
        let result = h.subscribe(filter, freed: freed) { _ in 0 }
        #expect(result.status == UF_ESCHEMA)
        #expect(h.lastError.contains("'\(filter)'") || h.lastError.contains("TransitionBetween"), "\(h.lastError)")
        #expect(freed.count == 1)
    }

    @Test func filtersNamingUnknownFeaturesOrStatesAreNotFound() {
        let h = Harness(Seeds.fileDownloading)
        #expect(h.subscribe("AnyMutationOf<Nope>") { _ in 0 }.status == UF_ENOTFOUND)
        #expect(h.lastError == "filter 'AnyMutationOf<Nope>': unknown feature 'Nope'")
        #expect(h.subscribe("TransitionInto<FileDownloading.Nope>") { _ in 0 }.status == UF_ENOTFOUND)
        #expect(h.lastError == "filter 'TransitionInto<FileDownloading.Nope>': unknown state 'Nope' of feature FileDownloading")
    }

    @Test func accessorsDescribeTheMutation() {
        let h = Harness(Seeds.fileDownloading)
        var checked = false
        let sub = h.subscribe("Transition<FileDownloading>") { m in
            #expect(uf_mutation_kind_of(m) == UF_MUTATION_TRANSITION)
            #expect(String(cString: uf_mutation_feature(m)) == "FileDownloading")
            #expect(String(cString: uf_mutation_old_state(m)) == "Starting")
            #expect(String(cString: uf_mutation_new_state(m)) == "InProgress")
            #expect(String(cString: uf_mutation_old_payload_json(m)) == "{}")
            #expect(String(cString: uf_mutation_new_payload_json(m)) == #"{"progress":5}"#)
            #expect(uf_mutation_seq(m) == 2)
            #expect(uf_mutation_subscription_id(m) != 0)
            #expect(uf_mutation_dispatcher(m) == h.d)
            checked = true
            return 0
        }
        h.subscribe("Initialization<FileDownloading>") { m in
            #expect(uf_mutation_old_state(m) == nil)
            #expect(uf_mutation_old_payload_json(m) == nil)
            return 0
        }
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        h.submit(#"{"kind":"transition","feature":"FileDownloading","into":"InProgress","payload":{"progress":5}}"#)
        #expect(checked)
        #expect(sub.id != 0)
    }

    @Test func subscribersRunInSubscriptionOrderAcrossLists() {
        let h = Harness(Seeds.toggle)
        var order: [String] = []
        h.subscribe("AnyMutationOf<Toggle>") { _ in order.append("a"); return 0 }
        h.subscribe(nil) { _ in order.append("b"); return 0 }
        h.subscribe("Initialization<Toggle>") { _ in order.append("c"); return 0 }
        h.subscribe("AnyMutation") { _ in order.append("d"); return 0 }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(order == ["a", "b", "c", "d"])
    }

    @Test func returningStopEndsTheSubscriptionAndFreesItsPayloadOnce() {
        let h = Harness(Seeds.toggle)
        var calls = 0
        let sub = h.subscribe(nil) { _ in calls += 1; return UF_STOP }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#)
        #expect(calls == 1)
        #expect(sub.freed.count == 1)
        #expect(uf_unsubscribe(h.d, sub.id) == UF_ENOTFOUND)
        #expect(h.lastError == "no subscription with id \(sub.id)")
    }

    @Test func aSubscriberThatUnsubscribesItselfAndAnotherIsNotCalledAgain() {
        let h = Harness(Seeds.toggle)
        var calls: [String] = []
        var secondID: UInt64 = 0
        let first = h.subscribe(nil) { m in
            calls.append("first")
            #expect(uf_unsubscribe(uf_mutation_dispatcher(m), uf_mutation_subscription_id(m)) == UF_OK)
            #expect(uf_unsubscribe(uf_mutation_dispatcher(m), secondID) == UF_OK)
            return 0
        }
        let second = h.subscribe(nil) { _ in calls.append("second"); return 0 }
        secondID = second.id
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#)
        #expect(calls == ["first"])
        #expect(first.freed.count == 1)
        #expect(second.freed.count == 1)
    }

    @Test func aSubscriptionAddedDuringANotificationStartsWithTheNextMutation() {
        let h = Harness(Seeds.toggle)
        var late: [UInt64] = []
        var added = false
        h.subscribe(nil) { m in
            if !added {
                added = true
                h.subscribe(nil) { m in late.append(uf_mutation_seq(m)); return 0 }
            }
            return 0
        }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#)
        #expect(late == [2])
    }

    @Test func idsAreNeverReused() {
        let h = Harness(Seeds.toggle)
        var ids: Set<UInt64> = []
        for _ in 0..<50 {
            let sub = h.subscribe(nil) { _ in 0 }
            #expect(ids.insert(sub.id).inserted)
            #expect(uf_unsubscribe(h.d, sub.id) == UF_OK)
        }
        #expect(!ids.contains(0))
    }

    @Test func freeingTheDispatcherReleasesEverySubscriptionOnce() {
        let freed = FreeCounter()
        do {
            let h = Harness(Seeds.toggle)
            for _ in 0..<3 { h.subscribe(nil, freed: freed) { _ in 0 } }
        }
        #expect(freed.count == 3)
    }

    @Test func aSubscriberThatSubmitsIsQueuedAfterTheOtherSubscribers() {
        let h = Harness(Seeds.toggle)
        var log: [String] = []
        h.subscribe("TransitionInto<Toggle.On>") { m in
            log.append("first saw On")
            #expect(uf_submit(uf_mutation_dispatcher(m), #"{"kind":"transition","feature":"Toggle","into":"Off"}"#) == UF_QUEUED)
            return 0
        }
        h.subscribe(nil) { m in log.append("second saw \(String(cString: uf_mutation_new_state(m)!))"); return 0 }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        #expect(log == ["second saw Off", "first saw On", "second saw On", "second saw Off"])
        #expect(h.feature("Toggle") == #"{"state":"Off","payload":{}}"#)
    }
}

// A subscription added while a mutation is announced waits for the next one,
// also when the mutation's bindings (a handler, a report) add it.

/// The seqs a subscriber saw; the test keeps it alive while C may call.
private final class Seqs {
    var seen: [UInt64] = []

    /// Subscribes to every mutation of `d`, appending seqs here.
    @discardableResult
    func subscribe(to d: OpaquePointer?) -> Int32 {
        uf_subscribe(d, nil, { m, payload in
            Unmanaged<Seqs>.fromOpaque(payload!).takeUnretainedValue().seen.append(uf_mutation_seq(m))
            return UF_KEEP
        }, Unmanaged.passUnretained(self).toOpaque(), nil, nil)
    }
}

@Suite struct SubscribedDuringAnnouncementTests {
    @Test func givenAHandlerOfABindingSubscribes_whenTheMutationIsAnnounced_thenTheNewSubscriberWaitsForTheNext() {
        let h = Harness()
        let seqs = Seqs()
        registerHandler(h, "subscribe") { call in seqs.subscribe(to: uf_binding_call_dispatcher(call)) }
        #expect(uf_register(h.d, #"""
        {"feature":"A","states":{"S":{},"T":{}},
         "bindings":[{"when":"InitializationInto<A.S>","then":{"call":"subscribe"}}]}
        """#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"S"}"#) == UF_OK)
        #expect(seqs.seen == [])
        #expect(h.submit(#"{"kind":"transition","feature":"A","into":"T"}"#) == UF_OK)
        #expect(seqs.seen == [2])
    }

    @Test func givenTheReporterSubscribesOnABindingsReport_whenTheMutationIsAnnounced_thenTheNewSubscriberWaitsForTheNext() {
        let h = Harness(#"""
        {"feature":"A","states":{"S":{},"T":{}},
         "bindings":[{"when":"InitializationInto<A.S>","then":{"submit":[]}}]}
        """#)
        let seqs = Seqs()
        var subscribed = false
        let d = h.d
        let box = Box<(String) -> Void>({ text in
            guard !subscribed, text.contains("binding_processed") else { return }
            subscribed = true
            seqs.subscribe(to: d)
        }, freed: FreeCounter())
        uf_set_reporter(h.d, { text, payload in
            Unmanaged<Box<(String) -> Void>>.fromOpaque(payload!).takeUnretainedValue().value(String(cString: text!))
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
        #expect(h.submit(#"{"kind":"initialize","feature":"A","into":"S"}"#) == UF_OK)
        #expect(subscribed)
        #expect(seqs.seen == [])
        #expect(h.submit(#"{"kind":"transition","feature":"A","into":"T"}"#) == UF_OK)
        #expect(seqs.seen == [2])
    }
}
