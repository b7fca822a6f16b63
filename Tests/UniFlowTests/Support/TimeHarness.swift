import CUniFlow
import Glibc
@testable import UniFlow

/// The time and loop calls of the C API, as a host makes them, for the timer,
/// loop and durable-timer tests. Every helper goes through `uf_*`.
extension Harness {
    /// A dispatcher on the manual clock (tests never sleep).
    static func manual(_ extra: String = "", _ definitions: String...) -> Harness {
        let options = extra.isEmpty ? #"{"clock":"manual"}"# : #"{"clock":"manual",\#(extra)}"#
        let h = Harness(options: options)
        for definition in definitions {
            let status = uf_register(h.d, definition)
            precondition(status == UF_OK, "uf_register: \(String(cString: uf_last_error()))")
        }
        return h
    }

    /// `uf_timers_get` as text.
    var timers: String {
        var out: UnsafeMutablePointer<CChar>?
        precondition(uf_timers_get(d, &out) == UF_OK, "uf_timers_get: \(lastError)")
        defer { uf_free(out) }
        return String(cString: out!)
    }

    /// `uf_snapshot_get` as text.
    var snapshot: String {
        var out: UnsafeMutablePointer<CChar>?
        precondition(uf_snapshot_get(d, &out) == UF_OK, "uf_snapshot_get: \(lastError)")
        defer { uf_free(out) }
        return String(cString: out!)
    }

    /// `uf_clock_now`.
    var now: UInt64 {
        var ms: UInt64 = 0
        precondition(uf_clock_now(d, &ms) == UF_OK, "uf_clock_now: \(lastError)")
        return ms
    }

    @discardableResult
    func advance(_ ms: UInt64) -> Int32 { uf_clock_advance(d, ms) }

    @discardableResult
    func after(_ ms: UInt64, _ action: String, id: String? = nil, keep: Bool = false) -> Int32 {
        uf_submit_after(d, action, ms, id, keep ? UInt32(UF_TIMER_KEEP) : 0)
    }

    @discardableResult
    func cancel(_ id: String) -> Int32 { uf_timer_cancel(d, id) }

    /// `uf_loop_timeout`.
    var loopTimeout: Int32 {
        var ms: Int32 = -7
        precondition(uf_loop_timeout(d, &ms) == UF_OK, "uf_loop_timeout: \(lastError)")
        return ms
    }

    /// `uf_loop_run`; returns its status and `*out_done`.
    @discardableResult
    func runLoop() -> (status: Int32, done: UInt64) {
        var done: UInt64 = 12345
        let status = uf_loop_run(d, &done)
        return (status, done)
    }

    /// Subscribes a closure whose deliveries wait for `uf_loop_run`.
    @discardableResult
    func subscribeDeferred(_ when: String?, freed: FreeCounter = FreeCounter(),
                           _ body: @escaping (OpaquePointer) -> Int32) -> (status: Int32, id: UInt64, freed: FreeCounter) {
        let box = Box(body, freed: freed)
        var id: UInt64 = 0
        let status = uf_subscribe_deferred(d, when, { m, payload in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(m!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, &id)
        return (status, id, freed)
    }

    /// Adds an interceptor closure (feature nil: every feature's actions).
    @discardableResult
    func intercept(_ feature: String?, freed: FreeCounter = FreeCounter(),
                   _ body: @escaping (OpaquePointer) -> Int32) -> (status: Int32, id: UInt64) {
        let box = Box(body, freed: freed)
        var id: UInt64 = 0
        let status = uf_intercept(d, feature, { a, payload in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(a!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox, &id)
        return (status, id)
    }

    /// Reports whose event is one of these (JSON text, in order).
    func reports(_ events: String...) -> [String] {
        reports.filter { report in events.contains { report.hasPrefix(#"{"event":"\#($0)""#) } }
    }
}

/// The definitions the time tests share.
enum TimeSeeds {
    /// A download that gives up when stalled: `Running` has an entry timer (100 ms,
    /// fails the download) and an inactivity timer (250 ms, reset by every
    /// actualization).
    static let download = #"""
    {"feature": "Download",
     "states": {"Idle": {},
                "Running": {"fields": {"progress": "number"},
                            "after": [{"ms": 100, "scenario": "Give up a stalled download",
                                       "submit": [{"kind": "transition", "feature": "Download", "from": "Running",
                                                   "into": "Failed", "payload": {"reason": "stalled"}}]},
                                      {"ms": 250, "reset": "update",
                                       "submit": [{"kind": "transition", "feature": "Download", "from": "Running",
                                                   "into": "Failed", "payload": {"reason": "idle"}}]}]},
                "Failed": {"fields": {"reason": "string"}}},
     "initial": ["Idle", "Running"],
     "transitions": {"Idle": ["Running"], "Running": ["Running", "Failed", "Idle"], "Failed": ["Idle"]}}
    """#

    /// A session that warns once (an entry timer that stays in the state) and
    /// expires after 300 ms without activity.
    static let session = #"""
    {"feature": "Session",
     "states": {"Active": {"fields": {"warned": {"type": "boolean", "default": false}},
                           "after": [{"ms": 100, "submit": [{"kind": "actualize", "feature": "Session", "in": "Active",
                                                              "payload": {"warned": true}}]},
                                     {"ms": 300, "reset": "update",
                                      "submit": [{"kind": "transition", "feature": "Session", "into": "Expired"}]}]},
                "Expired": {}},
     "initial": ["Active"],
     "transitions": {"Active": ["Expired"], "Expired": ["Active"]}}
    """#

    /// A counter the API-timer tests bump: every actualization is visible.
    static let counter = #"""
    {"feature": "Counter", "states": {"Counting": {"fields": {"n": "integer"}}}}
    """#

    static func bump(_ n: Int) -> String {
        #"{"kind":"actualize","feature":"Counter","in":"Counting","payload":{"n":\#(n)}}"#
    }

    static let startCounter = #"{"kind":"initialize","feature":"Counter","into":"Counting","payload":{"n":0}}"#
}
