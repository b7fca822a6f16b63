import CUniFlow

// Submitting actions: JSON text (uf_submit, uf_submit_via) and the struct form
// (uf_dispatch), the hot path.

@c @implementation
public func uf_submit(_ d: OpaquePointer?, _ action_json: UnsafePointer<CChar>?) -> Int32 {
    submitJSON(d, "uf_submit", action_json, via: nil)
}

@c @implementation
public func uf_submit_via(_ d: OpaquePointer?, _ action_json: UnsafePointer<CChar>?, _ via: uf_via_fn?,
                          _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?) -> Int32 {
    guard let via else {
        payload_free?(payload)
        return nullArgument("uf_submit_via", "via")
    }
    return submitJSON(d, "uf_submit_via", action_json, via: ViaCallback(fn: via, payload: payload, payloadFree: payload_free))
}

private func submitJSON(_ d: OpaquePointer?, _ function: StaticString, _ text: UnsafePointer<CChar>?, via: ViaCallback?) -> Int32 {
    guard let d, let text else {
        via?.release()
        return d == nil ? nullArgument(function, "dispatcher") : nullArgument(function, "action_json")
    }
    return Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))._withUnsafeGuaranteedRef { dispatcher in
        // The action is read straight from jansson's tree, which lives until the
        // action is processed or queued (see BorrowedAction).
        var submitted = false
        do throws(UniFlowError) {
            return try JSONParser.withTree(text) { (root) throws(UniFlowError) -> Int32 in
                let request = try BorrowedAction.decode(root)
                submitted = true
                // Without payload, via or submit list it is a uf_action: the same hot path.
                if via == nil, let a = request.plainAction {
                    let status = withUnsafePointer(to: a) { (a) -> Int32? in
                        guard dispatcher.mayDispatchFast(a) else { return nil }
                        return dispatcher.exclusive { dispatcher.dispatchLocked(a) }
                    }
                    if let status { return status }
                }
                return try dispatcher.submit(via: via) { () throws(UniFlowError) in
                    try dispatcher.resolve(request, hasVia: via != nil)
                }.rawValue
            }
        } catch {
            // Once submitted, `submit` has released the via whatever happened.
            if !submitted { via?.release() }
            return fail(error)
        }
    }
}

/// The first released `uf_action` ends after `via_payload_free`; a caller built
/// against this header passes exactly this size.
private let releasedActionSize = MemoryLayout<uf_action>.size

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
    let size = Int(action.pointee.size)
    guard size >= releasedActionSize && size <= MemoryLayout<uf_action>.size else {
        // A newer caller's struct still has the via fields where this header puts
        // them: release its payload, as promised whatever the outcome. A smaller
        // one ends before them, so there is nothing of ours to release.
        if size > MemoryLayout<uf_action>.size {
            let a = action.pointee
            if a.via != nil { a.via_payload_free?(a.via_payload) }
        }
        return fail(UniFlowError(.invalidArgument, "\(function): action->size is \(size), expected \(MemoryLayout<uf_action>.size) (sizeof(uf_action))"))
    }
    if let d {
        // Most calls: no via to release, not queued. See Dispatcher+HotPath.swift.
        let status = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))._withUnsafeGuaranteedRef { dispatcher -> Int32? in
            guard dispatcher.mayDispatchFast(action) else { return nil }
            if waiting { return dispatcher.exclusive { dispatcher.dispatchLocked(action) } }
            return dispatcher.exclusiveUnlessBusy { dispatcher.dispatchLocked(action) } ?? Status.busy.rawValue
        }
        if let status { return status }
    }
    // Copied once: what is queued outlives the caller's struct.
    let a = action.pointee
    let via = a.via.map { ViaCallback(fn: $0, payload: a.via_payload, payloadFree: a.via_payload_free) }
    guard d != nil else {
        via?.release()
        return nullArgument(function, "dispatcher")
    }
    return withDispatcher(d, function) { (dispatcher) throws(UniFlowError) in
        try dispatcher.submit(via: via, waiting: waiting) { () throws(UniFlowError) in try dispatcher.resolve(a) }
    }
}
