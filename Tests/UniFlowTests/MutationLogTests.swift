import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// The seam the journal writer hands changes through (`MutationLog`;
/// docs/architecture.md, "Persistence"): a log other than the journal file gets
/// the lines the file would, and a log that refuses a change keeps it from being
/// applied or seen.
@Suite struct MutationLogSeam {
    /// A log in memory, as a record sink would be: it keeps what it accepts, or
    /// refuses everything with `refusal`.
    final class MemoryLog: MutationLog {
        let session = "00000000000000aa"
        var accepted: [[String]] = []
        var refusal: UniFlowError?

        func accept(_ lines: [JSONValue]) throws(UniFlowError) {
            if let refusal { throw refusal }
            accepted.append(lines.map(\.jsonText))
        }
    }

    static let actions = [
        #"{"kind":"initialize","feature":"Toggle","into":"Off"}"#,
        #"{"kind":"transition","feature":"Toggle","into":"On"}"#,
    ]

    /// A manual-clock dispatcher of Toggle whose journal writer writes to `log`.
    func harness(_ log: MemoryLog) -> Harness {
        let h = Harness(options: #"{"clock":"manual"}"#, Seeds.toggle)
        let core = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(h.d)).takeUnretainedValue()
        core.journal = JournalWriter(log: log)
        core.hot.journaling = true
        return h
    }

    @Test func anotherLogGetsTheLinesTheJournalFileGets() throws {
        let path = temporaryPath("mutation-log")
        defer { unlink(path) }
        let file = Harness(options: #"{"clock":"manual","journal":"\#(path)"}"#, Seeds.toggle)
        let log = MemoryLog()
        let memory = harness(log)
        for action in Self.actions {
            #expect(file.submit(action) == UF_OK)
            #expect(memory.submit(action) == UF_OK)
        }
        #expect(uf_submit_batch(file.d, #"[{"kind":"transition","feature":"Toggle","into":"Off"}]"#) == UF_OK)
        #expect(uf_submit_batch(memory.d, #"[{"kind":"transition","feature":"Toggle","into":"Off"}]"#) == UF_OK)
        let written = try FileReader.read(path).split(separator: "\n").map(String.init).dropFirst()  // the header
        // One change, one accept: each mutation's line, then the batch's one line.
        #expect(log.accepted == written.map { [$0] })
    }

    @Test func aRefusedChangeIsNeitherAppliedNorSeen() {
        let log = MemoryLog()
        let h = harness(log)
        let seen = h.record()
        #expect(h.submit(Self.actions[0]) == UF_OK)
        let before = h.state
        log.refusal = UniFlowError(.io, "the record sink is unreachable")
        #expect(h.submit(Self.actions[1]) == UF_EIO)
        #expect(h.lastError == "the record sink is unreachable")
        #expect(h.state == before)
        #expect(seen.mutations.count == 1)
        #expect(log.accepted.count == 1)
    }
}
