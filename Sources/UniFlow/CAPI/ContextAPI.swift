import CUniFlow

// Via callbacks' view of the action (`uf_context_*`). The context is a
// `ViaContextRecord` on the processing thread's stack.

@inline(__always)
private func record(_ ctx: OpaquePointer?) -> ViaContextRecord? {
    ctx.map { UnsafePointer<ViaContextRecord>($0).pointee }
}

@c @implementation
public func uf_context_feature(_ ctx: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(ctx) else { return nil }
    return UnsafePointer(dispatcher(from: r.dispatcher).hot.features[Int(r.feature)].name.pointer)
}

@c @implementation
public func uf_context_state(_ ctx: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(ctx), r.state >= 0 else { return nil }
    let d = dispatcher(from: r.dispatcher)
    return UnsafePointer(d.stateSlot(r.state, of: d.hot.features[Int(r.feature)]).name.pointer)
}

@c @implementation
public func uf_context_payload_json(_ ctx: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(ctx) else { return nil }
    return dispatcher(from: r.dispatcher).contextPayloadText(r)
}

@c @implementation
public func uf_context_dispatcher(_ ctx: OpaquePointer?) -> OpaquePointer? {
    record(ctx).map { OpaquePointer($0.dispatcher) }
}

@c @implementation
public func uf_context_become(_ ctx: OpaquePointer?, _ payload_json: UnsafePointer<CChar>?) -> Int32 {
    guard let r = record(ctx) else { return nullArgument("uf_context_become", "ctx") }
    guard let payload_json else { return nullArgument("uf_context_become", "payload_json") }
    do throws(UniFlowError) {
        try dispatcher(from: r.dispatcher).become(r, payload: payload_json)
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}
