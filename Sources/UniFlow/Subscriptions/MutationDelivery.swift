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
    fileprivate(set) var oldPayloadText: UnsafeMutablePointer<CChar>?
    fileprivate(set) var newPayloadText: UnsafeMutablePointer<CChar>?
    fileprivate(set) var mutationText: UnsafeMutablePointer<CChar>?
    /// Whether a text was handed out: what ending a delivery tests, once,
    /// instead of the three texts.
    fileprivate(set) var madeText = false

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
        free(oldPayloadText)
        free(newPayloadText)
        free(mutationText)
        oldPayloadText = nil
        newPayloadText = nil
        mutationText = nil
        madeText = false
    }
}

/// What a subscriber reads of the mutation it is given.
extension Dispatcher {
    // The accessors' text: made on first request, kept until the delivery ends
    // (nil when the text cannot be allocated).

    func mutationText(_ record: MutationRecord) -> UnsafePointer<CChar>? {
        if scratch.delivery.mutationText == nil {
            scratch.delivery.mutationText = try? Memory.copy(mutationJSON(record, scratch.delivery).jsonText, for: "a mutation's text")
            scratch.delivery.madeText = true
        }
        return scratch.delivery.mutationText.map { UnsafePointer($0) }
    }

    func oldPayloadText(_ record: MutationRecord) -> UnsafePointer<CChar>? {
        guard record.oldState >= 0 else { return nil }
        if scratch.delivery.oldPayloadText == nil {
            scratch.delivery.oldPayloadText = try? Memory.copy(JSONValue.object(scratch.delivery.oldPayload ?? JSONObject()).jsonText,
                                                               for: "a payload's text")
            scratch.delivery.madeText = true
        }
        return scratch.delivery.oldPayloadText.map { UnsafePointer($0) }
    }

    func newPayloadText(_ record: MutationRecord) -> UnsafePointer<CChar>? {
        guard record.newState >= 0 else { return nil }
        if scratch.delivery.newPayloadText == nil {
            scratch.delivery.newPayloadText = try? Memory.copy(JSONValue.object(scratch.delivery.newPayload ?? JSONObject()).jsonText,
                                                               for: "a payload's text")
            scratch.delivery.madeText = true
        }
        return scratch.delivery.newPayloadText.map { UnsafePointer($0) }
    }
}
