import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// The dispatcher keeps definitions compactly (Model/Storage): small features
/// only as text plus flat tables, states of small features found by comparing
/// names, of large ones through the name table, and declared transitions as a bit
/// matrix or, for many states, as sorted pairs. Whatever the representation, a
/// host sees the same definitions and the same preconditions.
@Suite struct DefinitionStorage {
    /// A feature with `count` states S0...S(count-1) and transitions S(i) -> S(i+1).
    private func chain(_ name: String, states count: Int) -> String {
        let states = (0..<count).map { #""S\#($0)":{}"# }.joined(separator: ",")
        let transitions = (0..<count - 1).map { #""S\#($0)":["S\#($0 + 1)"]"# }.joined(separator: ",")
        return #"{"feature":"\#(name)","states":{\#(states)},"transitions":{\#(transitions)}}"#
    }

    @Test(arguments: [2, 8, 9, 64, 65, 300])
    func givenAChainOfStates_whenWalkedForward_thenOnlyDeclaredTransitionsApply(count: Int) {
        let h = Harness(chain("Chain", states: count))
        #expect(h.submit(#"{"kind":"initialize","feature":"Chain","into":"S0"}"#) == UF_OK)
        for i in 1..<count {
            // Backwards and skipping ahead are not declared; the next state is.
            if i >= 2 {
                #expect(h.submit(#"{"kind":"transition","feature":"Chain","into":"S\#(i - 2)"}"#) == UF_REJECTED)
                #expect(h.lastError == "Chain cannot transition from S\(i - 1) into S\(i - 2): not a declared transition")
            }
            if i + 1 < count {
                #expect(h.submit(#"{"kind":"transition","feature":"Chain","into":"S\#(i + 1)"}"#) == UF_REJECTED)
            }
            #expect(h.submit(#"{"kind":"transition","feature":"Chain","from":"S\#(i - 1)","into":"S\#(i)"}"#) == UF_OK,
                    "\(h.lastError)")
        }
        #expect(h.state == #"{"Chain":{"state":"S\#(count - 1)","payload":{}}}"#)
        #expect(h.submit(#"{"kind":"transition","feature":"Chain","into":"S\#(count)"}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'S\(count)' of feature Chain")
    }

    @Test func statesAreFoundByTheirWholeName() {
        // Prefixes, extensions and names of other features' states find nothing.
        let h = Harness(chain("Big", states: 20), chain("Small", states: 3))
        for name in ["S", "S1x", "S19 ", "s1", "S20"] {
            #expect(h.submit(#"{"kind":"initialize","feature":"Big","into":"\#(name)"}"#) == UF_ENOTFOUND)
            #expect(h.submit(#"{"kind":"initialize","feature":"Small","into":"\#(name)"}"#) == UF_ENOTFOUND)
        }
        #expect(h.submit(#"{"kind":"initialize","feature":"Small","into":"S2"}"#) == UF_OK)
        #expect(h.submit(#"{"kind":"initialize","feature":"Big","into":"S19"}"#) == UF_OK)
        #expect(h.state == #"{"Big":{"state":"S19","payload":{}},"Small":{"state":"S2","payload":{}}}"#)
    }

    @Test func definitionsComeBackAsRegisteredWhateverIsKept() {
        // A table-only feature, one with fields and descriptions, one with a binding.
        let plain = #"{"states":{"B":{},"A":{}},"feature":"Plain","initial":["B"],"transitions":{"B":["A"]}}"#
        let rich = #"{"feature":"Rich","description":"has fields","states":{"Idle":{"description":"waiting"},"Busy":{"fields":{"n":{"type":"integer","default":3}}}}}"#
        let bound = #"{"feature":"Bound","states":{"X":{}},"bindings":[{"when":"Initialization<Plain>","then":{"submit":[{"kind":"initialize","feature":"Bound","into":"X"}]}}]}"#
        let h = Harness(plain, rich, bound)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(h.d, &out) == UF_OK)
        defer { uf_free(out) }
        let text = String(cString: out!)
        #expect(text == #"{"features":[\#(plain),\#(rich),\#(bound)]}"#)
        // ...and registers again on a fresh dispatcher, giving the same text.
        let again = Harness()
        #expect(uf_register(again.d, text) == UF_OK)
        var second: UnsafeMutablePointer<CChar>?
        #expect(uf_definitions_get(again.d, &second) == UF_OK)
        defer { uf_free(second) }
        #expect(String(cString: second!) == text)
    }

    @Test func aTableOnlyFeatureKeepsItsInitialStatesAndDrawsInGraphs() {
        let h = Harness(#"{"feature":"Plain","states":{"A":{},"B":{}},"initial":["B"]}"#)
        #expect(h.submit(#"{"kind":"initialize","feature":"Plain","into":"A"}"#) == UF_REJECTED)
        #expect(h.lastError == "Plain cannot be initialized into A: not an initial state")
        var dot: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(h.d, "Plain", &dot) == UF_OK)
        defer { uf_free(dot) }
        let graph = String(cString: dot!)
        #expect(graph.contains(#""Plain.A" [label="A"];"#))
        #expect(graph.contains(#""Plain.B" [label="B", peripheries=2];"#))
        #expect(graph.contains(#""Plain#entry" -> "Plain.B";"#))
        // A payload on a state without fields names the field and the state.
        #expect(h.submit(#"{"kind":"initialize","feature":"Plain","into":"B","payload":{"x":1}}"#) == UF_ESCHEMA)
        #expect(h.lastError.hasPrefix("Plain.B.x:"))
    }

    @Test func aBindingMayWatchATableOnlyFeatureRegisteredEarlier() {
        let h = Harness(#"{"feature":"Plain","states":{"A":{},"B":{}}}"#)
        #expect(uf_register(h.d, #"{"feature":"Watcher","states":{"Seen":{}},"bindings":[{"when":"TransitionInto<Plain.B>","then":{"submit":[{"kind":"initialize","feature":"Watcher","into":"Seen"}]}}]}"#) == UF_OK, "\(h.lastError)")
        #expect(uf_register(h.d, #"{"feature":"Other","states":{"Z":{}},"bindings":[{"when":"TransitionInto<Plain.C>","then":{"submit":[]}}]}"#) == UF_ENOTFOUND)
        #expect(h.lastError == "features[0].bindings[0].when: filter 'TransitionInto<Plain.C>': unknown state 'C' of feature Plain")
    }
}
