import CUniFlow

/// A host function that bindings name in `{"call": "name"}` (`uf_register_handler`).
final class HostHandler {
    let name: String
    let fn: uf_handler_fn
    let payload: UnsafeMutableRawPointer?
    private var payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    init(name: String, fn: uf_handler_fn, payload: UnsafeMutableRawPointer?,
         payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        self.name = name
        self.fn = fn
        self.payload = payload
        self.payloadFree = payloadFree
    }

    /// Runs `payload_free` once.
    func release() {
        let free = payloadFree
        payloadFree = nil
        free?(payload)
    }
}

/// A registered model binding with its filter compiled and its owner known.
struct ActiveBinding {
    var definition: BindingDefinition
    /// The feature whose definition declares the binding.
    var owner: Int32
    var filter: Dispatcher.CompiledFilter
}

/// What `uf_binding_call *` points to while a handler runs: a record on the
/// processing thread's stack, with its text kept in `Dispatcher.handlerCall`.
struct BindingCallRecord {
    var dispatcher: UnsafeMutableRawPointer
    /// `set_output` is allowed in `given`, not in `then`.
    var inGiven: Bool
}

/// The handler's side of a binding being run.
struct HandlerCallScratch {
    var mutationText: String = "null"
    var givenText: String = "null"
    var output: JSONValue?
    var mutationCString: UnsafeMutablePointer<CChar>?
    var givenCString: UnsafeMutablePointer<CChar>?
}

/// JsonLogic's truthiness (json-logic-js `truthy`: JavaScript's, except that an
/// empty array is false).
func isTruthy(_ value: JSONValue) -> Bool {
    switch value {
    case .null: false
    case .bool(let b): b
    case .int(let i): i != 0
    case .double(let d): d != 0 && !d.isNaN
    case .string(let s): !s.isEmpty
    case .array(let items): !items.isEmpty
    case .object: true
    }
}
