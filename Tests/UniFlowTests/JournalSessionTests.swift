import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// The journal (docs/journal.md): `uf_replay_file` ends with the model the
/// journaling dispatcher had, and a replay after a crash gives an applied prefix —
/// of actions, and so of batches, which apply every action in order or none.
///
/// Every dispatcher that opens a journal is a session of its own, which starts
/// from an empty model: a second dispatcher that appends without replaying first
/// must not inherit the first one's features. A batch is one line, so a crash
/// leaves all of it or none.
@Suite struct JournalSessions {

    @Test func aSecondSessionThatDidNotReplayReplaysToItsOwnModel() throws {
        let path = temporaryPath("sessions")
        defer { unlink(path) }
        do {
            let first = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.main, Seeds.toggle)
            first.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        }
        let expected: String
        do {
            // A new process: same definitions, same journal (appended to), empty model.
            let second = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.main, Seeds.toggle)
            second.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":41}}"#)
            expected = second.state
        }
        #expect(expected == #"{"Main":{"state":"Main","payload":{"val":41}}}"#)
        let reader = Harness(Seeds.main, Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
    }

    /// Replay first, then go on journaling: the second session starts from the
    /// first one's model (its replay is journaled as a restore).
    @Test func aSecondSessionThatReplayedFirstReplaysToItsModel() throws {
        let path = temporaryPath("replayed")
        defer { unlink(path) }
        do {
            let first = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.main, Seeds.toggle)
            first.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        }
        let expected: String
        do {
            let second = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.main, Seeds.toggle)
            #expect(uf_replay_file(second.d, path) == UF_OK, "\(second.lastError)")
            second.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":41}}"#)
            expected = second.state
        }
        let reader = Harness(Seeds.main, Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        #expect(reader.state == #"{"Main":{"state":"Main","payload":{"val":41}},"Toggle":{"state":"On","payload":{}}}"#)
    }

    /// A journal cut anywhere inside its batch replays to the model before the
    /// batch; whole, to the model after it; never to half of it.
    @Test func aJournalCutInsideABatchReplaysToTheModelBeforeTheBatch() throws {
        let path = temporaryPath("batch")
        defer { unlink(path) }
        do {
            let writer = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.main, Seeds.toggle)
            #expect(uf_submit_batch(writer.d, """
            [{"kind":"initialize","feature":"Toggle","into":"On"},
             {"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1}}]
            """) == UF_OK)
        }
        let bytes = try #require(readAll(path))
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        let headers = lines.prefix { String(decoding: $0, as: UTF8.self).contains("uniflow_journal") }
        let batchStart = headers.reduce(0) { $0 + $1.count + 1 }
        try #require(batchStart < bytes.count, "the batch journaled nothing")
        #expect(String(decoding: bytes[batchStart...], as: UTF8.self).hasPrefix(#"{"seq":2,"batch":["#))
        for cut in batchStart...bytes.count {
            let partial = temporaryPath("batch-partial")
            defer { unlink(partial) }
            writeAll(partial, Array(bytes[0..<cut]))
            let reader = Harness(Seeds.main, Seeds.toggle)
            #expect(uf_replay_file(reader.d, partial) == UF_OK, "cut at \(cut): \(reader.lastError)")
            let expected = cut == bytes.count
                ? #"{"Main":{"state":"Main","payload":{"val":1}},"Toggle":{"state":"On","payload":{}}}"#
                : "{}"
            #expect(reader.state == expected, "cut at \(cut)")
        }
    }
}
