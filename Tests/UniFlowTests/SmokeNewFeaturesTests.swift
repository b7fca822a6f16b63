import CUniFlow
import Glibc
import Testing
@testable import UniFlow

private let download = #"""
{"feature": "Download", "instances": "keyed",
 "states": {"Starting": {}, "InProgress": {"fields": {"progress": "number"},
   "after": [{"ms": 100, "reset": "update", "submit": [{"kind": "transition", "feature": "Download", "from": "InProgress", "into": "Failed"}]}]},
   "Done": {}, "Failed": {}},
 "initial": ["Starting"],
 "transitions": {"Starting": ["InProgress"], "InProgress": ["InProgress", "Done", "Failed"]}}
"""#

private let transfer = #"""
{"feature": "Transfer",
 "states": {"Amount": {"fields": {"amount": {"type": "number", "optional": true}},
                        "on": {"next": [{"into": "InvalidAmount", "spec": "below 100",
                                          "if": {"<": [{"var": "event.payload.amount"}, 100]}},
                                         {"into": "Tariffs"}]}},
            "InvalidAmount": {"on": {"retry": "Amount"}},
            "Tariffs": {"fields": {"amount": "number"}, "on": {"back": "Amount"}}},
 "on": {"cancel": "Amount"},
 "initial": ["Amount"]}
"""#

@Suite struct SmokeNewFeaturesTests {
    @Test func keyedInstancesLiveSideBySide() {
        let h = Harness(options: #"{"clock":"manual"}"#, download)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","key":"a","into":"Starting"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","key":"b","into":"Starting"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Download","key":"a","from":"Starting","into":"InProgress","payload":{"progress":1}}"#) == UF_OK)
        #expect(h.state == #"{"Download":{"a":{"state":"InProgress","payload":{"progress":1}},"b":{"state":"Starting","payload":{}}}}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","key":"a","into":"Starting"}"#) == UF_REJECTED)
        #expect(h.lastError == "Download[a] is already initialized (in state InProgress)")
        #expect(h.submit(#"{"kind":"initialize","feature":"Download","into":"Starting"}"#) == UF_ESCHEMA)
        #expect(h.lastError == "Download is keyed: an action on it needs a key")
        // The stall timer fires for `a` only.
        #expect(uf_clock_advance(h.d, 100) == UF_OK)
        #expect(h.state == #"{"Download":{"a":{"state":"Failed","payload":{}},"b":{"state":"Starting","payload":{}}}}"#)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Download","key":"a"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Download","key":"b"}"#) == UF_OK)
        #expect(h.state == "{}")
    }

    @Test func sendChoosesTheTarget() {
        let h = Harness(transfer)
        let recorder = h.record()
        #expect(h.submit(#"{"kind":"initialize","feature":"Transfer","into":"Amount"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"send","feature":"Transfer","event":"next","payload":{"amount":50}}"#) == UF_OK)
        #expect(h.feature("Transfer") == #"{"state":"InvalidAmount","payload":{}}"#)
        #expect(uf_send(h.d, "Transfer", nil, "retry", nil) == UF_OK)
        #expect(h.submit(#"{"kind":"send","feature":"Transfer","event":"next","payload":{"amount":150}}"#) == UF_OK)
        #expect(h.feature("Transfer") == #"{"state":"Tariffs","payload":{"amount":150}}"#)
        #expect(h.submit(#"{"kind":"send","feature":"Transfer","event":"retry"}"#) == UF_REJECTED)
        #expect(h.lastError == "Transfer in state Tariffs has no transition for event 'retry'")
        #expect(recorder.mutations.last?.contains(#""event":"next""#) == true)
    }

    @Test func watchesSeeOnlyChanges() {
        let h = Harness(Seeds.fileDownloading)
        var values: [String] = []
        let box = Box<(OpaquePointer) -> Int32>({ w in values.append(String(cString: uf_watch_value_json(w))); return 0 }, freed: FreeCounter())
        var id: UInt64 = 0
        let status = uf_watch(h.d, #"{"var":"model.FileDownloading.payload.progress"}"#, { w, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(w!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, &id)
        #expect(status == UF_OK)
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        h.submit(#"{"kind":"transition","feature":"FileDownloading","from":"Starting","into":"InProgress","payload":{"progress":10}}"#)
        h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":10.0}}"#)
        h.submit(#"{"kind":"actualize","feature":"FileDownloading","in":"InProgress","payload":{"progress":20}}"#)
        #expect(values == ["null", "10", "20"])
        #expect(uf_unsubscribe(h.d, id) == UF_OK)
    }

    @Test func interceptorsVeto() {
        let h = Harness(Seeds.toggle)
        let box = Box<(OpaquePointer) -> Int32>({ a in
            String(cString: uf_intercepted_state(a)) == "On" ? 1 : 0
        }, freed: FreeCounter())
        var id: UInt64 = 0
        #expect(uf_intercept(h.d, "Toggle", { a, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(a!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, &id) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","from":"Off","into":"On"}"#) == UF_REJECTED)
        #expect(h.lastError == "intercepted by \(id)")
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_TRANSITION
        a.feature = UnsafePointer(strdup("Toggle"))
        a.into = UnsafePointer(strdup("On"))
        #expect(uf_dispatch(h.d, &a) == UF_REJECTED)
        #expect(h.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
    }

    @Test func deferredDeliveriesWaitForTheLoop() {
        let h = Harness(options: #"{"timers":"host"}"#, Seeds.toggle)
        var seen: [String] = []
        let box = Box<(OpaquePointer) -> Int32>({ m in seen.append(String(cString: uf_mutation_new_state(m))); return 0 }, freed: FreeCounter())
        #expect(uf_subscribe_deferred(h.d, nil, { m, p in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(p!).takeUnretainedValue().value(m!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, nil) == UF_OK)
        var fd: Int32 = -1
        #expect(uf_loop_fd(h.d, &fd) == UF_OK)
        var timeout: Int32 = 7
        #expect(uf_loop_timeout(h.d, &timeout) == UF_OK && timeout == -1)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#)
        #expect(seen.isEmpty)
        #expect(uf_loop_timeout(h.d, &timeout) == UF_OK && timeout == 0)
        var done: UInt64 = 0
        #expect(uf_loop_run(h.d, &done) == UF_OK)
        #expect(done == 2)
        #expect(seen == ["Off", "On"])
        #expect(uf_loop_timeout(h.d, &timeout) == UF_OK && timeout == -1)
    }
}
