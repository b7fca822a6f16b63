import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// Via callbacks on a statechart's explicit actions (docs/statecharts.md): as on
// a flat feature, except that the payload a via becomes sets the fields it
// names.

private let player = #"""
{"feature": "Player",
 "fields": {"volume": {"type": "number", "default": 5}},
 "states": {
   "Stopped": {"on": {"play": "Active"}},
   "Active": {"initial": "Playing", "entry": [{"call": "entered"}],
              "fields": {"track": {"type": "string", "default": ""}},
              "on": {"stop": "Stopped"},
              "states": {"Playing": {"on": {"pause": "Paused"}}, "Paused": {"on": {"play": "Playing"}}}}},
 "initial": ["Stopped", "Active"]}
"""#

/// A player whose `entered` handler counts its calls.
private final class ViaPlayer {
    let h = Harness()
    var entries = 0

    init() {
        registerHandler(h, "entered") { [unowned self] _ in
            self.entries += 1
            return 0
        }
        precondition(uf_register(h.d, player) == UF_OK, h.lastError)
    }

    var feature: String? { h.feature("Player") }
}

private func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }

@Suite struct StatechartViaTests {
    /// The via sees the configuration and payload before the action, and what
    /// it becomes sets the fields it names (of the feature and of the state entered).
    @Test func aTransitionsViaComputesItsPayloadFromTheCurrentOne() {
        let p = ViaPlayer()
        #expect(p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#) == UF_OK)
        var seen: (String?, String?) = (nil, nil)
        let freed = FreeCounter()
        let status = p.h.submit(#"{"kind":"transition","feature":"Player","into":"Active.Paused"}"#, freed: freed) { ctx in
            seen = (text(uf_context_state(ctx)), text(uf_context_payload_json(ctx)))
            return uf_context_become(ctx, #"{"volume": 7, "track": "intro"}"#) == UF_OK ? 0 : -1
        }
        #expect(status == UF_OK, "\(p.h.lastError)")
        #expect(seen.0 == "Stopped")
        #expect(seen.1 == #"{"volume":5}"#)
        #expect(p.feature == #"{"state":"Active.Paused","payload":{"volume":7,"track":"intro"}}"#)
        #expect(freed.count == 1)
        #expect(p.entries == 1)
    }

    /// An actualization's via changes one field; the others keep their values.
    @Test func anActualizationsViaSetsTheFieldsItNames() {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Active","payload":{"track":"a"}}"#)
        let status = p.h.submit(#"{"kind":"actualize","feature":"Player","in":"Playing"}"#) { ctx in
            guard let current = text(uf_context_payload_json(ctx)),
                  case .object(let object)? = try? JSONParser.parse(current),
                  case .int(let volume)? = object["volume"] else { return -1 }
            return uf_context_become(ctx, #"{"volume": \#(volume + 1)}"#) == UF_OK ? 0 : -1
        }
        #expect(status == UF_OK, "\(p.h.lastError)")
        #expect(p.feature == #"{"state":"Active.Playing","payload":{"volume":6,"track":"a"}}"#)
    }

    /// `initialize` has no current state: the via sees none, and gives the first payload.
    @Test func anInitializationsViaGivesTheFirstPayload() {
        let p = ViaPlayer()
        var sawNothing = false
        let status = p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Active"}"#) { ctx in
            sawNothing = uf_context_state(ctx) == nil && uf_context_payload_json(ctx) == nil
            return uf_context_become(ctx, #"{"track": "b"}"#) == UF_OK ? 0 : -1
        }
        #expect(status == UF_OK, "\(p.h.lastError)")
        #expect(sawNothing)
        #expect(p.feature == #"{"state":"Active.Playing","payload":{"volume":5,"track":"b"}}"#)
    }

    /// A via that returns 0 without `become`: the action runs with no payload of its own.
    @Test func aViaThatBecomesNothingLeavesThePayload() {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        var ran = false
        #expect(p.h.submit(#"{"kind":"transition","feature":"Player","into":"Active"}"#) { _ in ran = true; return 0 } == UF_OK)
        #expect(ran)
        #expect(p.feature == #"{"state":"Active.Playing","payload":{"volume":5,"track":""}}"#)
    }

    /// Declining and failing change nothing: no entry effect ran, the model
    /// is as it was, and `payload_free` ran once.
    @Test(arguments: [(Int32(1), UF_REJECTED, "Player: the via callback declined the action"),
                      (Int32(-3), UF_ECALLBACK, "Player: the via callback failed (returned -3)")])
    func aViaThatDeclinesOrFailsChangesNothing(_ result: Int32, _ status: Int32, _ message: String) {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        let before = p.h.state
        let recorder = p.h.record()
        let freed = FreeCounter()
        #expect(p.h.submit(#"{"kind":"transition","feature":"Player","into":"Active"}"#, freed: freed) { ctx in
            _ = uf_context_become(ctx, #"{"volume": 1}"#)
            return result
        } == status)
        #expect(p.h.lastError == message)
        #expect(p.h.state == before)
        #expect(recorder.mutations.isEmpty)
        #expect(p.entries == 0)
        #expect(freed.count == 1)
    }

    /// A precondition that fails never calls the via.
    @Test func aFailedPreconditionNeverCallsTheVia() {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        var called = false
        let freed = FreeCounter()
        #expect(p.h.submit(#"{"kind":"actualize","feature":"Player","in":"Active"}"#, freed: freed) { _ in called = true; return 0 } == UF_REJECTED)
        #expect(p.h.lastError == "Player is in state Stopped, not Active")
        #expect(!called)
        #expect(freed.count == 1)
    }

    /// `become` checks the fields at once; the action then fails with that
    /// check's status and message, and changes nothing.
    @Test(arguments: [
        (#"{"volume": "loud"}"#, "Player.Active.volume: expected number, got string"),
        (#"{"nope": 1}"#, "Player.Active.nope: unknown field"),
        (#"[1]"#, "Player.Active: payload must be an object, got array"),
    ])
    func aPayloadThatDoesNotFitIsRefusedByBecome(_ payload: String, _ message: String) {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        let before = p.h.state
        var becomeStatus: Int32 = 0
        var becomeError = ""
        #expect(p.h.submit(#"{"kind":"transition","feature":"Player","into":"Active"}"#) { ctx in
            becomeStatus = uf_context_become(ctx, payload)
            becomeError = String(cString: uf_last_error())
            return 0
        } == UF_ESCHEMA)
        #expect(becomeStatus == UF_ESCHEMA)
        #expect(becomeError == message)
        #expect(p.h.lastError == message)
        #expect(p.h.state == before)
    }

    /// A field the state the action enters does not have (a sibling's, say)
    /// is unknown to `become`; a field of a state active now is not.
    @Test func becomeKnowsTheFieldsOfTheTargetItsAncestorsAndTheActiveStates() {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Active.Paused"}"#)
        #expect(p.h.submit(#"{"kind":"transition","feature":"Player","from":"Paused","into":"Playing"}"#) { ctx in
            uf_context_become(ctx, #"{"track": "c"}"#) == UF_OK ? 0 : -1
        } == UF_OK, "\(p.h.lastError)")
        #expect(p.feature == #"{"state":"Active.Playing","payload":{"volume":5,"track":"c"}}"#)
        #expect(p.h.submit(#"{"kind":"transition","feature":"Player","into":"Stopped"}"#) { ctx in
            uf_context_become(ctx, #"{"volume": 2}"#) == UF_OK ? 0 : -1
        } == UF_OK, "\(p.h.lastError)")
        // `track` belongs to Active, which was left.
        #expect(p.feature == #"{"state":"Stopped","payload":{"volume":2}}"#)
    }

    /// A via with a JSON payload is refused before anything runs; on a
    /// deinitialization a via is a side effect, and `become` is a misuse.
    @Test func aViaWithAPayloadIsRefusedAndADeinitializationsViaCannotBecome() {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        let freed = FreeCounter()
        var called = false
        #expect(p.h.submit(#"{"kind":"transition","feature":"Player","into":"Active","payload":{"volume":1}}"#, freed: freed) { _ in
            called = true
            return 0
        } == UF_EINVAL)
        #expect(p.h.lastError == "action has both a JSON payload and a via callback")
        #expect(!called)
        #expect(freed.count == 1)

        var misuse: Int32 = 0
        #expect(p.h.submit(#"{"kind":"deinitialize","feature":"Player"}"#) { ctx in
            misuse = uf_context_become(ctx, "{}")
            return 0
        } == UF_OK)
        #expect(misuse == UF_EMISUSE)
        #expect(p.feature == nil)
    }

    /// A send takes no via: its target and payload come from the definition.
    @Test func aSendTakesNoVia() {
        let p = ViaPlayer()
        p.h.submit(#"{"kind":"initialize","feature":"Player","into":"Stopped"}"#)
        #expect(p.h.submit(#"{"kind":"send","feature":"Player","event":"play"}"#) { _ in 0 } == UF_EINVAL)
        #expect(p.h.lastError == "a send takes no via callback: its target and payload come from the definition")
    }
}
