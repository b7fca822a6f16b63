import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Timers on partitioned dispatchers: the owner writes what its timers do into
/// records, followers keep the timers from them, and a new owner fires what is
/// overdue once.
@Suite struct RecordTimers {
    static let job = #"""
    {"feature": "Job", "instances": "keyed",
     "states": {"Queued": {}, "Running": {"after": [{"ms": 30000, "submit": [{"kind": "transition", "feature": "Job", "into": "Stalled"}]}]},
                "Stalled": {}}}
    """#
    /// A state timer whose firing leaves its place in the state (it changes another instance).
    static let ping = #"""
    {"feature": "Job", "instances": "keyed",
     "states": {"Queued": {}, "Running": {"after": [{"ms": 1000, "submit": [{"kind": "actualize", "feature": "Job", "in": "Running"}]}]},
                "Stalled": {}}}
    """#


    func lines(_ text: String) -> [JSONObject] {
        (try! JSONParser.parse(text).objectValue!["lines"]?.arrayValue ?? []).map { $0.objectValue! }
    }

    static let start = #"{"kind": "transition", "feature": "Job", "key": "a", "into": "Running"}"#

    @Test func anAPITimerIsARecordThatFollowersKeepAndDropWhenItFires() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        let b = Node("b", log: log, Self.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(uf_submit_after(a.h.d, Self.start, 500, "start-a", 0) == UF_OK)
        // Arming is an outer call: one record with the timer's line.
        let armed = lines(log.records[0]!.last!)
        #expect(armed.count == 1)
        #expect(armed[0]["timer"] == .string("armed"))
        #expect(armed[0]["id"] == .string("start-a"))
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.timers == #"[{"id":"start-a","due_in_ms":500,"ms":500,"p":0}]"#)
        // Due everywhere; only the owner fires it, in one record with the line that says so.
        #expect(uf_clock_advance(b.h.d, 600) == UF_OK)
        #expect(b.h.feature("Job")!.contains("Queued"))
        #expect(uf_clock_advance(a.h.d, 600) == UF_OK)
        let fired = lines(log.records[0]!.last!)
        #expect(fired.map { $0["kind"] ?? $0["timer"]! } == [.string("transition"), .string("fired")])
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
        // b dropped its copy: a later claim fires nothing again.
        #expect(b.h.timers == #"[{"id":"Job[a].Running.after[0]","due_in_ms":30000,"ms":30000,"p":0}]"#)
        let count = log.records[0]!.count
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(uf_clock_advance(b.h.d, 0) == UF_OK)
        #expect(log.records[0]!.count == count + 1)
    }

    @Test func aNewOwnerFiresTheAPITimerItsPredecessorArmedOnce() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        let b = Node("b", log: log, Self.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(uf_submit_after(a.h.d, Self.start, 500, nil, 0) == UF_OK)
        #expect(b.catchUp() == UF_OK)
        // a is gone before its timer fires; b takes over after the deadline.
        #expect(uf_clock_advance(b.h.d, 2000) == UF_OK)
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(uf_clock_advance(b.h.d, 0) == UF_OK)
        #expect(b.h.feature("Job")!.contains("Running"))
        let last = lines(log.records[0]!.last!)
        #expect(last.last?["timer"] == .string("fired"))
        #expect(try! JSONParser.parse(log.records[0]!.last!).objectValue!["node"] == .string("b"))
        #expect(uf_clock_advance(b.h.d, 1000) == UF_OK)
        #expect(!b.h.timers.contains(#""ms":500"#))
    }

    @Test func cancellingIsARecordToo() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        let b = Node("b", log: log, Self.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(uf_submit_after(a.h.d, Self.start, 500, "start-a", 0) == UF_OK)
        #expect(uf_timer_cancel(a.h.d, "start-a") == UF_OK)
        #expect(lines(log.records[0]!.last!).first?["timer"] == .string("cancelled"))
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.timers == "[]")
    }

    @Test func aStateTimerThatFiredWithoutLeavingItsStateIsNotFiredAgainAfterAFailover() {
        let log = TestLog()
        let a = Node("a", log: log, Self.ping)
        let b = Node("b", log: log, Self.ping)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Running"}"#) == UF_OK)
        #expect(uf_clock_advance(a.h.d, 1000) == UF_OK)
        // The actualization, and the line that says the timer fired (its place stayed in Running).
        let fired = lines(log.records[0]!.last!)
        #expect(fired.map { $0["kind"] ?? $0["timer"]! } == [.string("actualization"), .string("fired")])
        #expect(fired[1]["id"] == .string("Job[a].Running.after[0]"))
        #expect(uf_clock_advance(b.h.d, 1500) == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.timers == "[]")
        let count = log.records[0]!.count
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(uf_clock_advance(b.h.d, 0) == UF_OK)
        // The claim only: nothing fired twice.
        #expect(log.records[0]!.count == count + 1)
    }

    @Test func aRefusedFiringChangesNothingAndTheTimerTriesAgainASecondLater() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(uf_submit_after(a.h.d, Self.start, 500, "start-a", 0) == UF_OK)
        let before = a.h.state
        let count = log.records[0]!.count
        log.refuseNext = UF_EUNAVAILABLE
        #expect(uf_clock_advance(a.h.d, 500) == UF_OK)
        #expect(a.h.state == before)
        #expect(log.records[0]!.count == count)
        #expect(a.h.timers == #"[{"id":"start-a","due_in_ms":1000,"ms":500,"p":0}]"#)
        #expect(uf_clock_advance(a.h.d, 1000) == UF_OK)
        #expect(a.h.feature("Job")!.contains("Running"))
        #expect(lines(log.records[0]!.last!).last?["timer"] == .string("fired"))
    }

    @Test func aSnapshotCarriesThePartitionsTimersWithTheirDeadlines() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Running"}"#) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "e", "into": "Queued"}"#) == UF_OK)
        #expect(uf_submit_after(a.h.d, #"{"kind": "transition", "feature": "Job", "key": "e", "into": "Running"}"#, 5000, "start-e", 0) == UF_OK)
        #expect(uf_clock_advance(a.h.d, 10000) == UF_OK)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partition_snapshot(a.h.d, 0, &out) == UF_OK)
        let snapshot = String(cString: out!)
        uf_free(out)
        let timersOfSnapshot = try! JSONParser.parse(snapshot).objectValue!["snapshot"]!.objectValue!["timers"]!.arrayValue!
        #expect(timersOfSnapshot.count == 2)
        // A node started from it, 10 s later on its own clock, has the same deadlines left.
        let c = Node("c", log: log, Self.job)
        #expect(uf_clock_advance(c.h.d, 10000) == UF_OK)
        #expect(uf_record_apply(c.h.d, snapshot) == UF_OK)
        // The manual clock's time is the wall-clock time the record carries.
        #expect(c.h.timers == a.h.timers)
        // c takes over when a is gone, and each fires once.
        #expect(uf_clock_advance(c.h.d, 20000) == UF_OK)
        #expect(uf_partition_claim(c.h.d, 0) == UF_OK)
        #expect(uf_clock_advance(c.h.d, 0) == UF_OK)
        #expect(c.h.feature("Job")!.contains("Stalled"))
        #expect(c.h.feature("Job")!.contains(#""e":{"state":"Running""#))
    }

    @Test(arguments: [
        (#"{"timer": "armed", "serial": 1}"#, "lines[0]: a timer line needs 'serial', 'ms', 'due_at' and 'action'"),
        (#"{"timer": "rang"}"#, "lines[0]: unknown timer event \"rang\""),
        (#"{"timer": "fired"}"#, "lines[0]: a fired, cancelled or dropped timer line needs 'serial' or 'id'"),
        (#"{"timer": "armed", "serial": 1, "ms": 5, "due_at": 5, "action": {"kind": "transition", "feature": "Nope", "into": "A"}, "id": null}"#,
         "lines[0]: action: unknown feature 'Nope'"),
    ])
    func aRecordWithABadTimerLineIsRefusedWhole(line: String, message: String) {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        let b = Node("b", log: log, Self.job)
        #expect(b.catchUp() == UF_OK)
        var record = try! JSONParser.parse(log.records[0]![0]).objectValue!
        record["claim"] = nil
        record["version"] = 2
        record["prev"] = .string(FNV1a.hex(FNV1a.hash32(log.records[0]![0].utf8)))
        record["lines"] = .array([try! JSONParser.parse(line)])
        #expect(uf_record_apply(b.h.d, JSONValue.object(record).jsonText) == UF_ESCHEMA)
        #expect(b.h.lastError == message)
        #expect(b.h.timers == "[]")
    }

    @Test func aBatchsBindingsCascadeIntoItsRecord() {
        let log = TestLog()
        let a = Node("a", log: log, Records.download)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        let seen = a.h.record()
        #expect(uf_submit_batch(a.h.d, #"""
            [{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"},
             {"kind": "transition", "feature": "Download", "key": "a", "into": "Done"}]
            """#) == UF_OK)
        // One record: the two actions and the deinitialization the binding queued.
        #expect(log.records[0]!.count == 2)
        #expect(lines(log.records[0]![1]).map { $0["kind"]! } == [.string("initialization"), .string("transition"), .string("deinitialization")])
        #expect(seen.mutations.count == 3)
        #expect(a.h.state == "{}")
        // A batch that fails writes nothing and leaves nothing.
        #expect(uf_submit_batch(a.h.d, #"""
            [{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"},
             {"kind": "transition", "feature": "Download", "key": "a", "into": "Done"},
             {"kind": "transition", "feature": "Download", "key": "a", "from": "Running", "into": "Done"}]
            """#) == UF_REJECTED)
        #expect(a.h.lastError.hasPrefix("batch[2]: "))
        #expect(log.records[0]!.count == 2)
        #expect(seen.mutations.count == 3)
        #expect(a.h.state == "{}")
    }
}
