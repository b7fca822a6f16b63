import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Statecharts on partitioned dispatchers: records carry what an instance is
/// (configuration, history, invocations, status), followers copy it without
/// running anything, and services run only at the owner, after the record holds.
@Suite struct StatechartPartitions {
    /// `Order[a]` lives in partition 0 (of 4).
    static let order = #"""
    {"feature": "Order", "instances": "keyed",
     "fields": {"n": {"type": "any", "default": 1}},
     "entry": [{"call": "note"}],
     "states": {
       "Idle": {"on": {"load": "Loading", "resume": "Active.Resume", "close": "Closed"}},
       "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"n": {"$": {"var": "feature.payload.n"}}},
                              "onDone": {"into": "Active", "actions": [{"assign": {"n": {"$": {"var": "event.payload.output"}}}}]},
                              "onError": "Idle"},
                   "on": {"cancel": "Idle"}},
       "Active": {"initial": "Playing", "entry": [{"call": "note"}],
                  "on": {"stop": "Idle"},
                  "states": {"Playing": {"on": {"pause": "Paused"}}, "Paused": {"on": {"play": "Playing"}},
                             "Resume": {"type": "history"}}},
       "Closed": {"type": "final"}}}
    """#

    static let initA = #"{"kind": "initialize", "feature": "Order", "key": "a", "into": "Idle"}"#

    /// A node with the `fetch` service and the `note` handler, recorded.
    static func node(_ name: String, _ log: TestLog, _ definition: String = order) -> (Node, ServiceCalls) {
        let node = Node(name, log: log)
        let calls = ServiceCalls()
        #expect(calls.register(node.h, "fetch") == UF_OK)
        #expect(registerHandler(node.h, "note") { _ in calls.notes += 1; return 0 } == UF_OK)
        #expect(uf_register(node.h.d, definition) == UF_OK, "\(node.h.lastError)")
        return (node, calls)
    }

    func send(_ node: Node, _ event: String, key: String = "a") -> Int32 { uf_send(node.h.d, "Order", key, event, nil) }

    func lines(_ text: String) -> [JSONObject] {
        (try! JSONParser.parse(text).objectValue!["lines"]?.arrayValue ?? []).map { $0.objectValue! }
    }

    func lastLines(_ log: TestLog) -> [JSONObject] { lines(log.records[0]!.last!) }

    /// A mutation's JSON without its `seq`, which each node counts for itself.
    func withoutSeq(_ text: String) -> JSONObject {
        var object = try! JSONParser.parse(text).objectValue!
        object["seq"] = nil
        return object
    }

    // MARK: 1. Records and followers

    @Test func aFollowerEndsWithTheWritersModelAndRunsNothing() {
        let log = TestLog()
        let (a, aCalls) = Self.node("a", log)
        let (b, bCalls) = Self.node("b", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        let seenAtA = a.h.record(), seenAtB = b.h.record()
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "load") == UF_OK)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Loading","payload":{"n":1},"invocations":[{"id":"get","src":"fetch","input":{"n":1}}]}}}"#)
        // The record's line says what the instance invokes.
        #expect(lastLines(log)[0]["invocations"] == .array([["id": "get", "src": "fetch", "input": ["n": 1]]]))
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
        #expect(uf_service_done(a.h.d, aCalls.started[0].serial, "7") == UF_OK)
        #expect(send(a, "pause") == UF_OK)
        #expect(send(a, "stop") == UF_OK)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Idle","payload":{"n":7},"history":{"Active.Resume":["Active.Paused"]}}}}"#)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
        #expect(send(a, "resume") == UF_OK)
        #expect(a.h.feature("Order") == #"{"a":{"state":"Active.Paused","payload":{"n":7},"history":{"Active.Resume":["Active.Paused"]}}}"#)
        #expect(send(a, "stop") == UF_OK)
        #expect(send(a, "close") == UF_OK)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Closed","payload":{"n":7},"history":{"Active.Resume":["Active.Paused"]},"status":"done"}}}"#)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
        #expect(a.h.submit(#"{"kind": "deinitialize", "feature": "Order", "key": "a"}"#) == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == "{}")
        // Effects ran at the writer only: the feature's entry once, Active's twice.
        #expect(aCalls.notes == 3)
        #expect(bCalls.notes == 0)
        #expect(bCalls.started.isEmpty && bCalls.stopped.isEmpty)
        // Every mutation reads at the follower as it did at the writer, internal microsteps included.
        #expect(seenAtB.mutations.count == seenAtA.mutations.count)
        #expect(seenAtB.mutations.map(withoutSeq) == seenAtA.mutations.map(withoutSeq))
    }

    @Test func aNodeStartedFromAPartitionSnapshotHasTheWritersModel() {
        let log = TestLog()
        let (a, _) = Self.node("a", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "load") == UF_OK)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partition_snapshot(a.h.d, 0, &out) == UF_OK)
        let snapshot = String(cString: out!)
        uf_free(out)
        let (c, cCalls) = Self.node("c", log)
        // A snapshot whose instance invokes what its state does not is refused whole.
        let bad = snapshot.replacingFirst(#""id":"get""#, with: #""id":"put""#)
        #expect(uf_record_apply(c.h.d, bad) == UF_ESCHEMA)
        #expect(c.h.lastError == "Order.a.invocations[0]: no active state of Order[a] invokes 'fetch' as 'put'")
        #expect(c.h.state == "{}")
        #expect(uf_record_apply(c.h.d, snapshot) == UF_OK, "\(c.h.lastError)")
        #expect(c.h.state == a.h.state)
        #expect(cCalls.started.isEmpty)
        #expect(cCalls.notes == 0)
        // c takes over: the invocation the snapshot lists starts there.
        #expect(uf_partition_release(a.h.d, 0) == UF_OK)
        #expect(c.catchUp() == UF_OK)
        #expect(uf_partition_claim(c.h.d, 0) == UF_OK)
        #expect(cCalls.started.map(\.input) == [#"{"n":1}"#])
        #expect(c.h.state == a.h.state)
    }

    @Test(arguments: [
        (#"[{"id": "put", "src": "fetch"}]"#, "lines[0]: Order[a].invocations[0]: no active state of Order[a] invokes 'fetch' as 'put'"),
        (#"{"id": "get"}"#, "lines[0]: Order[a].invocations: expected an array, got object"),
        (#"["get"]"#, #"lines[0]: Order[a].invocations[0]: expected {"id", "src", "input"}, got "get""#),
    ])
    func aLineWhoseInvocationsTheChartCannotHaveIsRefusedWhole(invocations: String, message: String) {
        let log = TestLog()
        let (a, _) = Self.node("a", log)
        let (b, _) = Self.node("b", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(send(a, "load") == UF_OK)
        var record = try! JSONParser.parse(log.records[0]!.last!).objectValue!
        var line = record["lines"]!.arrayValue![0].objectValue!
        line["invocations"] = try! JSONParser.parse(invocations)
        record["lines"] = .array([.object(line)])
        let before = b.h.state
        #expect(uf_record_apply(b.h.d, JSONValue.object(record).jsonText) == UF_ESCHEMA)
        #expect(b.h.lastError == message)
        #expect(b.h.state == before)
        #expect(b.partitions.hasPrefix(#"[{"p":0,"version":2,"#))
    }

    // MARK: 2. Services after the commit

    @Test(arguments: [UF_ECONFLICT, UF_EUNAVAILABLE])
    func servicesStartOnlyOnceTheRecordIsAcceptedAndARefusedCallStartsAndStopsNothing(status: Int32) {
        let log = TestLog()
        let (a, calls) = Self.node("a", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        // Refused: nothing started, the model as before.
        let idle = a.h.state
        log.refuseNext = status
        #expect(send(a, "load") == status)
        let message = status == UF_ECONFLICT
            ? "the log refused the record of partition 0 at version 3: another record got there first"
            : "the log did not answer for the record of partition 0 at version 3: its outcome is unknown until the log is read"
        #expect(a.h.lastError == message)
        #expect(calls.started.isEmpty)
        #expect(a.h.state == idle)
        // Accepted: started after the sink had the record.
        calls.recordsWhenStarted = { log.records[0]!.count }
        #expect(send(a, "load") == UF_OK)
        #expect(calls.started.count == 1)
        #expect(calls.recordCounts == [3])
        // A refused exit leaves the invocation running.
        let loading = a.h.state
        log.refuseNext = status
        #expect(send(a, "cancel") == status)
        #expect(calls.stopped.isEmpty)
        #expect(a.h.state == loading)
        #expect(send(a, "cancel") == UF_OK)
        #expect(calls.stopped == [calls.started[0].serial])
    }

    @Test func aBatchStartsItsServicesOnlyOnceItsRecordHolds() {
        let log = TestLog()
        let (a, calls) = Self.node("a", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        let batch = #"""
        [{"kind": "initialize", "feature": "Order", "key": "a", "into": "Idle"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"}]
        """#
        log.refuseNext = UF_ECONFLICT
        #expect(uf_submit_batch(a.h.d, batch) == UF_ECONFLICT)
        #expect(calls.started.isEmpty)
        #expect(a.h.state == "{}")
        // A batch whose last action fails starts nothing either.
        #expect(uf_submit_batch(a.h.d, #"""
        [{"kind": "initialize", "feature": "Order", "key": "a", "into": "Idle"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "pause"}]
        """#) == UF_REJECTED)
        #expect(a.h.lastError == "batch[2]: Order[a] in state Loading has no transition for event 'pause'")
        #expect(calls.started.isEmpty)
        calls.recordsWhenStarted = { log.records[0]!.count }
        #expect(uf_submit_batch(a.h.d, batch) == UF_OK)
        #expect(calls.started.map(\.input) == [#"{"n":1}"#])
        #expect(calls.recordCounts == [2])
    }

    @Test func aStateABatchEntersAndLeavesStartsNoServiceAndOneEnteredAgainStartsOne() {
        let log = TestLog()
        let (a, calls) = Self.node("a", log)
        let (b, _) = Self.node("b", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(uf_submit_batch(a.h.d, #"""
        [{"kind": "initialize", "feature": "Order", "key": "a", "into": "Idle"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "cancel"}]
        """#) == UF_OK)
        #expect(calls.started.isEmpty)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Idle","payload":{"n":1}}}}"#)
        #expect(uf_submit_batch(a.h.d, #"""
        [{"kind": "send", "feature": "Order", "key": "a", "event": "load"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "cancel"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"}]
        """#) == UF_OK)
        #expect(calls.started.count == 1)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Loading","payload":{"n":1},"invocations":[{"id":"get","src":"fetch","input":{"n":1}}]}}}"#)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
    }

    @Test func aServiceThatSettlesInsideStartIsAFurtherRecordAndAFailingStartAnError() {
        let log = TestLog()
        let (a, calls) = Self.node("a", log)
        let (b, _) = Self.node("b", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        calls.settleInStart = "9"
        #expect(send(a, "load") == UF_OK)
        // The load's record, then the result's: Loading, then Active with the output.
        #expect(log.records[0]!.count == 4)
        #expect(lines(log.records[0]![2])[0]["state"] == .string("Loading"))
        #expect(a.h.state == #"{"Order":{"a":{"state":"Active.Playing","payload":{"n":9}}}}"#)
        #expect(send(a, "stop") == UF_OK)
        calls.settleInStart = nil
        calls.startResult = -1
        #expect(send(a, "load") == UF_OK)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Idle","payload":{"n":9},"history":{"Active.Resume":["Active.Playing"]}}}}"#)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
    }

    // MARK: 3. Claims, releases, results where the instance is not owned

    @Test func aReleaseStopsTheServicesAndAClaimStartsThemAgainWithNewSerials() {
        let log = TestLog()
        let (a, aCalls) = Self.node("a", log)
        let (b, bCalls) = Self.node("b", log)
        a.h.captureReports()
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "load") == UF_OK)
        let first = aCalls.started[0].serial
        let loading = a.h.state
        #expect(uf_partition_release(a.h.d, 0) == UF_OK)
        #expect(aCalls.stopped == [first])
        // The model still lists the invocation: the log says it runs.
        #expect(a.h.state == loading)
        #expect(uf_service_done(a.h.d, first, "5") == UF_ENOTOWNER)
        #expect(a.h.lastError == "uf_service_done: invocation \(first) of Order[a] was stopped here: Order[a] lives in partition 0, owned by no node")
        #expect(a.h.state == loading)
        // b takes over: the invocation starts there, with the input the model lists.
        #expect(b.catchUp() == UF_OK)
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(bCalls.started.map(\.input) == [#"{"n":1}"#])
        #expect(bCalls.started.map(\.id) == ["get"])
        #expect(b.h.state == loading)
        #expect(a.catchUp() == UF_OK)
        #expect(uf_service_error(a.h.d, first, #""late""#) == UF_ENOTOWNER)
        #expect(a.h.lastError == "uf_service_error: invocation \(first) of Order[a] was stopped here: Order[a] lives in partition 0, owned by node 'b'")
        #expect(uf_service_done(b.h.d, bCalls.started[0].serial, "5") == UF_OK)
        #expect(b.h.feature("Order") == #"{"a":{"state":"Active.Playing","payload":{"n":5}}}"#)
        #expect(a.catchUp() == UF_OK)
        #expect(a.h.state == b.h.state)
        // A serial no longer running anywhere here stays a drop.
        a.h.reports.removeAll()
        #expect(uf_service_done(a.h.d, 999, nil) == UF_OK)
        #expect(a.h.reports("dropped") == [#"{"event":"dropped","status":"UF_OK","reason":"invocation 999 is no longer running"}"#])
        #expect(aCalls.started.count == 1)
    }

    @Test func applyingAnotherNodesClaimStopsWhatRunsHere() {
        let log = TestLog()
        let (a, aCalls) = Self.node("a", log)
        let (b, bCalls) = Self.node("b", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "load") == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(bCalls.started.count == 1)
        // a learns it lost the partition from the log.
        #expect(aCalls.stopped.isEmpty)
        #expect(a.catchUp() == UF_OK)
        #expect(aCalls.stopped == [aCalls.started[0].serial])
        #expect(a.h.state == b.h.state)
        #expect(uf_service_done(a.h.d, aCalls.started[0].serial, "1") == UF_ENOTOWNER)
        #expect(a.h.lastError.hasSuffix("owned by node 'b'"))
        // Claiming it back starts it again here, with a serial never used before.
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(aCalls.started.count == 2)
        #expect(aCalls.started[1].serial != aCalls.started[0].serial)
        // The old serial is only a drop now, not another node's.
        #expect(uf_service_done(a.h.d, aCalls.started[0].serial, "1") == UF_OK)
    }

    @Test func aRestoreStartsServicesOnlyWhereThisNodeOwnsTheInstance() {
        let log = TestLog()
        let (a, calls) = Self.node("a", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        // Order[a] lives in partition 0 (a's), Order[b] in partition 1 (no node's).
        let model = #"{"Order":{"a":{"state":"Loading","payload":{"n":2},"invocations":[{"id":"get","src":"fetch","input":{"n":2}}]},"b":{"state":"Loading","payload":{"n":3},"invocations":[{"id":"get","src":"fetch","input":{"n":3}}]}}}"#
        #expect(uf_state_restore(a.h.d, model) == UF_OK, "\(a.h.lastError)")
        #expect(calls.started.map(\.input) == [#"{"n":2}"#])
        #expect(a.h.state == model)
        // Claiming partition 1 starts Order[b]'s.
        #expect(uf_partition_claim(a.h.d, 1) == UF_OK)
        #expect(calls.started.map(\.input) == [#"{"n":2}"#, #"{"n":3}"#])
    }

    @Test func deinitializingStopsTheServicesAndNothingIsLeftToStartAfterAClaim() {
        let log = TestLog()
        let (a, aCalls) = Self.node("a", log)
        let (b, bCalls) = Self.node("b", log)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "load") == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(a.h.submit(#"{"kind": "deinitialize", "feature": "Order", "key": "a"}"#) == UF_OK)
        #expect(aCalls.stopped == [aCalls.started[0].serial])
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == "{}")
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(bCalls.started.isEmpty)
        // Initialized again, the instance lists nothing it ran before.
        #expect(b.h.submit(Self.initA) == UF_OK)
        #expect(b.h.state == #"{"Order":{"a":{"state":"Idle","payload":{"n":1}}}}"#)
    }

    @Test func aResultTakenByNothingIsARecordThatFollowersApply() {
        let quiet = #"""
        {"feature": "Order", "instances": "keyed", "states": {"Idle": {"on": {"load": "Loading"}},
                    "Loading": {"invoke": {"src": "fetch", "id": "get"}}}}
        """#
        let log = TestLog()
        let (a, aCalls) = Self.node("a", log, quiet)
        let (b, _) = Self.node("b", log, quiet)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "load") == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(uf_service_done(a.h.d, aCalls.started[0].serial, nil) == UF_OK)
        #expect(a.h.state == #"{"Order":{"a":{"state":"Loading","payload":{}}}}"#)
        #expect(lastLines(log) == [["invocations": [], "feature": "Order", "key": "a"]])
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
    }

    @Test func aJournalOfAPartitionedWriterListsWhatItRunsAndReplays() {
        let quiet = #"""
        {"feature": "Order", "instances": "keyed", "states": {"Idle": {"on": {"load": "Loading"}},
                    "Loading": {"invoke": {"src": "fetch", "id": "get"}}}}
        """#
        let path = temporaryPath("chart-partitions")
        defer { unlink(path) }
        do {
            let a = Harness(options: #"{"partitions": 4, "node": "a", "journal": "\#(path)"}"#)
            let calls = ServiceCalls()
            #expect(calls.register(a, "fetch") == UF_OK)
            #expect(uf_register(a.d, quiet) == UF_OK, "\(a.lastError)")
            #expect(uf_partition_claim(a.d, 0) == UF_OK)
            #expect(a.submit(Self.initA) == UF_OK)
            #expect(uf_send(a.d, "Order", "a", "load", nil) == UF_OK)
        }
        func replayed() -> (Harness, ServiceCalls) {
            let reader = Harness()
            let calls = ServiceCalls()
            #expect(calls.register(reader, "fetch") == UF_OK)
            #expect(uf_register(reader.d, quiet) == UF_OK)
            #expect(uf_replay_file(reader.d, path) == UF_OK, "\(reader.lastError)")
            return (reader, calls)
        }
        // A replay starts what the writer's records listed as running.
        let (reader, calls) = replayed()
        #expect(reader.state == #"{"Order":{"a":{"state":"Loading","payload":{},"invocations":[{"id":"get","src":"fetch","input":null}]}}}"#)
        #expect(calls.started.count == 1)
        // Once it settled (its result taken by nothing), nothing.
        do {
            let a = Harness(options: #"{"partitions": 4, "node": "a", "journal": "\#(path)"}"#)
            let running = ServiceCalls()
            #expect(running.register(a, "fetch") == UF_OK)
            #expect(uf_register(a.d, quiet) == UF_OK, "\(a.lastError)")
            #expect(uf_replay_file(a.d, path) == UF_OK, "\(a.lastError)")
            #expect(uf_partition_claim(a.d, 0) == UF_OK)
            #expect(running.started.count == 1)
            #expect(uf_service_done(a.d, running.started[0].serial, nil) == UF_OK)
        }
        let (settled, none) = replayed()
        #expect(settled.state == #"{"Order":{"a":{"state":"Loading","payload":{}}}}"#)
        #expect(none.started.isEmpty)
    }

    @Test func aSingleStatechartFeatureLivesInTheGlobalPartitionWithItsServices() {
        let single = #"""
        {"feature": "Player", "states": {"Idle": {"on": {"load": "Loading"}},
                    "Loading": {"invoke": {"src": "fetch", "id": "get", "onDone": "Idle"}}}}
        """#
        let log = TestLog()
        let (a, aCalls) = Self.node("a", log, single)
        let (b, bCalls) = Self.node("b", log, single)
        #expect(uf_partition_claim(a.h.d, 4) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Player", "into": "Idle"}"#) == UF_OK)
        #expect(uf_send(a.h.d, "Player", nil, "load", nil) == UF_OK)
        #expect(aCalls.started.map(\.id) == ["get"])
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == #"{"Player":{"state":"Loading","payload":{},"invocations":[{"id":"get","src":"fetch","input":null}]}}"#)
        #expect(uf_partition_release(a.h.d, 4) == UF_OK)
        #expect(uf_service_done(a.h.d, aCalls.started[0].serial, nil) == UF_ENOTOWNER)
        #expect(a.h.lastError == "uf_service_done: invocation \(aCalls.started[0].serial) of Player was stopped here: Player lives in the global partition (4), owned by no node")
        #expect(b.catchUp() == UF_OK)
        #expect(uf_partition_claim(b.h.d, 4) == UF_OK)
        #expect(uf_service_done(b.h.d, bCalls.started[0].serial, nil) == UF_OK)
        #expect(b.h.state == #"{"Player":{"state":"Idle","payload":{}}}"#)
        #expect(a.catchUp() == UF_OK)
        #expect(a.h.state == b.h.state)
    }

    // MARK: 4. Timers

    static let kettle = #"""
    {"feature": "Order", "instances": "keyed", "states": {
       "Idle": {"on": {"boil": {"into": "Heating", "actions": [{"send": "done", "delay": 300, "id": "timer"}]}}},
       "Heating": {"after": [{"ms": 1000, "send": "overheat"}],
                   "on": {"done": "Ready", "overheat": "Idle", "stop": {"into": "Idle", "actions": [{"cancel": "timer"}]}}},
       "Ready": {}}}
    """#

    @Test func chartTimersAndDelayedSendsFireAtTheOwnerAndFollowersMirrorThem() {
        let log = TestLog()
        let (a, _) = Self.node("a", log, Self.kettle)
        let (b, _) = Self.node("b", log, Self.kettle)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "boil") == UF_OK)
        let armed = lastLines(log).filter { $0["timer"] == .string("armed") }.map { $0["id"]! }
        #expect(armed == [.string("Order[a]:Heating:after:0"), .string("Order[a]:send:timer")])
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.timers == a.h.timers)
        #expect(b.h.timers == #"[{"id":"Order[a]:send:timer","due_in_ms":300,"ms":300,"p":0},{"id":"Order[a]:Heating:after:0","due_in_ms":1000,"ms":1000,"p":0}]"#)
        // Due everywhere, fired by the owner only.
        #expect(uf_clock_advance(b.h.d, 300) == UF_OK)
        #expect(b.h.feature("Order") == #"{"a":{"state":"Heating","payload":{}}}"#)
        #expect(uf_clock_advance(a.h.d, 300) == UF_OK)
        #expect(a.h.feature("Order") == #"{"a":{"state":"Ready","payload":{}}}"#)
        // The send's firing and the chart timer Ready's entry disarmed, in one record.
        let fired = lastLines(log)
        #expect(fired.map { $0["kind"] ?? $0["timer"]! } == [.string("cancelled"), .string("transition"), .string("fired")])
        #expect(fired[1]["action"] == ["kind": "send", "feature": "Order", "key": "a", "event": "done", "timer": "Order[a]:send:timer"])
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.state == a.h.state)
        #expect(b.h.timers == "[]")
        #expect(a.h.timers == "[]")
    }

    /// A fired API timer's action outlives the timer's text: the record,
    /// written after the firing, names it whole (flat features too).
    @Test func aFiredTimersRecordNamesItsActionWhole() {
        let log = TestLog()
        let a = Node("a", log: log, RecordTimers.job)
        let b = Node("b", log: log, RecordTimers.job)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(#"{"kind": "initialize", "feature": "Job", "key": "a", "into": "Queued"}"#) == UF_OK)
        #expect(uf_submit_after(a.h.d, RecordTimers.start, 500, "start-a", 0) == UF_OK)
        #expect(uf_clock_advance(a.h.d, 500) == UF_OK)
        #expect(lastLines(log)[0]["action"] == ["kind": "transition", "feature": "Job", "key": "a", "into": "Running", "same": false, "timer": "start-a"])
        let seen = b.h.record()
        #expect(b.catchUp() == UF_OK)
        #expect(seen.mutations.last.map(withoutSeq)?["action"] == ["kind": "transition", "feature": "Job", "key": "a", "into": "Running", "same": false, "timer": "start-a"])
    }

    @Test func aPartitionSnapshotCarriesChartTimersAndDelayedSends() {
        let log = TestLog()
        let (a, _) = Self.node("a", log, Self.kettle)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "boil") == UF_OK)
        #expect(uf_clock_advance(a.h.d, 100) == UF_OK)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_partition_snapshot(a.h.d, 0, &out) == UF_OK)
        let snapshot = String(cString: out!)
        uf_free(out)
        let (c, _) = Self.node("c", log, Self.kettle)
        #expect(uf_clock_advance(c.h.d, 100) == UF_OK)
        #expect(uf_record_apply(c.h.d, snapshot) == UF_OK, "\(c.h.lastError)")
        #expect(c.h.timers == a.h.timers)
        #expect(c.h.timers == #"[{"id":"Order[a]:send:timer","due_in_ms":200,"ms":300,"p":0},{"id":"Order[a]:Heating:after:0","due_in_ms":900,"ms":1000,"p":0}]"#)
        #expect(c.h.state == a.h.state)
    }

    @Test func aNewOwnerFiresTheChartTimerItsPredecessorArmedOnce() {
        let log = TestLog()
        let (a, _) = Self.node("a", log, Self.kettle)
        let (b, _) = Self.node("b", log, Self.kettle)
        #expect(uf_partition_claim(a.h.d, 0) == UF_OK)
        #expect(a.h.submit(Self.initA) == UF_OK)
        #expect(send(a, "boil") == UF_OK)
        #expect(send(a, "stop") == UF_OK)
        #expect(lastLines(log).contains { $0["timer"] == .string("cancelled") })
        #expect(send(a, "boil") == UF_OK)
        #expect(b.catchUp() == UF_OK)
        #expect(b.h.timers == a.h.timers)
        // a is gone; b takes over after both deadlines and fires each once, in order.
        #expect(uf_clock_advance(b.h.d, 5000) == UF_OK)
        #expect(uf_partition_claim(b.h.d, 0) == UF_OK)
        #expect(uf_clock_advance(b.h.d, 0) == UF_OK)
        #expect(b.h.feature("Order") == #"{"a":{"state":"Ready","payload":{}}}"#)
        #expect(b.h.timers == "[]")
        #expect(a.catchUp() == UF_OK)
        #expect(a.h.state == b.h.state)
    }
}

/// Batches of a dispatcher without partitions: their services wait for the
/// whole batch, as a partitioned one's wait for its record.
@Suite struct StatechartBatchServices {
    @Test func aBatchStartsServicesOnlyOnceItHoldsAndARolledBackOneStartsAndStopsNothing() {
        let h = Harness()
        let calls = ServiceCalls()
        #expect(calls.register(h, "fetch") == UF_OK)
        #expect(registerHandler(h, "note") { _ in 0 } == UF_OK)
        #expect(uf_register(h.d, StatechartPartitions.order) == UF_OK)
        // Started after the batch's mutations were announced.
        var announced = 0
        h.subscribe(nil) { _ in announced += 1; return 0 }
        calls.recordsWhenStarted = { announced }
        #expect(uf_submit_batch(h.d, #"""
        [{"kind": "initialize", "feature": "Order", "key": "a", "into": "Idle"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "pause"}]
        """#) == UF_REJECTED)
        #expect(calls.started.isEmpty)
        #expect(h.state == "{}")
        #expect(uf_submit_batch(h.d, #"""
        [{"kind": "initialize", "feature": "Order", "key": "a", "into": "Idle"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"}]
        """#) == UF_OK)
        #expect(calls.recordCounts == [2])
        // A batch that leaves the state and then fails stops nothing.
        let loading = h.state
        #expect(uf_submit_batch(h.d, #"""
        [{"kind": "send", "feature": "Order", "key": "a", "event": "cancel"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "pause"}]
        """#) == UF_REJECTED)
        #expect(calls.stopped.isEmpty)
        #expect(h.state == loading)
        #expect(uf_submit_batch(h.d, #"""
        [{"kind": "send", "feature": "Order", "key": "a", "event": "cancel"},
         {"kind": "send", "feature": "Order", "key": "a", "event": "load"}]
        """#) == UF_OK)
        #expect(calls.stopped == [calls.started[0].serial])
        #expect(calls.started.count == 2)
    }
}

extension String {
    /// The text with its first `target` replaced (tests edit records' text).
    func replacingFirst(_ target: String, with replacement: String) -> String {
        let t = Array(utf8), r = Array(target.utf8)
        guard r.count <= t.count else { return self }
        for i in 0...(t.count - r.count) where Array(t[i..<(i + r.count)]) == r {
            return String(decoding: t[..<i] + Array(replacement.utf8) + t[(i + r.count)...], as: UTF8.self)
        }
        return self
    }
}

/// A service whose starts and stops are recorded, with the `note` handler's count.
final class ServiceCalls {
    var started: [(serial: UInt64, id: String, input: String)] = []
    var stopped: [UInt64] = []
    var notes = 0
    /// Read at each start (how many records the log had then).
    var recordsWhenStarted: (() -> Int)?
    var recordCounts: [Int] = []
    /// When set, `start` reports this output at once (`uf_service_done` inside `start`).
    var settleInStart: String?
    var startResult: Int32 = 0

    /// The dispatcher `start` calls back into.
    var dispatcher: UnsafeMutableRawPointer?

    func register(_ h: Harness, _ name: String) -> Int32 {
        dispatcher = UnsafeMutableRawPointer(h.d)
        let box = Box<ServiceCalls>(self, freed: FreeCounter())
        return uf_register_service(h.d, name, { inv, payload in
            let calls = Unmanaged<Box<ServiceCalls>>.fromOpaque(payload!).takeUnretainedValue().value
            calls.started.append((uf_invocation_serial(inv), String(cString: uf_invocation_id(inv)),
                                  String(cString: uf_invocation_input_json(inv))))
            if let count = calls.recordsWhenStarted { calls.recordCounts.append(count()) }
            if let output = calls.settleInStart {
                let d = OpaquePointer(calls.dispatcher!)
                precondition(uf_service_done(d, uf_invocation_serial(inv), output) == UF_QUEUED)
            }
            return calls.startResult
        }, { inv, payload in
            Unmanaged<Box<ServiceCalls>>.fromOpaque(payload!).takeUnretainedValue().value.stopped.append(uf_invocation_serial(inv))
            return 0
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
    }
}
