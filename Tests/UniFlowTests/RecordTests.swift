import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A log that keeps each partition's records in order and accepts a record
/// only when its version follows the partition's last, as JetStream's
/// expected-last-sequence check does.
final class TestLog {
    var records: [Int: [String]] = [:]
    /// Set to refuse the next record with this status.
    var refuseNext: Int32?

    func offer(_ text: String, partition p: Int, version: UInt64) -> Int32 {
        if let status = refuseNext {
            refuseNext = nil
            return status
        }
        guard version == UInt64(records[p, default: []].count + 1) else { return UF_ECONFLICT }
        records[p, default: []].append(text)
        return UF_OK
    }

    /// Every record, partition by partition, in version order.
    var all: [String] { records.keys.sorted().flatMap { records[$0]! } }
}

/// A node: a partitioned dispatcher whose sink writes to a shared test log.
final class Node {
    let h: Harness
    let log: TestLog
    /// How many records of each partition this node has applied from the log.
    var applied: [Int: Int] = [:]

    init(_ name: String, log: TestLog, partitions: Int = 4, _ definitions: String...) {
        h = Harness(options: #"{"partitions": \#(partitions), "node": "\#(name)", "clock": "manual"}"#)
        for definition in definitions { precondition(uf_register(h.d, definition) == UF_OK, h.lastError) }
        self.log = log
        let box = Box<(OpaquePointer) -> Int32>({ [unowned log] r in
            var p: UInt32 = 0
            var v: UInt64 = 0
            precondition(uf_record_partition(r, &p) == UF_OK && uf_record_version(r, &v) == UF_OK)
            return log.offer(String(cString: uf_record_json(r)), partition: Int(p), version: v)
        }, freed: FreeCounter())
        precondition(uf_record_sink(h.d, { r, payload in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(r!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox) == UF_OK)
    }

    /// Applies what the log has that this node has not applied yet (its own
    /// records included: duplicates change nothing).
    @discardableResult
    func catchUp() -> Int32 {
        for (p, records) in log.records {
            for i in applied[p, default: 0]..<records.count {
                let status = uf_record_apply(h.d, records[i])
                if status != UF_OK { return status }
                applied[p] = i + 1
            }
        }
        return UF_OK
    }

    var partitions: String {
        var out: UnsafeMutablePointer<CChar>?
        precondition(uf_partitions_get(h.d, &out) == UF_OK)
        defer { uf_free(out) }
        return String(cString: out!)
    }
}

@Suite struct Records {
    static let download = #"""
    {"feature": "Download", "instances": "keyed",
     "states": {"Queued": {}, "Running": {"fields": {"progress": "number"}}, "Done": {}},
     "bindings": [{"when": "TransitionInto<Download.Done>",
                   "then": {"submit": [{"kind": "deinitialize", "feature": "Download"}]}}]}
    """#
    static let counter = #"{"feature": "Counter", "states": {"Idle": {}, "Busy": {}}}"#

    func json(_ text: String) -> JSONObject { try! JSONParser.parse(text).objectValue! }

    @Test func anOuterCallIsOneRecordWithItsCascade() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Download", "key": "a", "into": "Done", "id": "finish"}"#) == UF_OK)
        let records = log.records[0]!
        #expect(records.count == 3)
        let claim = json(records[0])
        #expect(claim["claim"] == .string("a"))
        #expect(claim["version"] == .int(1))
        #expect(claim["prev"] == .null)
        #expect(claim["partitions"] == .int(4))
        #expect(claim["partition"] == .int(0))
        #expect(claim["incarnation"]?.stringValue?.utf8.count == 16)
        let third = json(records[2])
        #expect(third["version"] == .int(3))
        #expect(third["prev"] == .string(FNV1a.hex(FNV1a.hash32(records[1].utf8))))
        // The transition and the deinitialization its binding queued.
        guard case .array(let lines)? = third["lines"] else { Issue.record("no lines"); return }
        #expect(lines.count == 2)
        #expect(lines[0].objectValue?["kind"] == .string("transition"))
        #expect(lines[0].objectValue?["action"]?.objectValue?["id"] == .string("finish"))
        #expect(lines[1].objectValue?["kind"] == .string("deinitialization"))
        // The queued action's own texts (its key, taken from the mutation) are
        // still there when the record is written, after the action was processed.
        #expect(lines[1].objectValue?["action"]?.objectValue?["key"] == .string("a"))
        #expect(a.h.state == "{}")
    }

    @Test func aFollowerEndsWithTheWritersModelAndSeesTheSameMutations() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        let b = Node("b", log: log, Self.download, Self.counter)
        let seenByA = a.h.record()
        var seenByB: [String] = []
        var foreign: [Int32] = []
        b.h.subscribe(nil) { m in
            seenByB.append(String(cString: uf_mutation_json(m)))
            foreign.append(uf_mutation_foreign(m))
            return 0
        }
        for p: UInt32 in [0, 1, 4] { #expect(uf_partition_claim(a.h.d, p) == UF_OK) }
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Download", "key": "b", "into": "Queued"}"#) == UF_OK)
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Download", "key": "b", "into": "Running", "payload": {"progress": 5}}"#) == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
        // The same JSON but for "seq"; across partitions the order may differ
        // (nothing is promised there), within one it is the writer's.
        func withoutSeq(_ list: [String]) -> [String] {
            list.map { text in
                var object = try! JSONParser.parse(text).objectValue!
                object["seq"] = nil
                return JSONValue.object(object).jsonText
            }
        }
        #expect(withoutSeq(seenByB).sorted() == withoutSeq(seenByA.mutations).sorted())
        #expect(withoutSeq(seenByB).filter { $0.contains("Download") } == withoutSeq(seenByA.mutations).filter { $0.contains("Download") })
        #expect(foreign == [1, 1, 1])
        #expect(b.partitions.contains(#"{"p":1,"version":3,"owner":"a","mine":false}"#))
        #expect(b.partitions.contains(#"{"p":4,"version":2,"owner":"a","mine":false}"#))
        // A follower does not own what it applied.
        #expect(b.h.submit(#"{"kind": "transition", "feature": "Counter", "into": "Busy"}"#) == UF_ENOTOWNER)
        #expect(b.h.lastError == "Counter lives in the global partition (4), owned by node 'a'")
    }

    @Test func aRefusedRecordChangesNothingAnywhere() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 4) == UF_OK)
        a.h.captureReports()
        let seen = a.h.record()
        log.refuseNext = UF_EUNAVAILABLE
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_EUNAVAILABLE)
        #expect(a.h.lastError == "the log did not answer for the record of the global partition (4) at version 2: its outcome is unknown until the log is read")
        #expect(a.h.state == "{}")
        #expect(seen.mutations.isEmpty)
        #expect(a.h.reports.count == 1)
        #expect(a.h.reports[0].contains(#""status":"UF_EUNAVAILABLE""#))
        #expect(a.partitions.contains(#"{"p":4,"version":1,"owner":"a","mine":true}"#))
        log.refuseNext = UF_ECONFLICT
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_ECONFLICT)
        #expect(a.h.lastError == "the log refused the record of the global partition (4) at version 2: another record got there first")
        log.refuseNext = 7
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_ECALLBACK)
        #expect(a.h.lastError == "the record sink failed (returned 7) for the record of the global partition (4) at version 2")
        #expect(a.h.state == "{}")
        // And then it goes through.
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        #expect(seen.mutations.count == 1)
        #expect(log.records[4]!.count == 2)
    }

    @Test func subscribersHearOfACallOnlyOnceItsRecordIsAccepted() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        var heard = 0
        var recordsWhenHeard: [Int] = []
        a.h.subscribe(nil) { _ in
            heard += 1
            recordsWhenHeard.append(log.records[0]!.count)
            return 0
        }
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Download", "key": "a", "into": "Done"}"#) == UF_OK)
        #expect(heard == 3)
        #expect(recordsWhenHeard == [2, 3, 3])
    }

    @Test func aStaleOwnerGetsAConflictAndThenLearnsItIsNoOwner() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        let b = Node("b", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 4) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        // b takes over after reading the log; a has not seen b's claim yet.
        #expect(b.catchUp() == UF_OK)
        #expect(uf_partition_claim(b.h.d, 4) == UF_OK)
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Counter", "into": "Busy"}"#) == UF_ECONFLICT)
        #expect(a.h.state == #"{"Counter":{"state":"Idle","payload":{}}}"#)
        #expect(a.catchUp() == UF_OK)
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Counter", "into": "Busy"}"#) == UF_ENOTOWNER)
        #expect(a.h.lastError == "Counter lives in the global partition (4), owned by node 'b'")
        #expect(b.h.submit(#"{"kind": "transition", "feature": "Counter", "into": "Busy"}"#) == UF_OK)
        #expect(a.catchUp() == UF_OK)
        #expect(a.h.state == #"{"Counter":{"state":"Busy","payload":{}}}"#)
    }

    @Test func aNodeRestartedUnderTheSameNameIsAnotherOwner() {
        let log = TestLog()
        let first = Node("a", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(first.h.d, 4) == UF_OK)
        let second = Node("a", log: log, Self.download, Self.counter)
        #expect(second.catchUp() == UF_OK)
        #expect(second.partitions.contains(#"{"p":4,"version":1,"owner":"a","mine":false}"#))
        #expect(second.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_ENOTOWNER)
    }

    @Test func applyingTakesDuplicatesAndRefusesGapsAndForeignHistories() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        let b = Node("b", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 4) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Counter", "into": "Busy"}"#) == UF_OK)
        let records = log.records[4]!
        #expect(uf_record_apply(b.h.d, records[1]) == UF_EGAP)
        #expect(b.h.lastError == "the record of the global partition (4) at version 2 comes before the ones it follows: this node has applied up to version 0")
        #expect(b.h.state == "{}")
        #expect(uf_record_apply(b.h.d, records[0]) == UF_OK)
        #expect(uf_record_apply(b.h.d, records[0]) == UF_OK)
        #expect(uf_record_apply(b.h.d, records[1]) == UF_OK)
        #expect(uf_record_apply(b.h.d, records[1]) == UF_OK)
        #expect(b.h.state == #"{"Counter":{"state":"Idle","payload":{}}}"#)
        // A record 3 that follows another history than this node's.
        var diverged = json(records[2])
        diverged["prev"] = .string("00000000")
        #expect(uf_record_apply(b.h.d, JSONValue.object(diverged).jsonText) == UF_ECONFLICT)
        #expect(b.h.lastError.hasSuffix("the log's history diverged"))
        #expect(b.h.state == #"{"Counter":{"state":"Idle","payload":{}}}"#)
        #expect(uf_record_apply(b.h.d, records[2]) == UF_OK)
        #expect(b.h.state == a.h.state)
    }

    @Test(arguments: [
        ("[1]", UF_ESCHEMA, "a record must be an object, got array"),
        ("{", UF_EJSON, "line 1, column 1: string or '}' expected near end of file"),
        (#"{"version": 1}"#, UF_ESCHEMA, #"not a record: "uniflow_record": 1 is missing"#),
        (#"{"uniflow_record": 1, "fingerprint": "0000000000000000"}"#, UF_ESCHEMA, "the record was written for other definitions"),
    ])
    func malformedRecordsAreRefused(text: String, status: Int32, message: String) {
        let b = Node("b", log: TestLog(), Self.download, Self.counter)
        #expect(uf_record_apply(b.h.d, text) == status)
        #expect(b.h.lastError.hasPrefix(message))
        #expect(b.h.state == "{}")
    }

    @Test func aRecordOfAnotherShapeOfModelIsRefused() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 4) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        let b = Node("b", log: TestLog(), partitions: 8, Self.download, Self.counter)
        #expect(uf_record_apply(b.h.d, log.records[4]![0]) == UF_ESCHEMA)
        #expect(b.h.lastError == "the record was written with 4 partitions, this dispatcher has 8")
        let c = Node("c", log: TestLog(), Self.counter)
        #expect(uf_record_apply(c.h.d, log.records[4]![0]) == UF_ESCHEMA)
        #expect(c.h.lastError.hasPrefix("the record was written for other definitions"))
        // A line that does not fit this node's copy changes nothing at all.
        var record = json(log.records[4]![1])
        record["version"] = .int(1)
        record["prev"] = .null
        record["lines"] = .array([record["lines"]!.arrayValue![0], record["lines"]!.arrayValue![0]])
        let d = Node("d", log: TestLog(), Self.download, Self.counter)
        #expect(uf_record_apply(d.h.d, JSONValue.object(record).jsonText) == UF_ESCHEMA)
        #expect(d.h.lastError == "lines[1]: Counter is already initialized on this node")
        #expect(d.h.state == "{}")
        #expect(d.partitions.contains(#"{"p":4,"version":0,"owner":null,"mine":false}"#))
    }

    @Test func applyingInsideACallbackIsMisuse() {
        let log = TestLog()
        let a = Node("a", log: log, Self.download, Self.counter)
        #expect(uf_partition_claim(a.h.d, 4) == UF_OK)
        var status: Int32 = 0
        var claim: Int32 = 0
        a.h.subscribe(nil) { m in
            status = uf_record_apply(uf_mutation_dispatcher(m), log.records[4]![0])
            claim = uf_partition_claim(uf_mutation_dispatcher(m), 0)
            return 0
        }
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        #expect(status == UF_EMISUSE)
        #expect(claim == UF_EMISUSE)
    }

    static let stalling = #"""
    {"feature": "Job", "instances": "keyed",
     "states": {"Running": {"after": [{"ms": 30000, "submit": [{"kind": "transition", "feature": "Job", "into": "Stalled"}]}]},
                "Stalled": {}}}
    """#


    @Test func onlyTheOwnerFiresAndANewOwnerFiresAnOverdueTimerOnce() {
        let log = TestLog()
        let a = Node("a", log: log, Self.stalling)
        let b = Node("b", log: log, Self.stalling)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Running"}"#) == UF_OK)
        #expect(b.catchUp() == UF_OK)
        // Every node keeps the timer, with its partition.
        #expect(b.h.timers == #"[{"id":"Job[a].Running.after[0]","due_in_ms":30000,"ms":30000,"p":0}]"#)
        // Due on b, which does not own partition 0: it waits.
        #expect(uf_clock_advance(b.h.d, 31000) == UF_OK)
        #expect(b.h.state == #"{"Job":{"a":{"state":"Running","payload":{}}}}"#)
        #expect(log.records[0]!.count == 2)
        // a is gone; b takes partition 0 over, and the overdue timer fires once.
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(uf_clock_advance(b.h.d, 0) == UF_OK)
        #expect(b.h.state == #"{"Job":{"a":{"state":"Stalled","payload":{}}}}"#)
        #expect(uf_clock_advance(b.h.d, 60000) == UF_OK)
        #expect(log.records[0]!.count == 4)
        let fired = try! JSONParser.parse(log.records[0]![3]).objectValue!
        #expect(fired["node"] == .string("b"))
        #expect(fired["lines"]?.arrayValue?.first?.objectValue?["state"] == .string("Stalled"))
        // The old owner's own firing is refused by the log: nothing doubles.
        #expect(uf_clock_advance(a.h.d, 31000) == UF_OK)
        #expect(log.records[0]!.count == 4)
        #expect(a.catchUp() == UF_OK)
        #expect(a.h.state == b.h.state)
    }

    static let job = #"""
    {"feature": "Job", "instances": "keyed", "states": {"Queued": {}, "Done": {}}}
    """#
    static let jobs = #"""
    {"feature": "Jobs", "states": {"Counting": {"fields": {"done": {"type": "integer", "default": 0}}}},
     "bindings": [{"scenario": "count every finished job once",
                   "when": "TransitionInto<Job.Done>",
                   "then": {"submit": [{"kind": "actualize", "feature": "Jobs", "in": "Counting",
                                        "payload": {"done": {"$": {"+": [{"var": "model.Jobs.payload.done"}, 1]}}}}]}}]}
    """#

    func done(_ node: Node) -> String { node.h.feature("Jobs") ?? "absent" }

    @Test func anAggregateCountsEachInstanceOfEveryPartitionOnceAcrossAFailoverOfItsHome() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job, Self.jobs)
        let b = Node("b", log: log, Self.job, Self.jobs)
        for p: UInt32 in [0, 1, 4] { #expect(uf_partition_claim(a.h.d, p) == UF_OK) }
        #expect(b.catchUp() == UF_OK)
        for p: UInt32 in [2, 3] { #expect(uf_partition_claim(b.h.d, p) == UF_OK) }
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Jobs", "into": "Counting"}"#) == UF_OK)
        // Keys of every partition: "a" 0, "b" 1, "c" 2, "d" 3, "e" 0, "x" 3, "y" 0, "z" 1.
        func finish(_ key: String, at only: Node? = nil) {
            let owner = only ?? ([0, 1].contains(Int(FNV1a.hash32(key.utf8) % 4)) ? a : b)
            #expect(owner.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "\#(key)", "into": "Queued"}"#) == UF_OK)
            #expect(owner.h.submit(#"{"kind": "transition", "feature": "Job", "key": "\#(key)", "into": "Done"}"#) == UF_OK)
        }
        for key in ["a", "b", "c", "d"] { finish(key) }
        // a counts its own at once, and b's once it has their records.
        #expect(done(a) == #"{"state":"Counting","payload":{"done":2}}"#)
        #expect(a.catchUp() == UF_OK)
        #expect(done(a) == #"{"state":"Counting","payload":{"done":4}}"#)
        // The binding ran at a, the global partition's owner, not at b.
        #expect(b.catchUp() == UF_OK)
        #expect(done(b) == #"{"state":"Counting","payload":{"done":4}}"#)
        // More work; b has it all, a dies before reading b's last records.
        for key in ["e", "x", "y"] { finish(key) }
        #expect(b.catchUp() == UF_OK)
        // b takes the global partition over and resumes where a's records left off.
        #expect(uf_partition_claim(b.h.d, 4) == UF_OK)
        #expect(done(b) == #"{"state":"Counting","payload":{"done":7}}"#)
        for p: UInt32 in [0, 1] { #expect(uf_partition_claim(b.h.d, p) == UF_OK) }
        finish("z", at: b)
        #expect(done(b) == #"{"state":"Counting","payload":{"done":8}}"#)
        // Every global record says how far the runs came.
        let last = try! JSONParser.parse(log.records[4]!.last!).objectValue!
        #expect(last["after"]?.objectValue?["1"] == .int(Int64(log.records[1]!.count)))
        // A fresh node reading the whole log ends with the same count, running nothing itself.
        let c = Node("c", log: log, Self.job, Self.jobs)
        #expect(c.catchUp() == UF_OK)
        #expect(done(c) == done(b))
        // Instances of different partitions may be made in another order on each node.
        let jobsOfB = try! JSONParser.parse(b.h.feature("Job")!).objectValue!
        let jobsOfC = try! JSONParser.parse(c.h.feature("Job")!).objectValue!
        #expect(Set(jobsOfB.map(\.key)) == Set(jobsOfC.map(\.key)))
        for (key, value) in jobsOfB { #expect(jobsOfC[key] == value) }
    }

    /// A seeded generator, so that a failing run can be repeated.
    struct SplitMix: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    @Test(arguments: Array(1...4) as [UInt64])
    func threeNodesWithRandomActionsClaimsRefusalsAndCrashesAgreeWithTheLog(seed: UInt64) {
        var random = SplitMix(state: seed)
        let log = TestLog()
        let names = ["a", "b", "c"]
        var nodes = names.map { Node($0, log: log, Self.job, Self.jobs) }
        let keys = (0..<12).map { "k\($0)" }
        var steps = 0
        while steps < 3000 {
            steps += 1
            let i = Int.random(in: 0..<3, using: &random)
            let n = nodes[i]
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<10:
                _ = n.catchUp()
            case 10..<18:
                _ = n.catchUp()
                _ = uf_partition_claim(n.h.d, UInt32.random(in: 0...4, using: &random))
            case 18..<20:
                // A crash: the node is rebuilt from the log under the same name.
                nodes[i] = Node(names[i], log: log, Self.job, Self.jobs)
                _ = nodes[i].catchUp()
            case 20..<24:
                log.refuseNext = Bool.random(using: &random) ? UF_ECONFLICT : UF_EUNAVAILABLE
                _ = n.h.submit(#"{"kind": "initialize", "feature": "Jobs", "into": "Counting"}"#)
                log.refuseNext = nil
            default:
                let key = keys.randomElement(using: &random)!
                let action = [
                    #"{"kind": "initialize", "feature": "Job", "key": "\#(key)", "into": "Queued"}"#,
                    #"{"kind": "transition", "feature": "Job", "key": "\#(key)", "from": "Queued", "into": "Done"}"#,
                    #"{"kind": "deinitialize", "feature": "Job", "key": "\#(key)", "from": "Done"}"#,
                    #"{"kind": "initialize", "feature": "Jobs", "into": "Counting"}"#,
                ].randomElement(using: &random)!
                let status = n.h.submit(action)
                #expect([UF_OK, UF_REJECTED, UF_ENOTOWNER, UF_ECONFLICT, UF_EUNAVAILABLE].contains(status), "\(action): \(n.h.lastError)")
            }
        }
        // The end: one node takes the global partition (and runs what its
        // bindings have not yet run over), then everybody reads the whole log.
        let last = nodes[0]
        #expect(last.catchUp() == UF_OK)
        var claimed = uf_partition_claim(last.h.d, 4)
        if claimed == UF_ECONFLICT {
            #expect(last.catchUp() == UF_OK)
            claimed = uf_partition_claim(last.h.d, 4)
        }
        #expect(claimed == UF_OK)
        for n in nodes { #expect(n.catchUp() == UF_OK) }
        let fresh = Node("d", log: log, Self.job, Self.jobs)
        #expect(fresh.catchUp() == UF_OK)
        for n in nodes {
            #expect(n.h.feature("Jobs") == fresh.h.feature("Jobs"))
            let mine = n.h.feature("Job").map { try! JSONParser.parse($0).objectValue! } ?? JSONObject()
            let theirs = fresh.h.feature("Job").map { try! JSONParser.parse($0).objectValue! } ?? JSONObject()
            #expect(Set(mine.map(\.key)) == Set(theirs.map(\.key)))
            for (key, value) in mine { #expect(theirs[key] == value) }
        }
        // No aggregate is off by one: every transition into Done that the log
        // holds after the counter began is counted once.
        var doneAfterStart = 0
        var counting = false
        var afterOfGlobal: [Int: UInt64] = [:]
        for text in log.records[4] ?? [] {
            let record = try! JSONParser.parse(text).objectValue!
            if let map = HomeBindings.parse(record["after"]) { afterOfGlobal = Dictionary(map, uniquingKeysWith: { $1 }) }
            if record["lines"]?.arrayValue?.contains(where: { $0.objectValue?["kind"] == .string("initialization") }) == true,
               !counting {
                counting = true
                // Runs count what comes after what the global records said when the counter began.
                for (q, records) in log.records where q != 4 {
                    // A partition the record's `after` does not name is at 0.
                    for (v, text) in records.enumerated() where UInt64(v + 1) > (afterOfGlobal[q] ?? 0) {
                        let lines = try! JSONParser.parse(text).objectValue!["lines"]?.arrayValue ?? []
                        doneAfterStart += lines.filter { $0.objectValue?["state"] == .string("Done") }.count
                    }
                }
            }
        }
        if counting, let jobs = fresh.h.feature("Jobs") {
            let done = try! JSONParser.parse(jobs).objectValue!["payload"]!.objectValue!["done"]!
            #expect(done == .int(Int64(doneAfterStart)), "seed \(seed)")
        }
    }

    func snapshot(_ node: Node, _ p: UInt32) -> String {
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partition_snapshot(node.h.d, p, &out) == UF_OK)
        defer { uf_free(out) }
        return String(cString: out!)
    }

    @Test func aSnapshotStartsAFreshNode() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job, Self.jobs)
        for p: UInt32 in [0, 1, 2, 3, 4] { #expect(uf_partition_claim(a.h.d, p) == UF_OK) }
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Jobs", "into": "Counting"}"#) == UF_OK)
        for key in ["a", "b", "c", "d", "e"] {
            #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "\#(key)", "into": "Queued"}"#) == UF_OK)
        }
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Job", "key": "a", "into": "Done"}"#) == UF_OK)
        let snapshots = (0...4).map { snapshot(a, UInt32($0)) }
        let zero = try! JSONParser.parse(snapshots[0]).objectValue!
        #expect(zero["version"] == .int(Int64(log.records[0]!.count)))
        #expect(zero["snapshot"]?.objectValue?["model"] == (try! JSONParser.parse(#"{"Job": {"a": {"state": "Done", "payload": {}}, "e": {"state": "Queued", "payload": {}}}}"#)))
        #expect(zero["owner"]?.objectValue?["node"] == .string("a"))
        // More records after the snapshots.
        #expect(a.h.submit(#"{"kind": "transition", "feature": "Job", "key": "e", "into": "Done"}"#) == UF_OK)
        let c = Node("c", log: log, Self.job, Self.jobs)
        for text in snapshots { #expect(uf_record_apply(c.h.d, text) == UF_OK) }
        // The records the snapshots cover are duplicates now; the later ones apply.
        #expect(c.catchUp() == UF_OK)
        #expect(c.h.feature("Jobs") == a.h.feature("Jobs"))
        #expect(c.h.feature("Job").map { try! JSONParser.parse($0) } == a.h.feature("Job").map { try! JSONParser.parse($0) })
        #expect(c.partitions == a.partitions.split(separator: "true", omittingEmptySubsequences: false).joined(separator: "false"))
        // A snapshot at or below the partition's version changes nothing.
        #expect(uf_record_apply(c.h.d, snapshots[0]) == UF_OK)
        #expect(c.h.feature("Job").map { try! JSONParser.parse($0) } == a.h.feature("Job").map { try! JSONParser.parse($0) })
    }

    @Test func withoutAnAggregateAfterStillMovesOnSoThatALogCanDropRecords() {
        let log = TestLog()
        let a = Node("a", log: log, Self.job)
        for p: UInt32 in [0, 1, 2, 3, 4] { #expect(uf_partition_claim(a.h.d, p) == UF_OK) }
        // Partition 0 holds "e": 250 records after its claim.
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "e", "into": "Queued"}"#) == UF_OK)
        for i in 0..<249 {
            let into = i % 2 == 0 ? "Done" : "Queued"
            #expect(a.h.submit(#"{"kind": "transition", "feature": "Job", "key": "e", "into": "\#(into)"}"#) == UF_OK)
        }
        #expect(log.records[0]!.count == 251)
        // No binding lives in the global partition, yet its owner says how far it
        // came every hundred records: the claim, then two records with no lines.
        let global = log.records[4]!.map { json($0) }
        #expect(global.count == 3)
        #expect(global[1]["lines"] == .array([]))
        #expect(global[2]["after"]?.objectValue?["0"] == .int(201))
        // A follower learns it from the log.
        let b = Node("b", log: log, Self.job)
        #expect(b.catchUp() == UF_OK)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partition_snapshot(b.h.d, 4, &out) == UF_OK)
        #expect(json(String(cString: out!))["after"]?.objectValue?["0"] == .int(201))
        uf_free(out)
    }
}
