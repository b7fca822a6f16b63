import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// SPEC 10, journal: `uf_replay_file` "ends with the model the journaling dispatcher
/// had", and a replay after a crash gives an applied prefix — of actions, and so of
/// batches, which apply "every action in order or none".
///
/// Both tests below FAIL today (acceptance audit, issue 8):
/// * a journal appended to by a second dispatcher that did not replay it first
///   replays to a model neither dispatcher ever had: the header line a registration
///   writes does not reset the model, so the first session's features leak into the
///   second's;
/// * a batch is journaled as one line per mutation, so a crash between those lines
///   replays half a batch.
@Suite struct JournalSessions {
    private func temporaryPath(_ name: String) -> String {
        "/tmp/uniflow-test-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max)).jsonl"
    }

    /// FAILING today: replay gives {"Main":{..41..},"Toggle":{..On..}}.
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

    /// Passes today: the pattern that works (replay first, then go on journaling).
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

    /// FAILING today: the journal cut after the batch's first mutation line (a
    /// SIGKILL between the batch's write() calls leaves exactly this file) replays
    /// to a model with Toggle initialized and Main absent, which the journaling
    /// dispatcher never had: its batch applied both actions or neither.
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
        // Keep the header lines (one per registration) and the batch's first
        // mutation line, whole; drop the rest.
        let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let first = lines.firstIndex(where: { !String(decoding: $0, as: UTF8.self).contains("uniflow_journal") }) else {
            Issue.record("the batch journaled no mutation line")
            return
        }
        try #require(lines.count > first + 2, "the batch journaled fewer than two mutation lines")
        let cut = lines[0...first].reduce(0) { $0 + $1.count + 1 }
        let partial = temporaryPath("batch-partial")
        defer { unlink(partial) }
        writeAll(partial, Array(bytes[0..<cut]))
        let reader = Harness(Seeds.main, Seeds.toggle)
        // Refused as incomplete, or replayed to the model before the batch: either
        // way the model is empty, never half of the batch.
        _ = uf_replay_file(reader.d, partial)
        #expect(reader.state == "{}")
    }
}
