import Glibc

/// What `const uf_mutation *` points to: a record on the processing thread's
/// stack, so delivering a mutation allocates nothing. Text accessors compute
/// their strings lazily from the dispatcher's `MutationDelivery`.
struct MutationRecord {
    var dispatcher: UnsafeMutableRawPointer
    /// The subscription being called.
    var subscriptionID: UInt64 = 0
    var seq: UInt64
    /// A `uf_mutation_kind`.
    var kind: Int32
    var feature: Int32
    /// -1 on initialization.
    var oldState: Int32
    /// -1 on deinitialization.
    var newState: Int32

    init(dispatcher: UnsafeMutableRawPointer, seq: UInt64, kind: Int32, feature: Int32, oldState: Int32, newState: Int32) {
        self.dispatcher = dispatcher
        self.seq = seq
        self.kind = kind
        self.feature = feature
        self.oldState = oldState
        self.newState = newState
    }
}

/// The parts of the mutation being delivered that are not trivial: its payloads,
/// its action, and text already handed out (valid until delivery ends).
struct MutationDelivery {
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var action: ActionHeader?
    var oldPayloadText: UnsafeMutablePointer<CChar>?
    var newPayloadText: UnsafeMutablePointer<CChar>?
    var mutationText: UnsafeMutablePointer<CChar>?

    @inline(__always)
    mutating func reset() {
        if oldPayload != nil { oldPayload = nil }
        if newPayload != nil { newPayload = nil }
        action = nil
        if oldPayloadText != nil || newPayloadText != nil || mutationText != nil {
            free(oldPayloadText)
            free(newPayloadText)
            free(mutationText)
            oldPayloadText = nil
            newPayloadText = nil
            mutationText = nil
        }
    }
}
