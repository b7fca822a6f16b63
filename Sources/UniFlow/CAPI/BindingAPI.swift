import CUniFlow
import Glibc

// Host handlers named by model bindings and event guards, the view a handler gets
// of the call (`uf_binding_call_*`), and JsonLogic on its own (`uf_logic_apply`).

@c @implementation
public func uf_register_handler(_ d: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ fn: uf_handler_fn?,
                                _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?) -> Int32 {
    withRegistration(d, "uf_register_handler", payload: payload, payloadFree: payload_free) { (dispatcher) throws(UniFlowError) in
        let name = String(cString: try required(name, "uf_register_handler", "name"))
        let fn = try required(fn, "uf_register_handler", "fn")
        try dispatcher.exclusive { () throws(UniFlowError) in
            try dispatcher.registerHandler(name, HostCallback(fn, payload: payload, payloadFree: payload_free))
        }
        return .ok
    }
}

@inline(__always)
private func record(_ call: OpaquePointer?) -> BindingCallRecord? {
    call.map { UnsafePointer<BindingCallRecord>($0).pointee }
}

@c @implementation
public func uf_binding_call_mutation_json(_ call: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(call) else { return nil }
    return dispatcher(from: r.dispatcher).handlerCallText(given: false)
}

@c @implementation
public func uf_binding_call_given_json(_ call: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(call) else { return nil }
    return dispatcher(from: r.dispatcher).handlerCallText(given: true)
}

@c @implementation
public func uf_binding_call_set_output(_ call: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> Int32 {
    do throws(UniFlowError) {
        let r = try required(record(call), "uf_binding_call_set_output", "call")
        try dispatcher(from: r.dispatcher).setHandlerOutput(r, try required(json, "uf_binding_call_set_output", "json"))
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}

@c @implementation
public func uf_binding_call_dispatcher(_ call: OpaquePointer?) -> OpaquePointer? {
    record(call).map { OpaquePointer($0.dispatcher) }
}

@c @implementation
public func uf_logic_apply(_ rule_json: UnsafePointer<CChar>?, _ data_json: UnsafePointer<CChar>?,
                           _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    do throws(UniFlowError) {
        let ruleText = try required(rule_json, "uf_logic_apply", "rule_json")
        let out = try required(out_json, "uf_logic_apply", "out_json")
        out.pointee = nil
        let rule = try JSONParser.parse(ruleText)
        let data = try data_json.map { (text) throws(UniFlowError) in try JSONParser.parse(text) } ?? .null
        try JsonLogic.validate(rule)
        try give(try JsonLogic.apply(rule, data: data).jsonText, to: out)
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}
