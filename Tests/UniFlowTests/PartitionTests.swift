import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Partitions and owners: where instances live, and that only the owner of a
/// partition changes it.
@Suite struct Partitions {
    static let download = #"""
    {"feature": "Download", "instances": "keyed",
     "states": {"Queued": {}, "Running": {}, "Done": {}},
     "bindings": [{"scenario": "a finished download starts the next",
                   "when": "TransitionInto<Download.Done>",
                   "then": {"submit": [{"kind": "initialize", "feature": "Download", "key": "b", "into": "Queued"}]}}]}
    """#
    static let counter = #"{"feature": "Counter", "states": {"Idle": {}, "Busy": {}}}"#
    /// Four partitions: "a" lives in 0, "b" in 1, "c" in 2, "d" in 3.
    static let options = #"{"partitions": 4, "node": "a", "clock": "manual"}"#

    static func partitioned() -> Harness {
        let h = Harness(options: options, download, counter)
        h.captureReports()
        return h
    }

    func partitions(_ h: Harness) -> String {
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partitions_get(h.d, &out) == UF_OK)
        defer { uf_free(out) }
        return String(cString: out!)
    }

    @Test func fnv1a32IsTheOneTheRecordFormatNames() {
        #expect(FNV1a.hash32("a".utf8) == 0xe40c_292c)
        #expect(FNV1a.hash32("".utf8) == 0x811c_9dc5)
        #expect(FNV1a.hex(0x0c29) == "00000c29")
    }

    @Test func instancesLiveInTheirKeysPartitionAndSingleFeaturesInTheGlobalOne() {
        let h = Self.partitioned()
        var p: UInt32 = 99
        for (key, expected) in [("a", 0), ("b", 1), ("c", 2), ("d", 3), ("k1", 1)] as [(String, UInt32)] {
            #expect(uf_partition_of(h.d, "Download", key, &p) == UF_OK)
            #expect(p == expected)
        }
        #expect(uf_partition_of(h.d, "Counter", nil, &p) == UF_OK)
        #expect(p == 4)
    }

    @Test func partitionOfRefusesWhatAnActionWouldRefuse() {
        let h = Self.partitioned()
        var p: UInt32 = 0
        #expect(uf_partition_of(h.d, "Nope", nil, &p) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown feature 'Nope'")
        #expect(uf_partition_of(h.d, "Download", nil, &p) == UF_EINVAL)
        #expect(h.lastError == "Download is keyed: a key is required")
        #expect(uf_partition_of(h.d, "Counter", "a", &p) == UF_EINVAL)
        #expect(h.lastError == "Counter is a single feature: it takes no key")
        #expect(uf_partition_of(h.d, "Download", "a b", &p) == UF_EINVAL)
        #expect(h.lastError.hasPrefix("key: "))
        #expect(uf_partition_of(h.d, "Download", "a", nil) == UF_EINVAL)
        #expect(h.lastError == "uf_partition_of: p is NULL")
    }

    @Test func aDispatcherWithoutPartitionsRefusesTheirFunctions() {
        let h = Harness(Self.counter)
        var p: UInt32 = 0
        #expect(uf_partition_of(h.d, "Counter", nil, &p) == UF_EMISUSE)
        #expect(h.lastError == "uf_partition_of: the dispatcher is not partitioned (options 'partitions' and 'node')")
        #expect(uf_partition_claim(h.d, 0) == UF_EMISUSE)
        #expect(uf_partition_release(h.d, 0) == UF_EMISUSE)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partitions_get(h.d, &out) == UF_EMISUSE)
        #expect(out == nil)
    }

    @Test(arguments: [
        (#"{"partitions": 4}"#, "option 'partitions' needs option 'node' (a partitioned dispatcher has both)"),
        (#"{"node": "a"}"#, "option 'node' needs option 'partitions' (a partitioned dispatcher has both)"),
        (#"{"partitions": 0, "node": "a"}"#, "option 'partitions' must be an integer from 1 to 1024, got 0"),
        (#"{"partitions": 1025, "node": "a"}"#, "option 'partitions' must be an integer from 1 to 1024, got 1025"),
        (#"{"partitions": "4", "node": "a"}"#, #"option 'partitions' must be an integer from 1 to 1024, got "4""#),
        (#"{"partitions": 4, "node": "no-dash"}"#, #"option 'node' must be a name ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes), got "no-dash""#),
        (#"{"partitions": 4, "node": 7}"#, "option 'node' must be a name ([A-Za-z_][A-Za-z0-9_]*, at most 64 bytes), got 7"),
    ])
    func badScaleOutOptionsAreInvalidArguments(options: String, message: String) {
        var d: OpaquePointer?
        #expect(uf_dispatcher_new(&d, options) == UF_EINVAL)
        #expect(d == nil)
        #expect(String(cString: uf_last_error()) == message)
    }

    @Test func aNodeNameOfSixtyFourBytesIsTheLongest() {
        var d: OpaquePointer?
        let longest = String(repeating: "n", count: 64)
        #expect(uf_dispatcher_new(&d, #"{"partitions": 1, "node": "\#(longest)"}"#) == UF_OK)
        uf_dispatcher_free(d)
        #expect(uf_dispatcher_new(&d, #"{"partitions": 1, "node": "\#(longest)n"}"#) == UF_EINVAL)
    }

    @Test func aNewNodeOwnsNothingAndChangesNothing() {
        let h = Self.partitioned()
        let recorder = h.record()
        #expect(h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_ENOTOWNER)
        #expect(h.lastError == "Counter lives in the global partition (4), owned by no node")
        #expect(h.submit(#"{"kind": "initialize", "feature": "Download", "key": "c", "into": "Queued"}"#) == UF_ENOTOWNER)
        #expect(h.lastError == "Download[c] lives in partition 2, owned by no node")
        #expect(h.state == "{}")
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports.count == 2)
        #expect(h.reports[0].hasPrefix(#"{"event":"rejected","action":{"kind":"initialize","feature":"Counter""#))
        #expect(h.reports[0].contains(#""status":"UF_ENOTOWNER""#))
        #expect(partitions(h) == #"[{"p":0,"version":0,"owner":null,"mine":false},{"p":1,"version":0,"owner":null,"mine":false},{"p":2,"version":0,"owner":null,"mine":false},{"p":3,"version":0,"owner":null,"mine":false},{"p":4,"version":0,"owner":null,"mine":false}]"#)
    }

    @Test func theOwnerChangesItsPartitionsAndOnlyThose() {
        let h = Self.partitioned()
        #expect(uf_partition_claim(h.d, 4) == UF_OK)
        #expect(uf_partition_claim(h.d, 2) == UF_OK)
        #expect(h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        #expect(h.submit(#"{"kind": "initialize", "feature": "Download", "key": "c", "into": "Queued"}"#) == UF_OK)
        #expect(h.submit(#"{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"}"#) == UF_ENOTOWNER)
        #expect(h.state == #"{"Download":{"c":{"state":"Queued","payload":{}}},"Counter":{"state":"Idle","payload":{}}}"#)
        #expect(partitions(h).contains(#"{"p":2,"version":2,"owner":"a","mine":true}"#))
        #expect(uf_partition_release(h.d, 2) == UF_OK)
        #expect(h.submit(#"{"kind": "transition", "feature": "Download", "key": "c", "into": "Running"}"#) == UF_ENOTOWNER)
        #expect(h.lastError == "Download[c] lives in partition 2, owned by no node")
        #expect(partitions(h).contains(#"{"p":2,"version":3,"owner":null,"mine":false}"#))
    }

    @Test func theStructFormGoesThroughTheSameStep() {
        let h = Self.partitioned()
        #expect(uf_partition_claim(h.d, 4) == UF_OK)
        #expect(h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
        #expect(uf_partition_release(h.d, 4) == UF_OK)
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_TRANSITION
        let status = "Counter".withCString { feature in
            "Busy".withCString { into in
                a.feature = feature
                a.into = into
                return uf_dispatch(h.d, &a)
            }
        }
        #expect(status == UF_ENOTOWNER)
        #expect(h.state == #"{"Counter":{"state":"Idle","payload":{}}}"#)
    }

    @Test func aCascadeStaysInThePartitionItsCallWrites() {
        let h = Self.partitioned()
        for p: UInt32 in [0, 1] { #expect(uf_partition_claim(h.d, p) == UF_OK) }
        #expect(h.submit(#"{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"}"#) == UF_OK)
        h.reports.removeAll()
        // The binding's initialize of "b" lives in partition 1, which this node owns,
        // but the call writes partition 0: refused for that action alone.
        #expect(h.submit(#"{"kind": "transition", "feature": "Download", "key": "a", "into": "Done"}"#) == UF_OK)
        #expect(h.state == #"{"Download":{"a":{"state":"Done","payload":{}}}}"#)
        let rejected = h.reports.filter { $0.hasPrefix(#"{"event":"rejected""#) }
        #expect(rejected.count == 1)
        #expect(rejected.first?.contains("Download[b] lives in partition 1, but this call writes partition 0: the actions of one call stay in one partition") == true)
        // The next outer call may write partition 1.
        #expect(h.submit(#"{"kind": "initialize", "feature": "Download", "key": "b", "into": "Queued"}"#) == UF_OK)
    }

    @Test func aBatchTakesActionsOfOnePartition() {
        let h = Self.partitioned()
        for p: UInt32 in [0, 1] { #expect(uf_partition_claim(h.d, p) == UF_OK) }
        let status = uf_submit_batch(h.d, #"""
            [{"kind": "initialize", "feature": "Download", "key": "a", "into": "Queued"},
             {"kind": "initialize", "feature": "Download", "key": "e", "into": "Queued"},
             {"kind": "initialize", "feature": "Download", "key": "b", "into": "Queued"}]
            """#)
        #expect(status == UF_ENOTOWNER)
        #expect(h.lastError == "batch[2]: Download[b] lives in partition 1, but this call writes partition 0: the actions of one call stay in one partition")
        #expect(h.state == "{}")
    }

    @Test func claimsAndReleasesCheckTheirPartition() {
        let h = Self.partitioned()
        #expect(uf_partition_claim(h.d, 5) == UF_EINVAL)
        #expect(h.lastError == "uf_partition_claim: no partition 5 (partitions 0 to 3, and 4, the global one)")
        #expect(uf_partition_release(h.d, 1) == UF_ENOTOWNER)
        #expect(h.lastError == "uf_partition_release: this node does not own partition 1")
        #expect(uf_partition_claim(h.d, 1) == UF_OK)
        #expect(uf_partition_claim(h.d, 1) == UF_OK)
        #expect(uf_partition_release(h.d, 1) == UF_OK)
    }

    @Test func theNewStatusCodesHaveNamesAndSentences() {
        #expect(String(cString: uf_status_name(UF_ENOTOWNER)) == "UF_ENOTOWNER")
        #expect(String(cString: uf_status_name(UF_ECONFLICT)) == "UF_ECONFLICT")
        #expect(String(cString: uf_status_name(UF_EUNAVAILABLE)) == "UF_EUNAVAILABLE")
        #expect(String(cString: uf_status_name(UF_EGAP)) == "UF_EGAP")
        #expect(String(cString: uf_strerror(UF_ENOTOWNER)) == "the action's partition is owned by another node, or by none")
        #expect(String(cString: uf_strerror(UF_EGAP)) == "a record came before the ones it follows")
    }

    @Test func onlyTheOwnerArmsAndCancelsAnAPITimerOfItsPartition() {
        let h = Self.partitioned()
        let action = #"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#
        #expect(uf_submit_after(h.d, action, 1000, "later", 0) == UF_ENOTOWNER)
        #expect(h.lastError == "Counter lives in the global partition (4), owned by no node")
        #expect(uf_partition_claim(h.d, 4) == UF_OK)
        #expect(uf_submit_after(h.d, action, 1000, "later", 0) == UF_OK)
        #expect(uf_partition_release(h.d, 4) == UF_OK)
        #expect(uf_timer_cancel(h.d, "later") == UF_ENOTOWNER)
        #expect(h.lastError == "timer 'later' belongs to the global partition (4), owned by no node")
        #expect(uf_partition_claim(h.d, 4) == UF_OK)
        #expect(uf_timer_cancel(h.d, "later") == UF_OK)
    }
}
