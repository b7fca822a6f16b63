import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A plain send to a statechart feature (no guard or effect evaluated, one
/// microstep, nothing armed, started or queued) is applied the second time from
/// `StatechartStepCache` without the engine. The host must not be able to tell:
/// a reference dispatcher that journals (so never takes the fast path) and two
/// that do, driven with JSON and with `uf_send`, see the same statuses,
/// messages, mutations (with `entered`/`exited`) and model.
@Suite struct StatechartFastPathTests {
    static let definitions = [
        // Nested, with history: plain sends, and the history they leave behind.
        #"""
        {"feature": "Player", "initial": ["Off"],
         "states": {"Off": {"on": {"power": "On"}},
                    "On": {"initial": "Stopped", "on": {"power": "Off"},
                           "states": {"Stopped": {"on": {"play": "Playing"}},
                                      "Playing": {"initial": "Normal", "on": {"stop": "Stopped", "pause": "Paused"},
                                                  "states": {"Normal": {"on": {"fast": "Fast"}}, "Fast": {"on": {"fast": "Normal"}}}},
                                      "Paused": {"on": {"play": "Back"}},
                                      "Back": {"type": "history", "history": "deep"}}}}}
        """#,
        // Two regions; a guarded event and one with an entry effect (never plain).
        #"""
        {"feature": "Split", "type": "parallel",
         "fields": {"n": {"type": "integer", "default": 0}},
         "states": {"Left": {"initial": "A", "states": {"A": {"on": {"go": "B", "g": {"into": "B", "if": {"var": "event.payload.ok"}}}},
                                                        "B": {"on": {"go": "A", "g": "A"}}}},
                    "Right": {"initial": "C", "states": {"C": {"on": {"go": "D", "count": "D"}},
                                                         "D": {"entry": [{"assign": {"n": {"$": {"+": [{"var": "feature.payload.n"}, 1]}}}}],
                                                               "on": {"go": "C", "count": "C"}}}}}}
        """#,
        // Keyed instances; a targetless event; a final state.
        #"""
        {"feature": "Job", "instances": "keyed", "initial": ["Queued"],
         "states": {"Queued": {"on": {"start": "Running", "poke": {}}},
                    "Running": {"on": {"finish": "Done", "poke": {}, "back": "Queued"}},
                    "Done": {"type": "final"}}}
        """#,
    ]

    static let events = ["Player": ["power", "play", "stop", "pause", "fast", "nope"],
                         "Split": ["go", "g", "count", "nope"],
                         "Job": ["start", "poke", "finish", "back", "nope"]]
    static let initial = ["Player": "Off", "Split": "Left", "Job": "Queued"]

    /// Filters over `entered`/`exited` and active states, which a fast send
    /// must match as the engine's mutation does.
    static let filters = ["TransitionInto<Player.On.Playing>", "TransitionFrom<Split.Right.D>",
                          "TransitionBetween<Player.Normal, Player.Fast>", "ActualizationIn<Job.Running>"]

    private func make(journal: String? = nil) -> (Harness, Recorder, [Recorder]) {
        let h = Harness(options: journal.map { #"{"clock":"manual","journal":"\#($0)"}"# } ?? #"{"clock":"manual"}"#)
        for definition in Self.definitions {
            let status = uf_register(h.d, definition)
            precondition(status == UF_OK, h.lastError)
        }
        return (h, h.record(), Self.filters.map { h.record($0) })
    }

    @Test(arguments: [5, 6, 7] as [UInt64])
    func givenTheSameSends_whenTheFastPathTakesThem_thenEverythingMatchesTheGeneralPath(seed: UInt64) {
        let path = temporaryPath("chart-fast-path")
        defer { unlink(path) }
        let (reference, expectedMutations, expectedFiltered) = make(journal: path)
        let subjects = [make(), make()]
        var random = HotPath.Generator(state: seed)
        var applied = 0
        for i in 0..<3_000 {
            let feature = random.pick(["Player", "Player", "Split", "Job"])
            let key = feature == "Job" ? random.pick(["a", "b"]) : nil
            let keyPart = key.map { #","key":"\#($0)""# } ?? ""
            let text: String
            var event: String? = nil
            var payload: String? = nil
            switch random.next(30) {
            case 0:
                text = #"{"kind":"initialize","feature":"\#(feature)"\#(keyPart),"into":"\#(Self.initial[feature]!)"}"#
            case 1:
                text = #"{"kind":"deinitialize","feature":"\#(feature)"\#(keyPart)}"#
            default:
                event = random.pick(Self.events[feature]!)
                payload = random.pick([nil, nil, nil, #"{"ok":true}"#])
                text = #"{"kind":"send","feature":"\#(feature)"\#(keyPart),"event":"\#(event!)"\#(payload.map { ",\"payload\":\($0)" } ?? "")}"#
            }
            let expected = reference.submit(text)
            let expectedError = reference.lastError
            let first = subjects[0].0.submit(text)
            let firstError = subjects[0].0.lastError
            let second = event.map { uf_send(subjects[1].0.d, feature, key, $0, payload) } ?? subjects[1].0.submit(text)
            let secondError = subjects[1].0.lastError
            let got = [first, second]
            #expect(got == [expected, expected], "seed \(seed), step \(i): \(text)")
            if expected != UF_OK {
                #expect(firstError == expectedError, "seed \(seed), step \(i): \(text)")
                #expect(secondError == expectedError, "seed \(seed), step \(i): \(text)")
            } else if event != nil {
                applied += 1
            }
            if got != [expected, expected] { return }
        }
        #expect(applied > 250, "seed \(seed)")
        for (h, recorder, filtered) in subjects {
            #expect(recorder.mutations == expectedMutations.mutations, "seed \(seed)")
            for (i, filter) in Self.filters.enumerated() {
                #expect(filtered[i].mutations == expectedFiltered[i].mutations, "seed \(seed): \(filter)")
            }
            #expect(h.state == reference.state, "seed \(seed)")
        }
        // The filters matched something: the comparison means something.
        #expect(expectedFiltered.allSatisfy { !$0.mutations.isEmpty }, "seed \(seed): \(expectedFiltered.map(\.mutations.count))")
    }

    /// What the cache learns: plain sends only, so that a guard, an effect or a
    /// field is always the engine's to evaluate.
    @Test func onlyPlainSendsAreLearned() {
        let (h, _, _) = make()
        let dispatcher = UniFlow.dispatcher(from: UnsafeMutableRawPointer(h.d))
        func learned(_ feature: String, _ event: String) -> Bool {
            let index = dispatcher.featureIndex(named: feature)!
            let state = dispatcher.state(at: Place(feature: index))
            let number = dispatcher.charts[index]!.events[event]!
            return dispatcher.hot.chartSteps.find(feature: index, state: state, event: number) != nil
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Player","into":"Off"}"#) == UF_OK)
        #expect(!learned("Player", "power"))
        // Leaving On the first time gives its history a memory: Off then is
        // another instance value, learned on the third send.
        for _ in 0..<4 { #expect(uf_send(h.d, "Player", nil, "power", nil) == UF_OK) }
        #expect(learned("Player", "power"), "Off --power--> On.Stopped is plain")

        #expect(h.submit(#"{"kind":"initialize","feature":"Split","into":"Left"}"#) == UF_OK)
        #expect(uf_send(h.d, "Split", nil, "g", #"{"ok":true}"#) == UF_OK)
        #expect(uf_send(h.d, "Split", nil, "g", nil) == UF_OK)
        #expect(!learned("Split", "g"), "a guard was evaluated")
        #expect(uf_send(h.d, "Split", nil, "go", nil) == UF_OK)
        #expect(uf_send(h.d, "Split", nil, "go", nil) == UF_OK)
        #expect(!learned("Split", "go"), "D's entry assigns")
        #expect(h.feature("Split") == #"{"state":"Left.A,Right.C","payload":{"n":1}}"#)
    }

    /// The mutation a fast send delivers carries its `entered` and `exited`,
    /// and the payload the instance has.
    @Test func aFastSendsMutationCarriesItsPathsAndPayload() {
        let h = Harness(#"""
        {"feature": "Lamp", "fields": {"watts": {"type": "integer", "default": 40}},
         "states": {"Off": {"on": {"flip": "On"}}, "On": {"initial": "Dim", "on": {"flip": "Off"},
                    "states": {"Dim": {}, "Bright": {}}}}}
        """#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Lamp","into":"Off"}"#) == UF_OK)
        let recorder = h.record()
        for _ in 0..<4 { #expect(uf_send(h.d, "Lamp", nil, "flip", nil) == UF_OK) }
        #expect(recorder.mutations.count == 4)
        for (i, text) in recorder.mutations.enumerated() {
            let on = i % 2 == 0
            #expect(text.contains(on ? #""entered":["On","On.Dim"]"# : #""entered":["Off"]"#), "\(text)")
            #expect(text.contains(on ? #""exited":["Off"]"# : #""exited":["On.Dim","On"]"#), "\(text)")
            #expect(text.contains(#""payload":{"watts":40}"#), "\(text)")
        }
    }
}
