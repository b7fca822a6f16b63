import Glibc

/// What `uf_binding_call *` points to while a handler runs: a record on the
/// processing thread's stack, with its text kept in `CallbackScratch.handlerCall`.
struct BindingCallRecord {
    var dispatcher: UnsafeMutableRawPointer
    /// `set_output` is allowed in `given`, not in `then`.
    var inGiven: Bool
}

/// The handler's side of a binding being run (or an event guard): what
/// `uf_binding_call_*` reads and sets while the dispatcher's `callHandler` runs it.
struct HandlerCallScratch {
    var mutationText: String = "null"
    var givenText: String = "null"
    var output: JSONValue?
    var mutationCString: UnsafeMutablePointer<CChar>?
    var givenCString: UnsafeMutablePointer<CChar>?

    mutating func reset() {
        free(mutationCString)
        free(givenCString)
        mutationCString = nil
        givenCString = nil
    }

    /// `uf_binding_call_mutation_json` and `uf_binding_call_given_json`, made on first request.
    mutating func text(given: Bool) -> UnsafePointer<CChar>? {
        if given {
            if givenCString == nil {
                givenCString = try? Memory.copy(givenText, for: "a binding's given")
            }
            return givenCString.map { UnsafePointer($0) }
        }
        if mutationCString == nil {
            mutationCString = try? Memory.copy(mutationText, for: "a mutation's text")
        }
        return mutationCString.map { UnsafePointer($0) }
    }

    /// `uf_binding_call_set_output`.
    mutating func setOutput(_ record: BindingCallRecord, _ text: UnsafePointer<CChar>) throws(UniFlowError) {
        guard record.inGiven else {
            throw UniFlowError(.misuse, "uf_binding_call_set_output is only allowed in a given clause")
        }
        output = try JSONParser.parse(text)
    }
}

extension Dispatcher {
    /// See `HandlerCallScratch.text(given:)`.
    func handlerCallText(given: Bool) -> UnsafePointer<CChar>? {
        scratch.handlerCall.text(given: given)
    }

    /// See `HandlerCallScratch.setOutput`.
    func setHandlerOutput(_ record: BindingCallRecord, _ text: UnsafePointer<CChar>) throws(UniFlowError) {
        try scratch.handlerCall.setOutput(record, text)
    }
}
