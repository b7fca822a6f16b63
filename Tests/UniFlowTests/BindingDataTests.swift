import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A binding's rules run over {"mutation", "model", "given"}; the model is built
/// only for bindings whose rules may read it (Dispatcher+Bindings.swift). Whatever
/// way a rule reaches the model, it must find it.
@Suite struct BindingData {
    @Test(arguments: [
        (#"{"var": "model.Stats.payload.n"}"#, true),
        (#"{"var": "model"}"#, true),
        (#"{"var": ""}"#, true),
        (#"{"var": []}"#, true),
        (#"{"var": [{"cat": ["mo", "del"]}]}"#, true),
        (#"{"missing": ["mutation.new", "model.Stats"]}"#, true),
        (#"{"missing_some": [1, ["model.A", "x"]]}"#, true),
        (#"{"if": [true, {"var": "model.A"}, 0]}"#, true),
        (#"{"var": "mutation.new.state"}"#, false),
        (#"{"var": "modelling"}"#, false),
        (#"{"==": [{"var": ["given", 0]}, 1]}"#, false),
        (#"{"missing": ["mutation.old"]}"#, false),
        (#"{"a": {"var": "model"}, "b": 2}"#, false),
        (#"[1, "model", {"cat": ["model"]}]"#, false),
    ])
    func givenARule_whenAskedWhetherItMayReadTheModel_thenOnlyWhatCanReachItSaysSo(rule: String, reads: Bool) throws {
        let json = try JSONParser.parse(rule)
        #expect(JsonLogic.mayRead(json, member: "model") == reads, "\(rule)")
    }

    /// Stats counts with a computed path to the model; Tally reads the whole data.
    static let definitions = [
        #"{"feature":"Toggle","states":{"Off":{},"On":{}}}"#,
        #"{"feature":"Stats","states":{"Counting":{"fields":{"n":{"type":"integer","default":0}}}},"bindings":[{"when":"TransitionInto<Toggle.On>","then":{"submit":[{"kind":"actualize","feature":"Stats","in":"Counting","payload":{"n":{"$":{"+":[{"var":{"cat":["mo","del.Stats.payload.n"]}},1]}}}}]}}]}"#,
        #"{"feature":"Tally","states":{"Seen":{"fields":{"n":{"type":"integer","default":-1}}}},"bindings":[{"when":"TransitionInto<Toggle.Off>","given":[{"map":{"var":""}}],"then":{"submit":[{"kind":"actualize","feature":"Tally","in":"Seen","payload":{"n":{"$":{"var":"given.model.Stats.payload.n"}}}}]}}]}"#,
        #"{"feature":"Blind","states":{"Seen":{"fields":{"state":{"type":"string","default":""}}}},"bindings":[{"when":"Transition<Toggle>","then":{"submit":[{"kind":"actualize","feature":"Blind","in":"Seen","payload":{"state":{"$":{"var":"mutation.new.state"}}}}]}}]}"#,
    ]

    @Test func rulesThatReachTheModelFindItAndOthersStillSeeTheMutation() {
        let h = Harness(Self.definitions[0], Self.definitions[1], Self.definitions[2], Self.definitions[3])
        for feature in ["Stats", "Tally", "Blind"] {
            #expect(h.submit(#"{"kind":"initialize","feature":"\#(feature)","into":"\#(feature == "Stats" ? "Counting" : "Seen")"}"#) == UF_OK)
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#) == UF_OK)
        for _ in 0..<2 {
            #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"On"}"#) == UF_OK)
            #expect(h.submit(#"{"kind":"transition","feature":"Toggle","into":"Off"}"#) == UF_OK)
        }
        #expect(h.feature("Stats") == #"{"state":"Counting","payload":{"n":2}}"#)
        // Tally mapped the whole data into `given` and read Stats' count from its model.
        #expect(h.feature("Tally") == #"{"state":"Seen","payload":{"n":2}}"#)
        #expect(h.feature("Blind") == #"{"state":"Seen","payload":{"state":"Off"}}"#)
    }
}
