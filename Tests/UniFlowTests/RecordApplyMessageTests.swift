import CUniFlow
import Testing
@testable import UniFlow

/// Every refusal of `uf_record_apply`, one field of a valid record changed at a
/// time: the status and the message, which hosts and the Python package read.
/// Records are read by `JSONTextReader` or by jansson, and their fields in
/// the order the writer puts them or in any other: the messages are the same.
@Suite struct RecordApplyMessages {
    /// A writer `a` of 4 partitions that claimed the global one (4) and
    /// initialized `Counter`: its claim (version 1) and that record (version 2).
    struct Log {
        let claim: String
        let record: JSONObject
        let fingerprint: String

        init() {
            let log = TestLog()
            let a = Node("a", log: log, Records.download, Records.counter)
            precondition(uf_partition_claim(a.h.d, 4) == UF_OK)
            precondition(a.h.submit(#"{"kind": "initialize", "feature": "Counter", "into": "Idle"}"#) == UF_OK)
            claim = log.records[4]![0]
            record = try! JSONParser.parse(log.records[4]![1]).objectValue!
            fingerprint = record["fingerprint"]!.stringValue!
        }
    }

    /// A follower that has applied the claim, then `text`: the status and message.
    static func apply(_ text: String, after log: Log) -> (status: Int32, message: String, state: String) {
        let b = Node("b", log: TestLog(), Records.download, Records.counter)
        precondition(uf_record_apply(b.h.d, log.claim) == UF_OK)
        let status = uf_record_apply(b.h.d, text)
        return (status, status == UF_OK ? "" : b.h.lastError, b.h.state)
    }

    /// The record with its first line changed by `edit`.
    static func line(_ record: JSONObject, _ edit: (inout JSONObject) -> Void) -> JSONObject {
        var record = record
        var line = record["lines"]!.arrayValue![0].objectValue!
        edit(&line)
        record["lines"] = .array([.object(line)])
        return record
    }

    @Test func everyRefusalKeepsItsMessage() {
        let log = Log()
        let r = log.record
        func with(_ key: String, _ value: JSONValue?) -> JSONObject {
            var copy = r
            copy[key] = value
            return copy
        }
        let cases: [(JSONObject, Int32, String)] = [
            (with("uniflow_record", .int(2)), UF_ESCHEMA, #"not a record: "uniflow_record": 1 is missing"#),
            (with("fingerprint", .none), UF_ESCHEMA, "the record has no 'fingerprint'"),
            (with("fingerprint", .int(5)), UF_ESCHEMA, "the record was written for other definitions (fingerprint missing, this dispatcher has '\(log.fingerprint)')"),
            (with("fingerprint", "0123456789abcdef"), UF_ESCHEMA, "the record was written for other definitions (fingerprint '0123456789abcdef', this dispatcher has '\(log.fingerprint)')"),
            (with("partitions", .none), UF_ESCHEMA, "the record has no 'partitions'"),
            (with("partitions", "4"), UF_ESCHEMA, #"the record was written with "4" partitions, this dispatcher has 4"#),
            (with("partition", .none), UF_ESCHEMA, "the record has no 'partition'"),
            (with("partition", .int(5)), UF_ESCHEMA, "'partition': expected a partition from 0 to 4, got 5"),
            (with("partition", .int(-1)), UF_ESCHEMA, "'partition': expected a partition from 0 to 4, got -1"),
            (with("version", .none), UF_ESCHEMA, "the record has no 'version'"),
            (with("version", .int(0)), UF_ESCHEMA, "'version': expected an integer >= 1, got 0"),
            (with("version", .double(2.5)), UF_ESCHEMA, "'version': expected an integer >= 1, got 2.5"),
            (with("node", .none), UF_ESCHEMA, "the record has no 'node'"),
            (with("node", "no such name!"), UF_ESCHEMA, #"'node': expected a node's name, got "no such name!""#),
            (with("incarnation", .none), UF_ESCHEMA, "the record has no 'incarnation'"),
            (with("incarnation", .int(7)), UF_ESCHEMA, "'incarnation': expected a string, got 7"),
            (with("version", .int(3)), UF_EGAP, "the record of the global partition (4) at version 3 comes before the ones it follows: this node has applied up to version 1"),
            (with("prev", .none), UF_ECONFLICT, "the record of the global partition (4) at version 2 follows nothing, but the last one applied here hashes to \(JSONValue.string(FNV1a.hex(FNV1a.hash32(log.claim.utf8))).jsonText): the log's history diverged"),
            (with("prev", .null), UF_ECONFLICT, "the record of the global partition (4) at version 2 follows null, but the last one applied here hashes to \(JSONValue.string(FNV1a.hex(FNV1a.hash32(log.claim.utf8))).jsonText): the log's history diverged"),
            (with("prev", .string(FNV1a.hex(FNV1a.hash32(log.claim.utf8)).uppercased())), UF_ECONFLICT, "the record of the global partition (4) at version 2 follows"),
            (with("after", "x"), UF_ESCHEMA, #"'after': expected an object of partitions' versions, got "x""#),
            (with("after", ["a": 1]), UF_ESCHEMA, #"'after': expected an object of partitions' versions, got {"a":1}"#),
            (with("after", ["1": -1]), UF_ESCHEMA, #"'after': expected an object of partitions' versions, got {"1":-1}"#),
            (with("claim", "z"), UF_ESCHEMA, "a claim or release must name the record's node 'a'"),
            (with("release", .int(1)), UF_ESCHEMA, "a claim or release must name the record's node 'a'"),
            (with("lines", .none), UF_ESCHEMA, "the record has no 'lines'"),
            (with("lines", [:]), UF_ESCHEMA, "'lines': expected an array, got {}"),
            (with("lines", [5]), UF_ESCHEMA, "lines[0]: expected an object, got number"),
            (Self.line(r) { $0["feature"] = .none }, UF_ESCHEMA, "lines[0]: missing 'feature'"),
            (Self.line(r) { $0["feature"] = "Nope" }, UF_ESCHEMA, "lines[0]: unknown feature 'Nope'"),
            (Self.line(r) { $0["key"] = "k" }, UF_ESCHEMA, "lines[0]: Counter is a single feature: unexpected 'key'"),
            (Self.line(r) { $0["feature"] = "Download" }, UF_ESCHEMA, "lines[0]: Download is keyed: missing 'key'"),
            (Self.line(r) { $0["feature"] = "Download"; $0["key"] = "k" }, UF_ESCHEMA, "lines[0]: Download[k] does not live in the global partition (4)"),
            (Self.line(r) { $0["kind"] = .none }, UF_ESCHEMA, "lines[0]: 'kind': expected a mutation kind, got nothing"),
            (Self.line(r) { $0["kind"] = "initialize" }, UF_ESCHEMA, #"lines[0]: 'kind': expected a mutation kind, got "initialize""#),
            (Self.line(r) { $0["state"] = .none }, UF_ESCHEMA, "lines[0]: missing 'state'"),
            (Self.line(r) { $0["state"] = "Nope" }, UF_ESCHEMA, "lines[0]: unknown state 'Nope' of feature Counter"),
            (Self.line(r) { $0["payload"] = .none }, UF_ESCHEMA, "lines[0]: missing 'payload' object"),
            (Self.line(r) { $0["payload"] = ["x": 1] }, UF_ESCHEMA, "lines[0]: "),
            (Self.line(r) { $0["kind"] = "actualization" }, UF_ESCHEMA, "lines[0]: Counter is not in state Idle on this node"),
            (Self.line(r) { $0["kind"] = "transition" }, UF_ESCHEMA, "lines[0]: Counter is not initialized on this node"),
            (Self.line(r) { $0["kind"] = "deinitialization" }, UF_ESCHEMA, "lines[0]: Counter is not initialized on this node"),
        ]
        for (record, status, message) in cases {
            let text = JSONValue.object(record).jsonText
            let outcome = Self.apply(text, after: log)
            #expect(outcome.status == status, "\(text)")
            #expect(outcome.message.hasPrefix(message), "\(text)")
            #expect(outcome.state == "{}", "\(text)")
        }
    }

    /// Texts the reader declines go to jansson, which refuses the invalid
    /// ones with its message and reads the others: they apply the same.
    @Test func whatTheReaderDeclinesJanssonReads() {
        let log = Log()
        let text = JSONValue.object(log.record).jsonText
        // A duplicate key: jansson's message, with its position.
        let duplicate = "{\"node\":\"a\"," + text.dropFirst()
        let refused = Self.apply(duplicate, after: log)
        #expect(refused.status == UF_EJSON)
        #expect(refused.message.hasPrefix("line 1, column "))
        #expect(refused.message.contains("duplicate object key"))
        // The same record with a \u escape, which the reader leaves to jansson.
        let escaped = text.replacing(#""Counter""#, with: #""\u0043ounter""#, maxReplacements: 1)
        #expect(escaped != text)
        #expect(Self.apply(escaped, after: log).status == UF_OK)
        #expect(Self.apply(escaped, after: log).state == Self.apply(text, after: log).state)
    }

    /// A record whose fields come in another order than the writer's, with
    /// whitespace between them, applies as the writer's does.
    @Test func fieldsInAnyOrderApplyTheSame() {
        let log = Log()
        let reversed = JSONObject(log.record.entries.reversed().map { entry in
            guard entry.key == "lines" else { return entry }
            let lines = entry.value.arrayValue!.map { JSONValue.object(JSONObject($0.objectValue!.entries.reversed())) }
            return (key: entry.key, value: .array(lines))
        })
        let text = JSONValue.object(reversed).jsonText.replacing(",", with: " ,\n ")
        let applied = Self.apply(text, after: log)
        #expect(applied.status == UF_OK, "\(applied.message)")
        #expect(applied.state == #"{"Counter":{"state":"Idle","payload":{}}}"#)
    }
}
