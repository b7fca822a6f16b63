import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Delivery on the host's thread: `uf_subscribe_deferred`, `uf_loop_fd`,
/// `uf_loop_timeout`, `uf_loop_run` (docs/time.md, "The host's event loop").
@Suite struct DeferredDeliveryTests {
    let off = #"{"kind":"initialize","feature":"Toggle","into":"Off"}"#
    let on = #"{"kind":"transition","feature":"Toggle","into":"On"}"#
    let back = #"{"kind":"transition","feature":"Toggle","into":"Off"}"#

    func describe(_ name: String, _ m: OpaquePointer) -> String {
        "\(name) \(uf_mutation_seq(m)) \(String(cString: uf_mutation_new_state(m)))"
    }

    @Test func deliveriesWaitAndComeInMutationOrderThenSubscriptionOrder() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        var log: [String] = []
        #expect(h.subscribeDeferred(nil) { m in log.append(self.describe("A", m)); return 0 }.status == UF_OK)
        h.subscribe(nil) { m in log.append(self.describe("direct", m)); return 0 }
        #expect(h.subscribeDeferred("TransitionInto<Toggle.On>") { m in log.append(self.describe("B", m)); return 0 }.status == UF_OK)
        #expect(h.subscribeDeferred(nil) { m in log.append(self.describe("C", m)); return 0 }.status == UF_OK)
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(log == ["direct 1 Off", "direct 2 On"])
        #expect(h.loopTimeout == 0)
        let run = h.runLoop()
        #expect(run.status == UF_OK)
        #expect(run.done == 5)
        #expect(log == ["direct 1 Off", "direct 2 On", "A 1 Off", "C 1 Off", "A 2 On", "B 2 On", "C 2 On"])
        #expect(h.loopTimeout == -1)
        #expect(h.runLoop() == (UF_OK, 0))
        // out_done may be NULL.
        #expect(uf_loop_run(h.d, nil) == UF_OK)
    }

    @Test func theAccessorsGiveTheMutationAsApplied() {
        // A direct and a deferred subscriber read every accessor; the deferred one
        // reads them after the model has moved on, and must see the same.
        let h = Harness(Seeds.fileDownloading, #"""
        {"feature": "Upload", "instances": "keyed", "states": {"Sending": {"fields": {"bytes": "integer"}}}}
        """#)
        func read(_ m: OpaquePointer) -> String {
            func text(_ p: UnsafePointer<CChar>?) -> String { p.map { String(cString: $0) } ?? "NULL" }
            return [String(uf_mutation_kind_of(m).rawValue), text(uf_mutation_feature(m)), text(uf_mutation_key(m)),
                    text(uf_mutation_old_state(m)), text(uf_mutation_new_state(m)),
                    text(uf_mutation_old_payload_json(m)), text(uf_mutation_new_payload_json(m)),
                    text(uf_mutation_json(m)), String(uf_mutation_seq(m)), String(uf_mutation_dropped(m)),
                    uf_mutation_dispatcher(m) == h.d ? "same dispatcher" : "other dispatcher"].joined(separator: " | ")
        }
        var direct: [String] = [], deferred: [String] = []
        var deferredIDs: Set<UInt64> = []
        h.subscribe(nil) { m in direct.append(read(m)); return 0 }
        let sub = h.subscribeDeferred(nil) { m in
            deferred.append(read(m))
            deferredIDs.insert(uf_mutation_subscription_id(m))
            return 0
        }
        for action in [#"{"kind":"initialize","feature":"FileDownloading","into":"Starting","scope":"s","context":"c","id":"i"}"#,
                       #"{"kind":"transition","feature":"FileDownloading","from":"Starting","into":"InProgress","payload":{"progress":10}}"#,
                       #"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":20}}"#,
                       #"{"kind":"initialize","feature":"Upload","key":"a_pdf","into":"Sending","payload":{"bytes":1}}"#,
                       #"{"kind":"deinitialize","feature":"FileDownloading"}"#,
                       #"{"kind":"deinitialize","feature":"Upload","key":"a_pdf"}"#] {
            #expect(h.submit(action) == UF_OK)
        }
        #expect(h.state == "{}")
        #expect(deferred.isEmpty)
        #expect(h.runLoop() == (UF_OK, 6))
        #expect(deferred == direct)
        #expect(deferredIDs == [sub.id])
        #expect(direct[3] == #"1 | Upload | a_pdf | NULL | Sending | NULL | {"bytes":1} | {"seq":4,"kind":"initialization","feature":"Upload","key":"a_pdf","old":null,"new":{"state":"Sending","payload":{"bytes":1}},"action":{"kind":"initialize","feature":"Upload","key":"a_pdf","into":"Sending"}} | 4 | 0 | same dispatcher"#)
    }

    @Test func hotPathActionsKeepWhatTheyLentAndSaid() {
        // uf_dispatch's hot path lends the action's texts for the call only: a
        // deferred delivery shows them, and `same`, as they were when applied,
        // after the caller's buffers changed. Mixed with actions the general path
        // applied, and with deliveries skipped for a stopped subscription.
        let h = Harness(Seeds.toggle)
        var direct: [String] = [], deferred: [String] = []
        h.subscribe(nil) { m in direct.append(String(cString: uf_mutation_json(m))); return 0 }
        var stopped = 0
        h.subscribeDeferred(nil) { _ in stopped += 1; return Int32(UF_STOP) }
        h.subscribeDeferred(nil) { m in deferred.append(String(cString: uf_mutation_json(m))); return 0 }
        let scope = strdup("a scope")!, context = strdup("a context")!, id = strdup("an id")!
        defer { free(scope); free(context); free(id) }
        func toggle(into: String, same: Bool = false, lending: Bool = false) -> Int32 {
            "Toggle".withCString { feature in
                into.withCString { state in
                    var a = uf_action()
                    a.size = UInt32(MemoryLayout<uf_action>.size)
                    a.kind = UF_ACTION_TRANSITION
                    a.feature = feature
                    a.into = state
                    a.same = same ? 1 : 0
                    if lending {
                        a.scope = UnsafePointer(scope)
                        a.context = UnsafePointer(context)
                        a.id = UnsafePointer(id)
                    }
                    return uf_dispatch(h.d, &a)
                }
            }
        }
        #expect(h.submit(off) == UF_OK)
        #expect(toggle(into: "On") == UF_OK)
        #expect(toggle(into: "On", same: true) == UF_OK)
        #expect(toggle(into: "Off", lending: true) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        strcpy(scope, "changed")
        strcpy(context, "changed")
        strcpy(id, "gone")
        #expect(h.runLoop() == (UF_OK, 6))
        #expect(stopped == 1)
        #expect(deferred == direct)
        #expect(direct.count == 5)
        #expect(direct[1].hasSuffix(#""action":{"kind":"transition","feature":"Toggle","into":"On","same":false}}"#))
        #expect(direct[2].hasSuffix(#""action":{"kind":"transition","feature":"Toggle","into":"On","same":true}}"#))
        #expect(direct[3].hasSuffix(#""action":{"kind":"transition","feature":"Toggle","into":"Off","same":false,"scope":"a scope","context":"a context","id":"an id"}}"#))
        // What the skipped deliveries kept went with them: the next run is in step.
        #expect(h.submit(back) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(deferred == direct)
    }

    @Test func thousandsOfWaitingDeliveriesComeInOrderWithTheirActions() {
        // Enough waiting deliveries, half of them with an action that lent a text,
        // that the queues move what is left to their front while the run pops.
        let h = Harness(Seeds.toggle)
        var direct: [String] = [], deferred: [String] = []
        h.subscribe(nil) { m in direct.append(String(cString: uf_mutation_json(m))); return 0 }
        h.subscribeDeferred(nil) { m in deferred.append(String(cString: uf_mutation_json(m))); return 0 }
        #expect(h.submit(off) == UF_OK)
        for i in 0..<15_000 {
            let into = i % 2 == 0 ? "On" : "Off"
            let status = "Toggle".withCString { feature in
                into.withCString { state in
                    "call \(i)".withCString { context in
                        var a = uf_action()
                        a.size = UInt32(MemoryLayout<uf_action>.size)
                        a.kind = UF_ACTION_TRANSITION
                        a.feature = feature
                        a.into = state
                        if i % 4 < 2 { a.context = context }
                        return uf_dispatch(h.d, &a)
                    }
                }
            }
            if status != UF_OK {
                Issue.record("action \(i): \(status)")
                return
            }
        }
        #expect(h.runLoop() == (UF_OK, 15_001))
        #expect(deferred.count == direct.count)
        #expect(deferred == direct)
        #expect(direct[14_998].hasSuffix(#""into":"Off","same":false,"context":"call 14997"}}"#))
        // The queues work on as before.
        #expect(h.submit(on) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(deferred == direct)
    }

    @Test func stopDropsTheSubscriptionsWaitingDeliveries() {
        let h = Harness(Seeds.toggle)
        var calls = 0
        let sub = h.subscribeDeferred(nil) { _ in calls += 1; return Int32(UF_STOP) }
        var others = 0
        h.subscribeDeferred(nil) { _ in others += 1; return 0 }
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(h.submit(back) == UF_OK)
        // The first delivery stops the subscription: its other two are dropped;
        // the other subscription gets all three.
        #expect(h.runLoop() == (UF_OK, 4))
        #expect(calls == 1)
        #expect(others == 3)
        #expect(sub.freed.count == 1)
        #expect(uf_unsubscribe(h.d, sub.id) == UF_ENOTFOUND)
        #expect(h.loopTimeout == -1)
    }

    @Test func unsubscribingDropsTheWaitingDeliveries() {
        let h = Harness(Seeds.toggle)
        var calls = 0
        let sub = h.subscribeDeferred(nil) { _ in calls += 1; return 0 }
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(h.loopTimeout == 0)
        #expect(uf_unsubscribe(h.d, sub.id) == UF_OK)
        #expect(sub.freed.count == 1)
        #expect(h.loopTimeout == -1)
        #expect(h.runLoop() == (UF_OK, 0))
        #expect(calls == 0)
    }

    @Test func endedSubscriptionsLeaveNoDeliveriesBehindForALoopThatNeverRuns() {
        // The descriptor says there is nothing to do, so nothing would ever take them out.
        let h = Harness(Seeds.toggle)
        let core = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(h.d)).takeUnretainedValue()
        #expect(h.submit(off) == UF_OK)
        for _ in 0..<1000 {
            let sub = h.subscribeDeferred(nil) { _ in
                Issue.record("an ended subscription was called")
                return 0
            }
            for action in [on, back, on, back] { #expect(h.submit(action) == UF_OK) }
            #expect(uf_unsubscribe(h.d, sub.id) == UF_OK)
            #expect(h.loopTimeout == -1)
        }
        #expect(core.loop.queue.count < 100)
    }

    @Test func takingOutEndedSubscriptionsDeliveriesKeepsTheOthersWhole() {
        // 200 deliveries of an ended subscription go; the three left carry the
        // texts their actions lent, in order.
        let h = Harness(Seeds.toggle)
        let core = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(h.d)).takeUnretainedValue()
        var direct: [String] = [], deferred: [String] = []
        let ended = h.subscribeDeferred(nil) { _ in 0 }
        #expect(h.submit(off) == UF_OK)
        for i in 0..<199 { #expect(h.submit(i % 2 == 0 ? on : back) == UF_OK) }
        h.subscribe(nil) { m in direct.append(String(cString: uf_mutation_json(m))); return 0 }
        h.subscribeDeferred(nil) { m in deferred.append(String(cString: uf_mutation_json(m))); return 0 }
        for (i, context) in ["first", "second", "third"].enumerated() {
            #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"\#(i % 2 == 0 ? "Off" : "On")","context":"\#(context)","id":"n\#(i)"}"#) == UF_OK)
        }
        #expect(uf_unsubscribe(h.d, ended.id) == UF_OK)
        #expect(core.loop.queue.count == 3)
        #expect(h.runLoop() == (UF_OK, 3))
        #expect(deferred == direct)
        #expect(direct.count == 3 && direct[2].hasSuffix(#""context":"third","id":"n2"}}"#))
    }

    @Test func aRunMakesOnlyTheDeliveriesWaitingWhenItStartedEvenWhenTheLimitDropsSome() {
        // Seq 1 and 2 wait; delivering 1 causes three more (Toggle is already On
        // for the first of its four actions), past the limit of 3, which drops 2:
        // the run ends there, and the next makes the three.
        let h = Harness(options: #"{"deferred_limit":3}"#, Seeds.toggle)
        var seen: [UInt64] = []
        h.subscribeDeferred(nil) { m in
            seen.append(uf_mutation_seq(m))
            if uf_mutation_seq(m) == 1 {
                for action in [self.on, self.back, self.on, self.back] { _ = uf_submit(uf_mutation_dispatcher(m), action) }
            }
            return 0
        }
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(seen == [1])
        #expect(h.runLoop() == (UF_OK, 3))
        #expect(seen == [1, 3, 4, 5])
    }

    @Test func pastTheLimitTheOldestDeliveryIsDroppedAndReported() {
        let h = Harness(options: #"{"deferred_limit":2}"#, Seeds.toggle)
        h.captureReports()
        var seen: [String] = []
        let sub = h.subscribeDeferred(nil) { m in
            seen.append("\(uf_mutation_seq(m)) dropped \(uf_mutation_dropped(m))")
            return 0
        }
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        #expect(h.reports("dropped").isEmpty)
        #expect(h.submit(back) == UF_OK)
        #expect(h.reports("dropped") == [
            #"{"event":"dropped","action":{"kind":"initialize","feature":"Toggle","into":"Off"},"status":"UF_ENOMEM","reason":"deferred_limit of 2 deliveries reached; the oldest was dropped","subscription":\#(sub.id),"seq":1}"#,
        ])
        #expect(h.runLoop() == (UF_OK, 2))
        // The next delivery says how many were lost just before it.
        #expect(seen == ["2 dropped 1", "3 dropped 0"])
        #expect(h.submit(on) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(seen.last == "4 dropped 0")
    }

    @Test func droppingPastTheLimitSkipsEndedSubscriptionsAndKeepsTheRestInStep() {
        // An ended subscription's waiting delivery is skipped on the way to the
        // oldest live one, with what it kept: the deliveries left show their own actions.
        let h = Harness(options: #"{"deferred_limit":2}"#, Seeds.toggle)
        var direct: [String] = [], deferred: [String] = []
        h.subscribe(nil) { m in direct.append(String(cString: uf_mutation_json(m))); return 0 }
        let ended = h.subscribeDeferred(nil) { _ in 0 }
        h.subscribeDeferred(nil) { m in
            deferred.append("dropped \(uf_mutation_dropped(m)): " + String(cString: uf_mutation_json(m)))
            return 0
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off","context":"zero"}"#) == UF_OK)
        #expect(uf_unsubscribe(h.d, ended.id) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On","context":"first"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"Off","context":"second"}"#) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 2))
        #expect(deferred == ["dropped 1: " + direct[1], "dropped 0: " + direct[2]])
        #expect(direct[1].hasSuffix(#""context":"first"}}"#))
    }

    @Test func theLimitCountsEveryWaitingDeliveryAndTheDropIsToldToItsOwnSubscription() {
        let h = Harness(options: #"{"deferred_limit":3}"#, Seeds.toggle)
        h.captureReports()
        var seen: [String] = []
        let x = h.subscribeDeferred(nil) { m in seen.append("x \(uf_mutation_seq(m)) dropped \(uf_mutation_dropped(m))"); return 0 }
        let y = h.subscribeDeferred(nil) { m in seen.append("y \(uf_mutation_seq(m)) dropped \(uf_mutation_dropped(m))"); return 0 }
        #expect(h.submit(off) == UF_OK)
        #expect(h.submit(on) == UF_OK)
        // Four deliveries for a limit of three: x's delivery of seq 1 goes.
        #expect(h.reports("dropped").count == 1)
        #expect(h.reports("dropped")[0].hasSuffix(#""subscription":\#(x.id),"seq":1}"#))
        #expect(h.runLoop() == (UF_OK, 3))
        #expect(seen == ["y 1 dropped 0", "x 2 dropped 1", "y 2 dropped 0"])
        _ = y
    }

    @Test func aHostThatNeverRunsTheLoopLosesNothingSilently() {
        let h = Harness(options: #"{"deferred_limit":10}"#, Seeds.toggle)
        h.captureReports()
        h.subscribeDeferred(nil) { _ in 0 }
        #expect(h.submit(off) == UF_OK)
        for i in 0..<50 { #expect(h.submit(i % 2 == 0 ? on : back) == UF_OK) }
        // 51 mutations, 10 wait: 41 reported.
        #expect(h.reports("dropped").count == 41)
        #expect(h.reports("dropped").last!.hasSuffix(#""seq":41}"#))
    }

    @Test func whatDeferredSubscribersSubmitIsProcessedBeforeTheRunReturnsAndItsDeliveriesWait() {
        let h = Harness(Seeds.toggle)
        var seen: [String] = []
        var statuses: [Int32] = []
        h.subscribeDeferred(nil) { m in
            seen.append(String(cString: uf_mutation_new_state(m)))
            if String(cString: uf_mutation_new_state(m)) == "On" {
                statuses.append(uf_submit(uf_mutation_dispatcher(m), #"{"kind":"transition","feature":"Toggle","into":"Off"}"#))
            }
            return 0
        }
        #expect(h.submit(off) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(h.submit(on) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(statuses == [UF_QUEUED])
        // Processed before uf_loop_run returned ...
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        // ... but delivered by the next run.
        #expect(seen == ["Off", "On"])
        #expect(h.loopTimeout == 0)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(seen == ["Off", "On", "Off"])
        #expect(h.loopTimeout == -1)
    }

    @Test func runningTheLoopInsideACallbackIsMisuse() {
        let h = Harness(Seeds.toggle)
        var statuses: [Int32] = []
        var messages: [String] = []
        h.subscribe(nil) { m in
            statuses.append(uf_loop_run(uf_mutation_dispatcher(m), nil))
            messages.append(String(cString: uf_last_error()))
            return 0
        }
        h.subscribeDeferred(nil) { m in
            statuses.append(uf_loop_run(uf_mutation_dispatcher(m), nil))
            messages.append(String(cString: uf_last_error()))
            return 0
        }
        #expect(h.submit(off) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(statuses == [UF_EMISUSE, UF_EMISUSE])
        #expect(messages == Array(repeating: "uf_loop_run is not allowed inside a callback of the same dispatcher", count: 2))
    }

    @Test(arguments: [UInt64(18_446_744_073_710), 36_893_488_147_420, 9_007_199_254_740_992])
    func aTimerCenturiesAwayIsNeverDueNow(delay: UInt64) {
        // Its deadline in nanoseconds passes 2^64: wrapped, it lay in the past, and a
        // loop (or the library's thread) woke at once, again and again.
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        #expect(uf_submit_after(h.d, #"{"kind":"initialize","feature":"Toggle","into":"Off"}"#, delay, "far", 0) == UF_OK)
        var ms: Int32 = 0
        #expect(uf_loop_timeout(h.d, &ms) == UF_OK)
        #expect(ms == Int32.max)
        #expect(uf_loop_run(h.d, nil) == UF_OK)
        #expect(h.timers.contains(#""id":"far""#))
    }

    @Test func badArgumentsAreRefusedAndThePayloadReleased() {
        let h = Harness(Seeds.toggle)
        let freed = FreeCounter()
        #expect(h.subscribeDeferred("TransitionInto<Toggle>", freed: freed) { _ in 0 }.status == UF_ESCHEMA)
        #expect(h.subscribeDeferred("TransitionInto<Toggle.Nope>", freed: freed) { _ in 0 }.status == UF_ENOTFOUND)
        #expect(freed.count == 2)
        let box = Unmanaged.passRetained(Box<Int>(0, freed: freed)).toOpaque()
        #expect(uf_subscribe_deferred(h.d, nil, nil, box, releaseBox, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_subscribe_deferred: fn is NULL")
        #expect(freed.count == 3)
        #expect(uf_loop_fd(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_loop_fd: out_fd is NULL")
        #expect(uf_loop_timeout(h.d, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_loop_timeout: out_ms is NULL")
        var ms: Int32 = 0
        #expect(uf_loop_timeout(nil, &ms) == UF_EINVAL)
        #expect(uf_loop_run(nil, nil) == UF_EINVAL)
        #expect(h.lastError == "uf_loop_run: dispatcher is NULL")
        #expect(uf_mutation_dropped(nil) == 0)
    }

    @Test func freeingWithDeliveriesWaitingReleasesThePayloadOnce() {
        var freed = FreeCounter()
        var calls = 0
        do {
            let h = Harness(Seeds.toggle)
            freed = h.subscribeDeferred(nil) { _ in calls += 1; return 0 }.freed
            #expect(h.submit(off) == UF_OK)
        }
        #expect(freed.count == 1)
        #expect(calls == 0)
    }
}

/// Host timers, the descriptor and the timeout.
@Suite struct HostLoopTests {
    let off = #"{"kind":"initialize","feature":"Toggle","into":"Off"}"#
    let on = #"{"kind":"transition","feature":"Toggle","into":"On"}"#

    /// Whether the descriptor is readable now (poll without waiting).
    func readable(_ fd: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, 0) == 1 && p.revents & Int16(POLLIN) != 0
    }

    @Test func hostTimersFireOnlyInTheLoop() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        h.captureReports()
        #expect(h.submit(off) == UF_OK)
        #expect(h.after(0, on, id: "now") == UF_OK)
        // Due at once, yet nothing runs by itself: not even the next call fires it.
        #expect(h.submit(#"{"kind":"trigger","feature":"Toggle","initialized":true}"#) == UF_OK)
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        #expect(h.loopTimeout == 0)
        var delivered: [String] = []
        h.subscribeDeferred(nil) { m in delivered.append(String(cString: uf_mutation_new_state(m))); return 0 }
        // One timer fired, and the delivery it caused made in the same run.
        #expect(h.runLoop() == (UF_OK, 2))
        #expect(h.state == #"{"Toggle":{"state":"On","payload":{}}}"#)
        #expect(delivered == ["On"])
        #expect(h.reports("timer_fired") == [#"{"event":"timer_fired","action":{"kind":"transition","feature":"Toggle","into":"On","same":false,"timer":"now"},"timer":"now"}"#])
        #expect(h.timers == "[]")
        #expect(h.loopTimeout == -1)
    }

    @Test func theTimeoutIsWhatPollNeeds() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        #expect(h.loopTimeout == -1)
        #expect(h.after(100, on, id: "soon") == UF_OK)
        #expect((1...100).contains(h.loopTimeout))
        #expect(h.cancel("soon") == UF_OK)
        #expect(h.loopTimeout == -1)
        // Far away: clamped to INT_MAX.
        #expect(h.after(UInt64(1) << 40, on, id: "far") == UF_OK)
        #expect(h.loopTimeout == Int32.max)
        // A delivery waiting: 0.
        h.subscribeDeferred(nil) { _ in 0 }
        #expect(h.submit(off) == UF_OK)
        #expect(h.loopTimeout == 0)
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(h.loopTimeout == Int32.max)
    }

    @Test func withTheTimerThreadOrAManualClockOnlyDeliveriesCount() {
        let threaded = Harness(options: nil, Seeds.toggle)
        #expect(threaded.after(3_600_000, on, id: "later") == UF_OK)
        #expect(threaded.loopTimeout == -1)
        let manual = Harness.manual(#""timers":"host""#, Seeds.toggle)
        #expect(manual.submit(off) == UF_OK)
        #expect(manual.after(0, on, id: "due") == UF_OK)
        #expect(manual.loopTimeout == -1)
        // uf_loop_run does not fire a manual clock's timers: only uf_clock_advance does.
        #expect(manual.runLoop() == (UF_OK, 0))
        #expect(manual.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
        #expect(manual.advance(0) == UF_OK)
        #expect(manual.state == #"{"Toggle":{"state":"On","payload":{}}}"#)
    }

    @Test func aDeferredWatchKeepsTheDescriptorReadableOnlyWhileAValueWaits() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        #expect(h.submit(off) == UF_OK)
        var fd: Int32 = -1, id: UInt64 = 0
        #expect(uf_loop_fd(h.d, &fd) == UF_OK)
        #expect(uf_watch_deferred(h.d, #"{"var":"model.Toggle.state"}"#, { _, _ in UF_KEEP }, nil, nil, &id) == UF_OK)
        #expect(h.runLoop() == (UF_OK, 1))  // its first value, "Off"
        #expect(h.submit(on) == UF_OK)
        #expect(readable(fd) && h.loopTimeout == 0)
        // Back to the value it has: nothing waits, and the descriptor says so too.
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(!readable(fd) && h.loopTimeout == -1)
        #expect(h.runLoop() == (UF_OK, 0))
        // Ended with a value waiting: the same.
        #expect(h.submit(on) == UF_OK)
        #expect(readable(fd))
        #expect(uf_unsubscribe(h.d, id) == UF_OK)
        #expect(!readable(fd) && h.loopTimeout == -1)
    }

    @Test func theDescriptorIsCloseOnExecAndReadableWhileWorkWaits() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        var fd: Int32 = -1, again: Int32 = -2
        #expect(uf_loop_fd(h.d, &fd) == UF_OK)
        #expect(uf_loop_fd(h.d, &again) == UF_OK)
        #expect(fd >= 0 && fd == again)
        #expect(fcntl(fd, F_GETFD) & FD_CLOEXEC != 0)
        #expect(!readable(fd))
        h.subscribeDeferred(nil) { _ in 0 }
        #expect(h.submit(off) == UF_OK)
        // Level-triggered: readable until the work is done, however often polled.
        #expect(readable(fd))
        #expect(readable(fd))
        #expect(h.runLoop() == (UF_OK, 1))
        #expect(!readable(fd))
        // A host timer due at once makes it readable too.
        #expect(h.after(0, on) == UF_OK)
        #expect(readable(fd))
        #expect(readable(fd))
        #expect(h.runLoop() == (UF_OK, 2))
        #expect(!readable(fd))
        // A due timer cancelled before the loop ran: nothing to do any more.
        #expect(h.after(0, on, id: "gone") == UF_OK)
        #expect(readable(fd))
        #expect(h.cancel("gone") == UF_OK)
        #expect(!readable(fd))
        #expect(h.runLoop() == (UF_OK, 0))
    }
}
