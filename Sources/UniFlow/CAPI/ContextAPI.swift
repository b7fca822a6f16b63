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
    return dispatcher(from: r.dispatcher).featureCName(r.feature)
}

@c @implementation
public func uf_context_state(_ ctx: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(ctx) else { return nil }
    return dispatcher(from: r.dispatcher).stateCName(r.state, of: r.feature)
}

@c @implementation
public func uf_context_key(_ ctx: OpaquePointer?) -> UnsafePointer<CChar>? {
    record(ctx)?.key
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
    do throws(UniFlowError) {
        let r = try required(record(ctx), "uf_context_become", "ctx")
        try dispatcher(from: r.dispatcher).become(r, payload: try required(payload_json, "uf_context_become", "payload_json"))
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}
