import Glibc

/// The parts of the mutation being delivered that are not trivial: its payloads,
/// its action, and text already handed out (valid until delivery ends).
struct MutationDelivery {
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var action: ActionHeader?
    /// The hot path's action, in place of `action`.
    var hotAction: HotAction?

    /// The action, whichever path applied it.
    var actionHeader: ActionHeader? { action ?? hotAction?.header }
    // Written only by the accessors below, which set `madeText` with them.
    private var oldPayloadCText: UnsafeMutablePointer<CChar>?
    private var newPayloadCText: UnsafeMutablePointer<CChar>?
    private var mutationCText: UnsafeMutablePointer<CChar>?
    /// Whether a text was handed out: what ending a delivery tests, once,
    /// instead of the three texts.
    private var madeText = false

    // What a subscriber reads of the mutation it is given: text made on first
    // request, kept until the delivery ends (nil when it cannot be allocated).

    /// `uf_mutation_json`: `json` makes the mutation's JSON from the record and this delivery.
    mutating func mutationText(_ record: MutationRecord,
                               _ json: (MutationRecord, MutationDelivery) -> JSONValue) -> UnsafePointer<CChar>? {
        if mutationCText == nil {
            mutationCText = try? Memory.copy(json(record, self).jsonText, for: "a mutation's text")
            madeText = true
        }
        return mutationCText.map { UnsafePointer($0) }
    }

    /// `uf_mutation_old_payload_json`: NULL when there was no old state.
    mutating func oldPayloadText(_ record: MutationRecord) -> UnsafePointer<CChar>? {
        guard record.oldState >= 0 else { return nil }
        if oldPayloadCText == nil {
            oldPayloadCText = try? Memory.copy(JSONValue.object(oldPayload ?? JSONObject()).jsonText, for: "a payload's text")
            madeText = true
        }
        return oldPayloadCText.map { UnsafePointer($0) }
    }

    /// `uf_mutation_new_payload_json`: NULL when there is no new state.
    mutating func newPayloadText(_ record: MutationRecord) -> UnsafePointer<CChar>? {
        guard record.newState >= 0 else { return nil }
        if newPayloadCText == nil {
            newPayloadCText = try? Memory.copy(JSONValue.object(newPayload ?? JSONObject()).jsonText, for: "a payload's text")
            madeText = true
        }
        return newPayloadCText.map { UnsafePointer($0) }
    }

    /// `reset` after a hot-path delivery, which set nothing but `hotAction`.
    @inline(__always)
    mutating func resetHot() {
        hotAction = nil
        if madeText { freeTexts() }
    }

    @inline(__always)
    mutating func reset() {
        if oldPayload != nil { oldPayload = nil }
        if newPayload != nil { newPayload = nil }
        action = nil
        hotAction = nil
        if madeText { freeTexts() }
    }

    private mutating func freeTexts() {
        free(oldPayloadCText)
        free(newPayloadCText)
        free(mutationCText)
        oldPayloadCText = nil
        newPayloadCText = nil
        mutationCText = nil
        madeText = false
    }
}
