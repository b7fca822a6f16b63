import CUniFlow
import Glibc

// Submitting actions: JSON text (uf_submit, uf_submit_via), the struct form
// (uf_dispatch, uf_dispatch_try, the hot path) and events (uf_send).

@c @implementation
public func uf_submit(_ d: OpaquePointer?, _ action_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_submit") { (dispatcher) throws(UniFlowError) in
        Status(rawValue: dispatcher.submit(json: try required(action_json, "uf_submit", "action_json"), via: nil))!
    }
}

@c @implementation
public func uf_submit_via(_ d: OpaquePointer?, _ action_json: UnsafePointer<CChar>?, _ via: uf_via_fn?,
                          _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?) -> Int32 {
    withRegistration(d, "uf_submit_via", payload: payload, payloadFree: payload_free) { (dispatcher) throws(UniFlowError) in
        let fn = try required(via, "uf_submit_via", "via")
        let text = try required(action_json, "uf_submit_via", "action_json")
        // From here on `submit` releases the payload exactly once, whatever happens.
        return Status(rawValue: dispatcher.submit(json: text, via: HostCallback(fn, payload: payload, payloadFree: payload_free)))!
    }
}

/// The first released `uf_action` ends after `via_payload_free`; the members
/// after it came later (`ActionField.structVersion`). A caller passes any of the
/// sizes `ActionField.structSizes` lists.
private let releasedActionSize = ActionField.structSizes[0]

@c @implementation
public func uf_dispatch(_ d: OpaquePointer?, _ action: UnsafePointer<uf_action>?) -> Int32 {
    dispatch(d, action, "uf_dispatch", waiting: true)
}

@c @implementation
public func uf_dispatch_try(_ d: OpaquePointer?, _ action: UnsafePointer<uf_action>?) -> Int32 {
    dispatch(d, action, "uf_dispatch_try", waiting: false)
}

@inline(__always)
private func dispatch(_ d: OpaquePointer?, _ action: UnsafePointer<uf_action>?, _ function: StaticString,
                      waiting: Bool) -> Int32 {
    guard let action else { return nullArgument(function, "action") }
    if action.pointee.size == UInt32(MemoryLayout<uf_action>.size) {
        return dispatch(d, validated: action, function, waiting: waiting)
    }
    return withWholeAction(action, function) { dispatch(d, validated: $0, function, waiting: waiting) }
}

@inline(__always)
private func dispatch(_ d: OpaquePointer?, validated action: UnsafePointer<uf_action>, _ function: StaticString,
                      waiting: Bool) -> Int32 {
    guard let d else {
        releaseVia(of: action)
        return nullArgument(function, "dispatcher")
    }
    return Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))._withUnsafeGuaranteedRef { dispatcher in
        if dispatcher.isForkedCopy {
            releaseVia(of: action)
            return fail(forkedCopy(function))
        }
        return dispatcher.dispatch(action, waiting: waiting)
    }
}

/// Calls `body` with a whole struct of this library's size: an older caller's
/// smaller one is copied, the fields it does not have left zero. A size that is
/// not one of the struct's versions is `UF_EINVAL` (the via is still released).
func withWholeAction(_ action: UnsafePointer<uf_action>, _ function: StaticString,
                     _ body: (UnsafePointer<uf_action>) -> Int32) -> Int32 {
    let size = Int(action.pointee.size)
    guard ActionField.structSizes.contains(size) else {
        // Any struct that reaches past the via fields (they end the first version)
        // has them where this header puts them: release its payload, as promised
        // whatever the outcome. A smaller one cannot be trusted to hold them.
        if size >= releasedActionSize { releaseVia(of: action) }
        return fail(UniFlowError(.invalidArgument, "\(function): action->size is \(size), expected \(MemoryLayout<uf_action>.size) (sizeof(uf_action))"))
    }
    var whole = uf_action()
    withUnsafeMutableBytes(of: &whole) { $0.copyMemory(from: UnsafeRawBufferPointer(start: action, count: size)) }
    whole.size = UInt32(MemoryLayout<uf_action>.size)
    return withUnsafePointer(to: &whole, body)
}

private func releaseVia(of action: UnsafePointer<uf_action>) {
    // Field by field: a caller's struct of a size between versions is shorter than
    // this library's, and only its via fields may be read.
    guard action.pointer(to: \.via)!.pointee != nil, let release = action.pointer(to: \.via_payload_free)!.pointee else { return }
    release(action.pointer(to: \.via_payload)!.pointee)
}

@c @implementation
public func uf_send(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                    _ event: UnsafePointer<CChar>?, _ payload_json: UnsafePointer<CChar>?) -> Int32 {
    guard let feature else { return nullArgument("uf_send", "feature") }
    guard let event else { return nullArgument("uf_send", "event") }
    var a = uf_action()
    a.size = UInt32(MemoryLayout<uf_action>.size)
    a.kind = UF_ACTION_SEND
    a.feature = feature
    a.key = key
    a.event = event
    a.payload_json = payload_json
    return withUnsafePointer(to: &a) { dispatch(d, validated: $0, "uf_send", waiting: true) }
}

