import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// A journal keeps what statechart instances run (docs/journal.md, "Invocation
// lines"): a replay starts what ran when the journal ended, with the input it
// started with, and nothing that had settled.

private let fetcher = #"""
{"feature": "F",
 "fields": {"n": {"type": "number", "default": 1}},
 "states": {
   "Idle": {"on": {"load": "Loading", "both": "Both"}},
   "Loading": {"invoke": {"src": "fetch", "id": "get", "input": {"n": {"$": {"var": "feature.payload.n"}}},
                          "onDone": {"actions": [{"assign": {"n": 100}}]}},
               "on": {"bump": {"actions": [{"assign": {"n": {"$": {"+": [{"var": "feature.payload.n"}, 1]}}}}]},
                      "cancel": "Idle"}},
   "Both": {"invoke": [{"src": "fetch", "id": "first"}, {"src": "fetch", "id": "second"}],
            "on": {"cancel": "Idle"}}}}
"""#

/// Runs `body` on a dispatcher that journals to a new file, with `fetch`
/// registered and F initialized in Idle, and frees it; returns the journal's
/// path (the caller unlinks it) and the model the dispatcher ended with.
private func journaled(_ log: ServiceLog = ServiceLog(), _ body: (Harness) -> Void) -> (path: String, model: String) {
    let path = temporaryPath("chart-services")
    let h = Harness(options: #"{"journal":"\#(path)"}"#)
    #expect(registerService(h, "fetch", log) == UF_OK)
    #expect(uf_register(h.d, fetcher) == UF_OK, "\(h.lastError)")
    #expect(h.submit(#"{"kind":"initialize","feature":"F","into":"Idle"}"#) == UF_OK, "\(h.lastError)")
    body(h)
    return (path, h.state)
}

/// A dispatcher that replays the journal at `path`, with its own `fetch`.
private func replayed(_ path: String, _ log: ServiceLog) -> (Harness, Int32) {
    let h = Harness()
    #expect(registerService(h, "fetch", log) == UF_OK)
    #expect(uf_register(h.d, fetcher) == UF_OK, "\(h.lastError)")
    return (h, uf_replay_file(h.d, path))
}

private func send(_ h: Harness, _ event: String) -> Int32 { uf_send(h.d, "F", nil, event, nil) }

private func lines(_ path: String) -> [String] {
    guard let file = fopen(path, "r") else { return [] }
    defer { fclose(file) }
    var result: [String] = []
    var line: UnsafeMutablePointer<CChar>? = nil
    var capacity = 0
    while getline(&line, &capacity, file) > 0 { result.append(String(cString: line!)) }
    free(line)
    return result
}

private func append(_ text: String, to path: String) {
    let file = fopen(path, "a")!
    fputs(text, file)
    fclose(file)
}

@Suite struct StatechartJournalServiceTests {
    @Test func aReplayStartsWhatRanWithTheInputItStartedWith() {
        let (path, expected) = journaled { h in
            #expect(send(h, "load") == UF_OK)
            // The payload moves on; the running invocation keeps its input.
            #expect(send(h, "bump") == UF_OK)
        }
        defer { unlink(path) }
        #expect(expected == #"{"F":{"state":"Loading","payload":{"n":2},"invocations":[{"id":"get","src":"fetch","input":{"n":1}}]}}"#)
        #expect(lines(path).contains { $0.hasPrefix(#"{"invocations":[{"id":"get","src":"fetch","input":{"n":1}}],"feature":"F","at":"#) })
        let again = ServiceLog()
        let (reader, status) = replayed(path, again)
        #expect(status == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        #expect(again.started.map(\.id) == ["get"])
        #expect(again.started.map(\.input) == [#"{"n":1}"#])
        // It runs for real: its result is taken as the writer's would be.
        #expect(uf_service_done(reader.d, again.started[0].serial, "7") == UF_OK)
        #expect(reader.state == #"{"F":{"state":"Loading","payload":{"n":100}}}"#)
    }

    @Test func aServiceThatSettledWithoutLeavingItsStateDoesNotStartAgain() {
        let log = ServiceLog()
        let (path, expected) = journaled(log) { h in
            #expect(send(h, "load") == UF_OK)
            #expect(uf_service_done(h.d, log.started[0].serial, nil) == UF_OK)
        }
        defer { unlink(path) }
        #expect(expected == #"{"F":{"state":"Loading","payload":{"n":100}}}"#)
        let again = ServiceLog()
        let (reader, status) = replayed(path, again)
        #expect(status == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        #expect(again.started.isEmpty)
    }

    @Test func aServiceDoneInsideItsStartLeavesTheOthersListed() {
        let log = ServiceLog()
        log.doneInStart = ["first"]
        let (path, expected) = journaled(log) { h in
            #expect(send(h, "both") == UF_OK)
            #expect(log.started.map(\.id) == ["first", "second"])
        }
        defer { unlink(path) }
        #expect(expected == #"{"F":{"state":"Both","payload":{"n":1},"invocations":[{"id":"second","src":"fetch","input":null}]}}"#)
        let again = ServiceLog()
        let (reader, status) = replayed(path, again)
        #expect(status == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        #expect(again.started.map(\.id) == ["second"])
    }

    @Test func aLeftStateStopsItsServiceInTheJournalToo() {
        let log = ServiceLog()
        let (path, _) = journaled(log) { h in
            #expect(send(h, "load") == UF_OK)
            #expect(send(h, "cancel") == UF_OK)
            #expect(log.stopped == [log.started[0].serial])
        }
        defer { unlink(path) }
        let again = ServiceLog()
        let (reader, status) = replayed(path, again)
        #expect(status == UF_OK, "\(reader.lastError)")
        #expect(reader.state == #"{"F":{"state":"Idle","payload":{"n":1}}}"#)
        #expect(again.started.isEmpty)
    }

    @Test func aBatchListsWhatItsServicesLeaveRunning() {
        let log = ServiceLog()
        let (path, expected) = journaled(log) { h in
            let batch = #"[{"kind":"send","feature":"F","event":"load"},{"kind":"send","feature":"F","event":"bump"},{"kind":"send","feature":"F","event":"cancel"},{"kind":"send","feature":"F","event":"both"}]"#
            #expect(uf_submit_batch(h.d, batch) == UF_OK, "\(h.lastError)")
            // Loading was left before the batch held: its service never ran.
            #expect(log.started.map(\.id) == ["first", "second"])
        }
        defer { unlink(path) }
        let again = ServiceLog()
        let (reader, status) = replayed(path, again)
        #expect(status == UF_OK, "\(reader.lastError)")
        #expect(reader.state == expected)
        #expect(again.started.map(\.id) == ["first", "second"])
    }

    @Test func aRestoreLineListsWhatTheRestoreStarted() {
        let log = ServiceLog()
        let model = #"{"F":{"state":"Loading","payload":{"n":5},"invocations":[{"id":"get","src":"fetch","input":{"n":3}}]}}"#
        let (path, _) = journaled(log) { h in
            #expect(send(h, "load") == UF_OK)
            #expect(uf_state_restore(h.d, model) == UF_OK, "\(h.lastError)")
            #expect(log.stopped == [log.started[0].serial])
            #expect(log.started.map(\.input) == [#"{"n":1}"#, #"{"n":3}"#])
        }
        defer { unlink(path) }
        #expect(lines(path).contains { $0.contains(#""restore":\#(model)"#) })
        let again = ServiceLog()
        let (reader, status) = replayed(path, again)
        #expect(status == UF_OK, "\(reader.lastError)")
        #expect(reader.state == model)
        #expect(again.started.map(\.input) == [#"{"n":3}"#])
    }

    @Test func aBadInvocationLineFailsTheReplayAndChangesNothing() {
        let (path, _) = journaled { h in #expect(send(h, "load") == UF_OK) }
        defer { unlink(path) }
        let good = lines(path).joined()
        for (line, expected, message) in [
            (#"{"invocations":[{"id":"nope","src":"fetch","input":null}],"feature":"F","at":0}"#, UF_ESCHEMA,
             "F.invocations[0]: no active state of F invokes 'fetch' as 'nope'"),
            (#"{"invocations":[{"id":"get"}],"feature":"F","at":0}"#, UF_ESCHEMA,
             #"F.invocations[0]: expected {"id", "src", "input"}, got {"id":"get"}"#),
            (#"{"invocations":"get","feature":"F","at":0}"#, UF_ESCHEMA, "F.invocations: expected an array, got string"),
            (#"{"invocations":[],"feature":"G","at":0}"#, UF_ENOTFOUND, "unknown feature 'G'"),
            (#"{"invocations":[],"at":0}"#, UF_ESCHEMA, "missing 'feature'"),
        ] {
            unlink(path)
            append(good + line + "\n", to: path)
            let again = ServiceLog()
            let (reader, status) = replayed(path, again)
            #expect(status == expected, "\(line)")
            #expect(reader.lastError.hasSuffix(message), "\(reader.lastError)")
            #expect(reader.state == "{}")
            #expect(again.started.isEmpty)
        }
    }

    @Test func anInvocationLineOfAnInstanceNotInitializedFailsTheReplay() {
        let (path, _) = journaled { h in #expect(h.submit(#"{"kind":"deinitialize","feature":"F"}"#) == UF_OK) }
        defer { unlink(path) }
        append(#"{"invocations":[],"feature":"F","at":0}"# + "\n", to: path)
        let (reader, status) = replayed(path, ServiceLog())
        #expect(status == UF_ESCHEMA)
        #expect(reader.lastError.hasSuffix("F is not initialized"), "\(reader.lastError)")
    }
}
