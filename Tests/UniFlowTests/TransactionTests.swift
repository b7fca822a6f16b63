import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Batches, snapshots and journals (docs/actions.md#batches, docs/journal.md).
@Suite struct Transactions {
    /// A journal at `path` of one action: Toggle initialized into On.
    func journalToggleOn(_ path: String) {
        let writer = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.toggle)
        writer.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
    }

    @Test func aBatchWhoseThirdActionIsRejectedChangesNothingAndNotifiesNobody() {
        let h = Harness(Seeds.fileDownloading, Seeds.toggle)
        h.captureReports()
        let recorder = h.record()
        let status = uf_submit_batch(h.d, """
        [{"kind":"initialize","feature":"Toggle","into":"Off"},
         {"kind":"initialize","feature":"FileDownloading","into":"Starting"},
         {"kind":"transition","feature":"FileDownloading","from":"InProgress","into":"Completed"}]
        """)
        #expect(status == UF_REJECTED)
        #expect(h.lastError == "batch[2]: FileDownloading is in state Starting, not InProgress")
        #expect(h.state == "{}")
        #expect(recorder.mutations.isEmpty)
        #expect(h.reports.count == 1)
        #expect(h.reports[0].hasPrefix(#"{"event":"rejected","action":{"kind":"transition","feature":"FileDownloading""#))
        // seq did not advance: the next mutation is the first.
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(recorder.mutations[0].hasPrefix(#"{"seq":1,"#))
    }

    @Test func aSuccessfulBatchIsAnnouncedInOrderAgainstTheCommittedModel() {
        let h = Harness(Seeds.fileDownloading, Seeds.toggle)
        var seen: [String] = []
        h.subscribe(nil) { m in
            var out: UnsafeMutablePointer<CChar>?
            uf_state_get(uf_mutation_dispatcher(m), &out)
            seen.append("\(uf_mutation_seq(m)) \(String(cString: out!))")
            uf_free(out)
            return 0
        }
        #expect(uf_submit_batch(h.d, """
        [{"kind":"initialize","feature":"Toggle","into":"Off"},
         {"kind":"transition","feature":"Toggle","into":"On"}]
        """) == UF_OK)
        let final = #"{"Toggle":{"state":"On","payload":{}}}"#
        #expect(seen == ["1 \(final)", "2 \(final)"])
    }

    /// B and the keyed K each have a binding on every mutation of X.
    static let ownersOfXBindings = [
        #"{"feature":"X","states":{"S":{}}}"#,
        #"{"feature":"B","states":{"S":{}},"bindings":[{"scenario":"B sees X","when":"AnyMutationOf<X>","then":{"submit":[]}}]}"#,
        #"{"feature":"K","instances":"keyed","states":{"S":{}},"bindings":[{"scenario":"K sees X","when":"AnyMutationOf<X>","then":{"submit":[]}}]}"#,
    ]

    @Test(arguments: [
        // B begins after X's initialization, ends after it, begins and ends around it.
        ([], [#"{"kind":"initialize","feature":"X","into":"S"}"#, #"{"kind":"initialize","feature":"B","into":"S"}"#], [String]()),
        ([#"{"kind":"initialize","feature":"B","into":"S"}"#],
         [#"{"kind":"initialize","feature":"X","into":"S"}"#, #"{"kind":"deinitialize","feature":"B"}"#], ["B sees X"]),
        ([], [#"{"kind":"initialize","feature":"B","into":"S"}"#, #"{"kind":"initialize","feature":"X","into":"S"}"#,
              #"{"kind":"deinitialize","feature":"B"}"#], ["B sees X"]),
        // K's last instance ends after X's mutation; its first begins after.
        ([], [#"{"kind":"initialize","feature":"K","key":"a","into":"S"}"#, #"{"kind":"initialize","feature":"X","into":"S"}"#,
              #"{"kind":"deinitialize","feature":"K","key":"a"}"#], ["K sees X"]),
        ([#"{"kind":"initialize","feature":"X","into":"S"}"#],
         [#"{"kind":"actualize","feature":"X","in":"S"}"#, #"{"kind":"initialize","feature":"K","key":"a","into":"S"}"#], []),
    ] as [([String], [String], [String])])
    func aBindingOfAFeatureTheBatchBeginsOrEndsRunsWhereItWouldOneActionAtATime(
        before: [String], actions: [String], expected: [String]
    ) {
        func bindingsRun(asBatch: Bool) -> [String] {
            let h = Harness(Self.ownersOfXBindings[0], Self.ownersOfXBindings[1], Self.ownersOfXBindings[2])
            for action in before { h.submit(action) }
            h.captureReports()
            if asBatch {
                #expect(uf_submit_batch(h.d, "[\(actions.joined(separator: ","))]") == UF_OK, "\(h.lastError)")
            } else {
                for action in actions { h.submit(action) }
            }
            return h.reports.compactMap { report in
                guard report.hasPrefix(#"{"event":"binding_processed""#),
                      let start = report.firstRange(of: #""binding":""#)?.upperBound else { return nil }
                return String(report[start...].prefix { $0 != "\"" })
            }
        }
        #expect(bindingsRun(asBatch: false) == expected)
        #expect(bindingsRun(asBatch: true) == expected)
    }

    @Test func aBatchLongerThanTheCascadeLimitAppliesWholeAndOnlyWhatItQueuesIsDropped() {
        // Ping's binding answers every transition into On with one back to Off.
        let h = Harness(options: #"{"max_cascade": 2}"#, #"""
        {"feature": "Ping", "states": {"Off": {}, "On": {}},
         "bindings": [{"when": "TransitionInto<Ping.On>", "then": {"submit": [{"kind": "transition", "feature": "Ping", "into": "Off"}]}}]}
        """#)
        h.captureReports()
        #expect(uf_submit_batch(h.d, #"[{"kind":"initialize","feature":"Ping","into":"Off"},{"kind":"transition","feature":"Ping","into":"On"},{"kind":"transition","feature":"Ping","into":"Off"},{"kind":"transition","feature":"Ping","into":"On"}]"#) == UF_OK)
        #expect(h.state == #"{"Ping":{"state":"On","payload":{}}}"#)
        // The binding's two transitions back to Off came past the limit.
        #expect(h.reports.filter { $0.hasPrefix(#"{"event":"dropped""#) }.count == 2)
    }

    @Test func batchInputErrorsNameTheIndex() {
        let h = Harness(Seeds.toggle)
        #expect(uf_submit_batch(h.d, #"[{"kind":"initialize","feature":"Toggle","into":"Off"},{"kind":"initialize","feature":"Nope","into":"Off"}]"#) == UF_ENOTFOUND)
        #expect(h.lastError == "batch[1]: unknown feature 'Nope'")
        #expect(uf_submit_batch(h.d, #"{"kind":"initialize"}"#) == UF_ESCHEMA)
        // An action that is not one at all is the failure before any that does not
        // resolve, wherever it stands.
        #expect(uf_submit_batch(h.d, #"[{"kind":"initialize","feature":"Nope","into":"Off"},{"kind":"initialize","feature":"Toggle","into":"Off"},{"feature":"Toggle"}]"#) == UF_ESCHEMA)
        #expect(h.lastError == "batch[2]: action: missing key 'kind'")
        #expect(uf_submit_batch(h.d, #"[{"kind":"initialize","feature":"Toggle","into":"Nope"},{"kind":"initialize","feature":"Nope","into":"Off"}]"#) == UF_ENOTFOUND)
        #expect(h.lastError == "batch[0]: unknown state 'Nope' of feature Toggle")
        #expect(h.state == "{}")
    }

    @Test(arguments: [
        ("{}", "object"), (#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#, "object"),
        (#""x""#, "string"), ("null", "null"), ("3", "number"), ("true", "boolean"),
    ])
    func aBatchThatIsNotAnArrayIsRefused(batch: String, type: String) {
        let h = Harness(Seeds.toggle)
        let recorder = h.record()
        #expect(uf_submit_batch(h.d, batch) == UF_ESCHEMA)
        #expect(h.lastStatus == UF_ESCHEMA)
        #expect(h.lastError == "a batch must be an array of actions, got \(type)")
        #expect(h.state == "{}")
        #expect(recorder.mutations.isEmpty)
    }

    @Test func batchesRestoresAndReplaysAreRefusedInsideCallbacks() {
        let h = Harness(Seeds.toggle)
        var statuses: [Int32] = []
        h.subscribe(nil) { m in
            let d = uf_mutation_dispatcher(m)
            statuses.append(uf_submit_batch(d, "[]"))
            statuses.append(uf_state_restore(d, "{}"))
            statuses.append(uf_replay_file(d, "/dev/null"))
            return 0
        }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(statuses == [UF_EMISUSE, UF_EMISUSE, UF_EMISUSE])
    }

    @Test func aSnapshotRestoresExactlyOnAFreshDispatcher() {
        let source = Harness(Seeds.fileDownloading, Seeds.main)
        source.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        source.submit(#"{"kind":"transition","feature":"FileDownloading","into":"Failed","payload":{"reason":"disk"}}"#)
        source.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":7}}"#)
        let snapshot = source.state
        let copy = Harness(Seeds.fileDownloading, Seeds.main)
        let recorder = copy.record()
        #expect(uf_state_restore(copy.d, snapshot) == UF_OK)
        #expect(copy.state == snapshot)
        #expect(recorder.mutations.isEmpty)
    }

    @Test func anInvalidRestoreChangesNothing() {
        let h = Harness(Seeds.fileDownloading)
        h.submit(#"{"kind":"initialize","feature":"FileDownloading","into":"Starting"}"#)
        let before = h.state
        #expect(uf_state_restore(h.d, #"{"FileDownloading":{"state":"Nope","payload":{}}}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'Nope' of feature FileDownloading")
        #expect(uf_state_restore(h.d, #"{"FileDownloading":{"state":"InProgress","payload":{"progress":"x"}}}"#) == UF_ESCHEMA)
        #expect(uf_state_restore(h.d, "[]") == UF_ESCHEMA)
        #expect(h.state == before)
    }

    /// A model of the wrong shape is refused by name, as any missing or ill-typed
    /// key is (`missing key 'x'`, `x: expected T, got U`), and changes nothing.
    @Test(arguments: [
        ("[]", "a model must be an object, got array"),
        (#""Toggle""#, "a model must be an object, got string"),
        ("null", "a model must be an object, got null"),
        (#"{"Toggle":{"payload":{}}}"#, "Toggle: missing key 'state'"),
        (#"{"Toggle":{}}"#, "Toggle: missing key 'state'"),
        (#"{"Toggle":{"state":1}}"#, "Toggle.state: expected string, got number"),
        (#"{"Toggle":{"state":null,"payload":{}}}"#, "Toggle.state: expected string, got null"),
        (#"{"Slot":{"a":{"payload":{}}}}"#, "Slot.a: missing key 'state'"),
        (#"{"Slot":{"a":{"state":"Free"},"b":{"state":["Free"]}}}"#, "Slot.b.state: expected string, got array"),
    ])
    func aRestoreOfTheWrongShapeIsRefusedByName(model: String, message: String) {
        let h = Harness(Seeds.toggle, #"{"feature": "Slot", "instances": "keyed", "states": {"Free": {}}}"#)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        let before = h.state
        let recorder = h.record()
        #expect(uf_state_restore(h.d, model) == UF_ESCHEMA)
        #expect(h.lastStatus == UF_ESCHEMA)
        #expect(h.lastError == message)
        #expect(h.state == before)
        #expect(recorder.mutations.isEmpty)
    }


    @Test func aJournalReplaysToTheSameModel() throws {
        let path = temporaryPath("journal")
        defer { unlink(path) }
        let writer = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.main, Seeds.toggle)
        writer.submit(#"{"kind":"initialize","feature":"Main","into":"Main"}"#) { ctx in uf_context_become(ctx, #"{"val":41}"#) }
        writer.submit(#"{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":42}}"#)
        writer.submit(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#)
        writer.submit(#"{"kind":"deinitialize","feature":"Toggle"}"#)
        let expected = writer.state
        let reader = Harness(Seeds.main, Seeds.toggle)
        let recorder = reader.record()
        #expect(uf_replay_file(reader.d, path) == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        #expect(recorder.mutations.isEmpty)
    }

    @Test func aJournalCutAtEveryOffsetOfItsLastLineReplaysThePrefix() throws {
        let path = temporaryPath("cut")
        defer { unlink(path) }
        do {
            let writer = Harness(options: #"{"journal":"\#(path)","journal_sync":true}"#, Seeds.main)
            writer.submit(#"{"kind":"initialize","feature":"Main","into":"Main","payload":{"val":1}}"#)
            writer.submit(#"{"kind":"actualize","feature":"Main","in":"Main","payload":{"val":2}}"#)
        }
        let bytes = try #require(readAll(path))
        let lastLineStart = bytes.dropLast().lastIndex(of: UInt8(ascii: "\n"))! + 1
        for cut in lastLineStart..<bytes.count {
            let partial = temporaryPath("partial")
            defer { unlink(partial) }
            writeAll(partial, Array(bytes[0..<cut]))
            let reader = Harness(Seeds.main)
            reader.captureReports()
            #expect(uf_replay_file(reader.d, partial) == UF_OK)
            #expect(reader.state == #"{"Main":{"state":"Main","payload":{"val":1}}}"#)
            #expect(reader.reports.count == (cut == lastLineStart ? 0 : 1))
        }
    }

    @Test func aJournalOfOtherDefinitionsIsRefused() {
        let path = temporaryPath("other")
        defer { unlink(path) }
        journalToggleOn(path)
        let reader = Harness(Seeds.main, Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_ESCHEMA)
        #expect(reader.lastError.contains("was written for other definitions"))
        #expect(reader.state == "{}")
        #expect(uf_replay_file(reader.d, "/nonexistent.jsonl") == UF_EIO)
    }

    @Test func aHeaderWhoseKeyIsWrittenWithEscapesIsAHeader() throws {
        // Toggle's journal, then the same with every header's key spelled
        // "uniflow\u005fjournal": it replays the same; and a later such header of
        // other definitions is refused as the plain one is.
        let path = temporaryPath("escaped")
        defer { unlink(path) }
        journalToggleOn(path)
        let escaped = try String(decoding: #require(readAll(path)), as: UTF8.self)
            .replacing(#""uniflow_journal""#, with: #""uniflow\u005fjournal""#)
        #expect(escaped.contains(#"\u005f"#))
        writeAll(path, Array(escaped.utf8))
        let reader = Harness(Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_OK)
        #expect(reader.state == #"{"Toggle":{"state":"On","payload":{}}}"#)

        let header = escaped.split(separator: "\n")[0]
        let other = header.replacing(#""fingerprint":""#, with: #""fingerprint":"0"#)
        writeAll(path, Array((escaped + other + "\n").utf8))
        let refusing = Harness(Seeds.toggle)
        #expect(uf_replay_file(refusing.d, path) == UF_ESCHEMA)
        #expect(refusing.lastError.contains("was written for other definitions"))
        #expect(refusing.state == "{}")
    }

    @Test func aFileWithoutAHeaderLineIsNotAJournal() {
        let path = temporaryPath("actions")
        defer { unlink(path) }
        writeAll(path, Array(#"{"kind":"initialize","feature":"Toggle","into":"On"}"#.utf8) + [10, 10])
        let reader = Harness(Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_ESCHEMA)
        #expect(reader.lastError == "\(path): line 1: not a uniflow journal (no header line)")
        #expect(reader.state == "{}")
    }

    @Test func aCorruptLineFailsTheWholeReplay() {
        let path = temporaryPath("corrupt")
        defer { unlink(path) }
        journalToggleOn(path)
        var bytes = readAll(path)!
        bytes += Array(#"{"seq":2,"feature":"Toggle","kind":"transition","state":"Nope","payload":{}}"#.utf8) + [10]
        bytes += Array(#"{"seq":3,"feature":"Toggle","kind":"transition","state":"Off","payload":{}}"#.utf8) + [10]
        writeAll(path, bytes)
        let reader = Harness(Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_ENOTFOUND)
        #expect(reader.lastError.contains("line 3"))
        #expect(reader.state == "{}")
    }

    @Test func reopeningAJournalCutsATornLineAndAppends() {
        let path = temporaryPath("reopen")
        defer { unlink(path) }
        journalToggleOn(path)
        writeAll(path, readAll(path)! + Array(#"{"seq":2,"feat"#.utf8))
        do {
            let writer = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.toggle)
            writer.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        }
        let reader = Harness(Seeds.toggle)
        #expect(uf_replay_file(reader.d, path) == UF_OK, "\(reader.lastError)")
        #expect(reader.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
    }

    @Test(arguments: [65_535, 65_536, 200_000])
    func aTornLineLongerThanTheBlocksReadIsCutWhole(length: Int) {
        let path = temporaryPath("reopen-long")
        defer { unlink(path) }
        journalToggleOn(path)
        let whole = readAll(path)!
        writeAll(path, whole + [UInt8](repeating: UInt8(ascii: "x"), count: length))
        do { _ = Harness(options: #"{"journal":"\#(path)"}"#, Seeds.toggle) }
        // Cut back to the last newline; the new session's header follows it.
        let reopened = readAll(path)!
        #expect(Array(reopened.prefix(whole.count)) == whole)
        #expect(!reopened.dropFirst(whole.count).contains(UInt8(ascii: "x")))
    }
}

func readAll(_ path: String) -> [UInt8]? {
    guard let file = fopen(path, "rb") else { return nil }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let n = fread(&chunk, 1, chunk.count, file)
        bytes += chunk[0..<n]
        if n < chunk.count { return bytes }
    }
}

func writeAll(_ path: String, _ bytes: [UInt8]) {
    let file = fopen(path, "wb")!
    _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
}
