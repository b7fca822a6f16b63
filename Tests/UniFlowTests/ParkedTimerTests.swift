import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A place that leaves a state with one timer keeps the timer's record, and arms
/// it again in place when it comes back (`TimerStore.park`, `rearm`): what a
/// host sees must be what it saw when every return armed a new record.
@Suite struct ParkedTimerTests {
    /// `On` gives up after 100 ms; `Off` has no timer; `Slow` has one of its own.
    static let blink = #"""
    {"feature": "Blink", "instances": "%INSTANCES%",
     "states": {"On": {"after": [{"ms": 100, "submit": [{"kind": "transition", "feature": "Blink", "from": "On", "into": "Off"}]}]},
                "Off": {},
                "Slow": {"after": [{"ms": 40, "submit": [{"kind": "transition", "feature": "Blink", "from": "Slow", "into": "Off"}]}]}},
     "initial": ["On", "Off"]}
    """#
    static let single = blink.replacing("%INSTANCES%", with: "single")
    static let keyed = blink.replacing("%INSTANCES%", with: "keyed")

    static func move(_ from: String, _ into: String, key: String? = nil) -> String {
        let k = key.map { #","key":"\#($0)""# } ?? ""
        return #"{"kind":"transition","feature":"Blink","from":"\#(from)","into":"\#(into)"\#(k)}"#
    }

    static let on = #"[{"id":"Blink.On.after[0]","due_in_ms":100,"ms":100}]"#

    func store(_ h: Harness) -> TimerStore {
        Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(h.d)).takeUnretainedValue().time.store
    }

    @Test func aReturnToTheStateCountsItsDelayFromTheReturn() {
        let h = Harness.manual("", Self.single)
        #expect(h.submit(#"{"kind":"initialize","feature":"Blink","into":"On"}"#) == UF_OK)
        #expect(h.advance(10) == UF_OK)
        #expect(h.submit(Self.move("On", "Off")) == UF_OK)
        #expect(h.timers == "[]")
        #expect(h.advance(40) == UF_OK)
        #expect(h.submit(Self.move("Off", "On")) == UF_OK)
        #expect(h.timers == Self.on)
        // Its first arming was due at 100: that passes without a firing.
        #expect(h.advance(99) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"On","payload":{}}}"#)
        #expect(h.timers == #"[{"id":"Blink.On.after[0]","due_in_ms":1,"ms":100}]"#)
        #expect(h.advance(1) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        #expect(h.now == 150)
        #expect(h.timers == "[]")
    }

    @Test func aThousandReturnsUseOneRecordAndFireOnce() {
        let h = Harness.manual("", Self.single)
        var transitions = 0
        h.subscribe("Transition<Blink>") { _ in
            transitions += 1
            return UF_KEEP
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Blink","into":"On"}"#) == UF_OK)
        for _ in 0..<1000 {
            #expect(h.submit(Self.move("On", "Off")) == UF_OK)
            #expect(h.advance(1) == UF_OK)
            #expect(h.submit(Self.move("Off", "On")) == UF_OK)
        }
        #expect(store(h).records.count == 1)
        #expect(store(h).live == 1)
        #expect(h.timers == Self.on)
        #expect(transitions == 2000)
        #expect(h.advance(100) == UF_OK)
        // The one firing: none of the thousand earlier armings came due.
        #expect(transitions == 2001)
        #expect(h.now == 1100)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
    }

    @Test func anotherTimedStateArmsItsOwnTimerAndTheParkedOneNeverFires() {
        let h = Harness.manual("", Self.single)
        #expect(h.submit(#"{"kind":"initialize","feature":"Blink","into":"On"}"#) == UF_OK)
        #expect(h.submit(Self.move("On", "Off")) == UF_OK)
        #expect(h.submit(Self.move("Off", "Slow")) == UF_OK)
        #expect(h.timers == #"[{"id":"Blink.Slow.after[0]","due_in_ms":40,"ms":40}]"#)
        #expect(h.advance(40) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        #expect(h.submit(Self.move("Off", "On")) == UF_OK)
        #expect(h.timers == #"[{"id":"Blink.On.after[0]","due_in_ms":100,"ms":100}]"#)
        #expect(store(h).live == 1)
        #expect(h.advance(100) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        #expect(h.now == 140)
    }

    @Test func instancesThatEndFreeWhatTheyParked() {
        let h = Harness.manual("", Self.keyed)
        for i in 0..<1000 {
            let key = "k\(i)"
            #expect(h.submit(#"{"kind":"initialize","feature":"Blink","key":"\#(key)","into":"On"}"#) == UF_OK)
            #expect(h.submit(Self.move("On", "Off", key: key)) == UF_OK)
            #expect(h.submit(#"{"kind":"deinitialize","feature":"Blink","key":"\#(key)"}"#) == UF_OK)
        }
        // Every instance's record was freed for the next one to take.
        #expect(store(h).records.count == 1)
        #expect(store(h).live == 0)
        #expect(h.timers == "[]")
        #expect(h.advance(1000) == UF_OK)
        #expect(h.state == "{}")
    }

    @Test func aRolledBackBatchThatCameBackLeavesTheTimerParked() {
        let h = Harness.manual("", Self.single)
        #expect(h.submit(#"{"kind":"initialize","feature":"Blink","into":"On"}"#) == UF_OK)
        #expect(h.submit(Self.move("On", "Off")) == UF_OK)
        #expect(h.advance(10) == UF_OK)
        // Back into On, then a failure: the batch leaves the model and the timers as they were.
        #expect(uf_submit_batch(h.d, "[\(Self.move("Off", "On")),\(Self.move("Slow", "Off"))]") == UF_REJECTED)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        #expect(h.timers == "[]")
        #expect(h.advance(200) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        // One that holds arms it.
        #expect(uf_submit_batch(h.d, "[\(Self.move("Off", "On"))]") == UF_OK)
        #expect(h.timers == Self.on)
        #expect(h.advance(100) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        #expect(h.now == 310)
    }

    @Test func aSnapshotRestoreForgetsWhatWasParked() {
        let h = Harness.manual("", Self.single)
        #expect(h.submit(#"{"kind":"initialize","feature":"Blink","into":"On"}"#) == UF_OK)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_snapshot_get(h.d, &out) == UF_OK)
        let snapshot = String(cString: out!)
        uf_free(out)
        #expect(h.submit(Self.move("On", "Off")) == UF_OK)
        #expect(uf_snapshot_restore(h.d, snapshot) == UF_OK)
        #expect(h.timers == Self.on)
        #expect(store(h).live == 1)
        #expect(h.advance(100) == UF_OK)
        #expect(h.state == #"{"Blink":{"state":"Off","payload":{}}}"#)
        #expect(h.submit(Self.move("Off", "On")) == UF_OK)
        #expect(h.timers == Self.on)
    }
}

/// The store's side: a parked record's heap entry is only a lower bound.
@Suite struct TimerStoreParkingTests {
    let spec = TimerSpec(ms: 100, resetOnUpdate: false, onRestore: .fire)

    func armed(at deadline: UInt64) throws -> (TimerStore, Int32) {
        var store = TimerStore()
        let index = try store.armState(deadline: deadline, spec, at: Place(feature: 0), state: 0, after: 0, next: -1)
        return (store, index)
    }

    @Test func aLaterDeadlineIsFiledAgainWhenItsOldEntryComesUp() throws {
        var (store, index) = try armed(at: 100)
        store.park(index)
        #expect(store.live == 0)
        try store.rearm(index, deadline: 150)
        #expect(store.live == 1)
        let top = store.peek()
        #expect(top?.record == index)
        #expect(top?.deadline == 150)
        store.deallocate()
    }

    @Test func anEarlierDeadlineIsFiledAfresh() throws {
        var (store, index) = try armed(at: 100)
        store.park(index)
        try store.rearm(index, deadline: 60)
        #expect(store.peek()?.deadline == 60)
        store.pop()
        // The entry of the first arming is stale.
        #expect(store.peek() == nil)
        store.deallocate()
    }

    @Test func aParkedRecordNeverComesUpAndIsFiledAgainWhenReArmed() throws {
        var (store, index) = try armed(at: 100)
        store.park(index)
        #expect(store.peek() == nil)
        #expect(!store.records[Int(index)].filed)
        try store.rearm(index, deadline: 120)
        #expect(store.peek()?.deadline == 120)
        #expect(store.records[Int(index)].filed)
        store.deallocate()
    }

    @Test func aFreedParkedRecordIsTakenByTheNextArming() throws {
        var (store, index) = try armed(at: 100)
        store.park(index)
        store.free(index)
        #expect(store.peek() == nil)
        let next = try store.armState(deadline: 300, spec, at: Place(feature: 1), state: 0, after: 0, next: -1)
        #expect(next == index)
        #expect(store.records.count == 1)
        #expect(store.peek()?.deadline == 300)
        store.deallocate()
    }
}
