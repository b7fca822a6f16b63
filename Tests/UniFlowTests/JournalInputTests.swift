import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// Journals read back as they are found on disk: a torn last line cut inside a
/// character, Windows line ends, and hand-edited lines with numbers a journaling
/// dispatcher never writes (docs/journal.md).
@Suite struct JournalInputs {
    /// Toggle, and a keyed feature for lines about instances: registered in one
    /// call, so that the journal has one header line.
    static let definitions = #"[\#(Seeds.toggle), {"feature": "Slot", "instances": "keyed", "states": {"Free": {}}}]"#

    /// A journal of Toggle and Slot: the header, then three mutations of Toggle; its lines.
    func journal(_ path: String) -> [String] {
        let h = Harness(options: #"{"journal":"\#(path)"}"#, Self.definitions)
        precondition(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        precondition(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        precondition(h.submit(#"{"kind":"transition","feature":"Toggle","into":"Off"}"#) == UF_OK)
        let text = (try? FileReader.read(path)) ?? ""
        return text.split(separator: "\n").map(String.init)
    }

    func write(_ path: String, _ text: String) {
        let file = fopen(path, "wb")!
        _ = text.withCString { fwrite($0, 1, strlen($0), file) }
        fclose(file)
    }

    func replay(_ path: String) -> (status: Int32, error: String, state: String) {
        let r = Harness(Self.definitions)
        let status = uf_replay_file(r.d, path)
        return (status, status == UF_OK ? "" : r.lastError, r.state)
    }

    @Test func aTornLastLineCutInsideACharacterIsSkipped() {
        let path = temporaryPath("torn-utf8")
        defer { unlink(path) }
        let lines = journal(path)
        // The writer died two bytes into "é" (0xC3 0xA9) of a last line.
        write(path, lines.joined(separator: "\n") + "\n" + #"{"seq":4,"feature":"Toggle","context":"caf"# + "\u{C3}")
        var bytes = Array((try? FileReader.bytes(path)) ?? [])
        bytes.removeLast()  // the second byte of the character
        let file = fopen(path, "wb")!
        _ = bytes.withUnsafeBytes { fwrite($0.baseAddress, 1, $0.count, file) }
        fclose(file)
        let r = replay(path)
        #expect(r.status == UF_OK, "\(r.error)")
        #expect(r.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
    }

    @Test func windowsLineEndsReadLikeUnixOnes() {
        let path = temporaryPath("crlf")
        defer { unlink(path) }
        let lines = journal(path)
        write(path, lines.joined(separator: "\r\n") + "\r\n")
        let r = replay(path)
        #expect(r.status == UF_OK, "\(r.error)")
        #expect(r.state == #"{"Toggle":{"state":"Off","payload":{}}}"#)
    }

    @Test(arguments: ["9223372036854775807", "9007199254740993", "-5", "1.5", #""3""#])
    func aSeqNoJournalingDispatcherWritesIsRefused(seq: String) {
        let path = temporaryPath("bad-seq")
        defer { unlink(path) }
        var lines = journal(path)
        precondition(lines[3].hasPrefix(#"{"seq":3,"#))
        lines[3] = #"{"seq":\#(seq)"# + lines[3].dropFirst(#"{"seq":3"#.count)
        write(path, lines.joined(separator: "\n") + "\n")
        let r = replay(path)
        #expect(r.status == UF_ESCHEMA)
        #expect(r.error.hasSuffix(": line 4: seq: expected an integer from 0 to 2^53, got \(seq)"), "\(r.error)")
        #expect(r.state == "{}")
    }

    @Test func aDispatcherThatReplaysJournalsTheSeqItGoesOnFrom() {
        let first = temporaryPath("seq-first"), second = temporaryPath("seq-second")
        defer { unlink(first); unlink(second) }
        _ = journal(first)
        // A second journaling dispatcher replays the first journal and stops; a third
        // replays the second's: its next mutation is 4, not 1.
        do {
            let h = Harness(options: #"{"journal":"\#(second)"}"#, Self.definitions)
            #expect(uf_replay_file(h.d, first) == UF_OK)
        }
        let h = Harness(Self.definitions)
        #expect(uf_replay_file(h.d, second) == UF_OK)
        var seq: UInt64 = 0
        h.subscribe(nil) { m in seq = uf_mutation_seq(m); return 0 }
        #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
        #expect(seq == 4)
    }

    /// A line no journaling dispatcher writes, after three good ones: the replay
    /// fails naming the file and the line, and nothing changes.
    @Test(arguments: [
        // Armed API timers no caller could have armed.
        (armedLine(#""id":"t","ms":1152921504606846976,"due_at":5,"action":{"kind":"trigger","feature":"Toggle"}"#),
         UF_ESCHEMA, "a timer line's 'ms' is at most 2^53 and its 'due_at' at most 2^54"),
        (armedLine(#""id":"t","ms":5,"due_at":1152921504606846976,"action":{"kind":"trigger","feature":"Toggle"}"#),
         UF_ESCHEMA, "a timer line's 'ms' is at most 2^53 and its 'due_at' at most 2^54"),
        (armedLine(#""id":"x\u0000y","ms":5,"due_at":5,"action":{"kind":"trigger","feature":"Toggle"}"#),
         UF_ESCHEMA, "timer: a timer id contains \\u0000"),
        (armedLine(#""id":5,"ms":5,"due_at":5,"action":{"kind":"trigger","feature":"Toggle"}"#),
         UF_ESCHEMA, "timer: 'id' is a string or null, got number"),
        (armedLine(#""id":"Toggle.On.after[0]","ms":5,"due_at":5,"action":{"kind":"trigger","feature":"Toggle"}"#),
         UF_ESCHEMA, "timer: 'Toggle.On.after[0]' is shaped like a state timer's id (it contains '.after[')"),
        (armedLine(#""id":"t","ms":5,"due_at":5,"action":{"kind":"trigger","feature":"Nope"}"#),
         UF_ENOTFOUND, "action: unknown feature 'Nope'"),
        // Lines of the wrong shape.
        ("[1]", UF_ESCHEMA, "a journal line must be an object"),
        (#""seq""#, UF_ESCHEMA, "a journal line must be an object"),
        (#"{"seq":4,"batch":{}}"#, UF_ESCHEMA, "'batch' must be an array"),
        (#"{"seq":4,"batch":[1]}"#, UF_ESCHEMA, "a batch holds objects"),
        // Restore lines' timers.
        (#"{"restore":{},"timers":{}}"#, UF_ESCHEMA, "'timers' must be an array"),
        (#"{"restore":{},"timers":[{"kind":"api"}]}"#, UF_ESCHEMA, "a restored timer needs 'kind' and 'due_at'"),
        (#"{"restore":{},"timers":[{"kind":"api","due_at":-1}]}"#, UF_ESCHEMA, "a restored timer needs 'kind' and 'due_at'"),
        (#"{"restore":{},"timers":[7]}"#, UF_ESCHEMA, "a restored timer needs 'kind' and 'due_at'"),
        (#"{"restore":{"Toggle":{"state":"On"}},"timers":[{"kind":"state","due_at":5,"id":"Toggle.On.after[0]"}]}"#,
         UF_ESCHEMA, "a restored state timer needs the 'id' of a state timer of the model"),
        (#"{"restore":{},"timers":[{"kind":"state","due_at":5}]}"#,
         UF_ESCHEMA, "a restored state timer needs the 'id' of a state timer of the model"),
        (#"{"restore":{},"timers":[{"kind":"nope","due_at":5}]}"#, UF_ESCHEMA, #"a restored timer's 'kind' is "state" or "api""#),
        (#"{"restore":{},"timers":[{"due_at":5}]}"#, UF_ESCHEMA, #"a restored timer's 'kind' is "state" or "api""#),
        (#"{"restore":{},"timers":[{"kind":"api","due_at":5}]}"#, UF_ESCHEMA, "a timer line needs 'serial', 'ms', 'due_at' and 'action'"),
        // Timer lines.
        (#"{"timer":"armed","serial":1}"#, UF_ESCHEMA, "a timer line needs 'serial', 'ms', 'due_at' and 'action'"),
        (armedLine(#""ms":5,"due_at":5,"action":"trigger""#), UF_ESCHEMA, "a timer line needs 'serial', 'ms', 'due_at' and 'action'"),
        (#"{"timer":"cancelled"}"#, UF_ESCHEMA, "a timer line needs 'serial'"),
        (#"{"timer":"cancelled","serial":"9"}"#, UF_ESCHEMA, "a timer line needs 'serial'"),
        (#"{"timer":"fired"}"#, UF_ESCHEMA, "a fired or dropped timer line needs 'serial' or 'id'"),
        (#"{"timer":"dropped","id":3}"#, UF_ESCHEMA, "a fired or dropped timer line needs 'serial' or 'id'"),
        (#"{"timer":"paused"}"#, UF_ESCHEMA, #"unknown timer event "paused""#),
        (#"{"timer":1}"#, UF_ESCHEMA, "unknown timer event 1"),
        (#"{"seq":4,"batch":[{"timer":"paused"}]}"#, UF_ESCHEMA, #"unknown timer event "paused""#),
        // Mutation lines.
        (#"{"seq":4,"kind":"transition","state":"On","payload":{}}"#, UF_ESCHEMA, "missing 'feature'"),
        (#"{"seq":4,"feature":"Toggle","kind":"transition","state":"On"}"#, UF_ESCHEMA, "missing 'payload' object"),
        (#"{"seq":4,"feature":"Toggle","kind":"transition","state":"On","payload":[]}"#, UF_ESCHEMA, "missing 'payload' object"),
        (#"{"seq":4,"feature":"Toggle","kind":"transition","payload":{}}"#, UF_ESCHEMA, "missing 'state'"),
        (#"{"seq":4,"feature":"Slot","kind":"initialization","state":"Free","payload":{}}"#, UF_ESCHEMA, "Slot is keyed: missing 'key'"),
        (#"{"seq":4,"feature":"Toggle","key":"a","kind":"transition","state":"On","payload":{}}"#,
         UF_ESCHEMA, "Toggle is a single feature: unexpected 'key'"),
        (#"{"seq":4,"feature":"Slot","key":1,"kind":"initialization","state":"Free","payload":{}}"#,
         UF_ESCHEMA, "'key': expected string, got number"),
        (#"{"seq":4,"batch":[{"feature":"Slot","key":null,"kind":"initialization","state":"Free","payload":{}}]}"#,
         UF_ESCHEMA, "'key': expected string, got null"),
    ])
    func aLineNoJournalingDispatcherWritesIsRefused(line: String, status: Int32, message: String) {
        let path = temporaryPath("bad-line")
        defer { unlink(path) }
        var lines = journal(path)
        lines.append(line)
        write(path, lines.joined(separator: "\n") + "\n")
        let r = replay(path)
        #expect(r.status == status)
        #expect(r.error == "\(path): line 5: \(message)")
        #expect(r.state == "{}")
    }
}

/// An armed API timer line with these fields.
private func armedLine(_ fields: String) -> String { #"{"timer":"armed","serial":9,\#(fields)}"# }
