import CUniFlow
import Glibc

// Host handlers named by model bindings, the view a handler gets of the binding
// being run (`uf_binding_call_*`), and JsonLogic on its own (`uf_logic_apply`).

@c @implementation
public func uf_register_handler(_ d: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ fn: uf_handler_fn?,
                                _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?) -> Int32 {
    guard d != nil, let name, let fn else {
        payload_free?(payload)
        if d == nil { return nullArgument("uf_register_handler", "dispatcher") }
        return name == nil ? nullArgument("uf_register_handler", "name") : nullArgument("uf_register_handler", "fn")
    }
    return withDispatcher(d, "uf_register_handler") { (dispatcher) throws(UniFlowError) in
        let handler = HostHandler(name: String(cString: name), fn: fn, payload: payload, payloadFree: payload_free)
        do throws(UniFlowError) {
            try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.registerHandler(handler) }
        } catch {
            handler.release()
            throw error
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
    let d = dispatcher(from: r.dispatcher)
    if d.handlerCall.mutationCString == nil { d.handlerCall.mutationCString = mallocString(d.handlerCall.mutationText) }
    return d.handlerCall.mutationCString.map { UnsafePointer($0) }
}

@c @implementation
public func uf_binding_call_given_json(_ call: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(call) else { return nil }
    let d = dispatcher(from: r.dispatcher)
    if d.handlerCall.givenCString == nil { d.handlerCall.givenCString = mallocString(d.handlerCall.givenText) }
    return d.handlerCall.givenCString.map { UnsafePointer($0) }
}

@c @implementation
public func uf_binding_call_set_output(_ call: OpaquePointer?, _ json: UnsafePointer<CChar>?) -> Int32 {
    guard let r = record(call) else { return nullArgument("uf_binding_call_set_output", "call") }
    guard let json else { return nullArgument("uf_binding_call_set_output", "json") }
    guard r.inGiven else {
        return fail(UniFlowError(.misuse, "uf_binding_call_set_output is only allowed in a given clause"))
    }
    do throws(UniFlowError) {
        dispatcher(from: r.dispatcher).handlerCall.output = try JSONParser.parse(json)
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
    guard let rule_json else { return nullArgument("uf_logic_apply", "rule_json") }
    guard let out_json else { return nullArgument("uf_logic_apply", "out_json") }
    out_json.pointee = nil
    do throws(UniFlowError) {
        let rule = try JSONParser.parse(rule_json)
        let data = try data_json.map { (text) throws(UniFlowError) in try JSONParser.parse(text) } ?? .null
        try JsonLogic.validate(rule)
        out_json.pointee = mallocString(try JsonLogic.apply(rule, data: data).jsonText)
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}
