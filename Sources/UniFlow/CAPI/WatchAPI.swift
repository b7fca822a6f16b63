import CUniFlow

// Watches and interceptors, and what their callbacks read.

@c @implementation
public func uf_watch(_ d: OpaquePointer?, _ select_json: UnsafePointer<CChar>?, _ fn: uf_watch_fn?,
                     _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?,
                     _ out_id: UnsafeMutablePointer<UInt64>?) -> Int32 {
    registerCallback(d, "uf_watch", fn, payload, payload_free, out_id, watch(select_json, out_id, deferred: false))
}

@c @implementation
public func uf_watch_deferred(_ d: OpaquePointer?, _ select_json: UnsafePointer<CChar>?, _ fn: uf_watch_fn?,
                              _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?,
                              _ out_id: UnsafeMutablePointer<UInt64>?) -> Int32 {
    registerCallback(d, "uf_watch_deferred", fn, payload, payload_free, out_id, watch(select_json, out_id, deferred: true))
}

/// What `uf_watch` registers: parses and checks the selector, then adds the
/// watch; the id reaches `out_id` before the first call, which may want it.
private func watch(_ select_json: UnsafePointer<CChar>?, _ out_id: UnsafeMutablePointer<UInt64>?,
                   deferred: Bool) -> CallbackRegistration<uf_watch_fn> {
    { (dispatcher, callback) throws(UniFlowError) in
        let text = try required(select_json, deferred ? "uf_watch_deferred" : "uf_watch", "select_json")
        let callback = try callback()
        let rule = try JSONParser.parse(text)
        do throws(UniFlowError) { try JsonLogic.validate(rule) } catch { throw error.prefixed("select_json") }
        return try dispatcher.exclusive { () throws(UniFlowError) -> UInt64 in
            try dispatcher.addWatch(WatchSelector(rule), deferred: deferred, callback) { out_id?.pointee = $0 }
        }
    }
}

@c @implementation
public func uf_watch_value_json(_ w: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let w else { return nil }
    let record = UnsafeMutablePointer<WatchEventRecord>(w)
    return record.pointee.text(previous: false, &dispatcher(from: record.pointee.dispatcher).scratch.watchText)
}

@c @implementation
public func uf_watch_previous_json(_ w: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let w else { return nil }
    let record = UnsafeMutablePointer<WatchEventRecord>(w)
    return record.pointee.text(previous: true, &dispatcher(from: record.pointee.dispatcher).scratch.watchText)
}

@c @implementation
public func uf_watch_id(_ w: OpaquePointer?) -> UInt64 {
    w.map { UnsafePointer<WatchEventRecord>($0).pointee.id } ?? 0
}

@c @implementation
public func uf_watch_dispatcher(_ w: OpaquePointer?) -> OpaquePointer? {
    w.map { OpaquePointer(UnsafePointer<WatchEventRecord>($0).pointee.dispatcher) }
}

// MARK: Interceptors

@c @implementation
public func uf_intercept(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?, _ fn: uf_interceptor_fn?,
                         _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?,
                         _ out_id: UnsafeMutablePointer<UInt64>?) -> Int32 {
    registerCallback(d, "uf_intercept", fn, payload, payload_free, out_id) { (dispatcher, callback) throws(UniFlowError) in
        let callback = try callback()
        let name = feature.map { String(cString: $0) }
        return try dispatcher.exclusive { () throws(UniFlowError) -> UInt64 in
            let index = try name.map { (name) throws(UniFlowError) in try dispatcher.resolveFeature(name) } ?? -1
            return try dispatcher.addInterceptor(feature: index, callback)
        }
    }
}

@inline(__always)
private func interceptedRecord(_ a: OpaquePointer?) -> InterceptedRecord? {
    a.map { UnsafePointer<InterceptedRecord>($0).pointee }
}

@c @implementation
public func uf_intercepted_kind(_ a: OpaquePointer?) -> uf_action_kind {
    interceptedRecord(a)?.kind.cKind ?? uf_action_kind(rawValue: 0)
}

@c @implementation
public func uf_intercepted_feature(_ a: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = interceptedRecord(a) else { return nil }
    return dispatcher(from: r.dispatcher).featureCName(r.feature)
}

@c @implementation
public func uf_intercepted_key(_ a: OpaquePointer?) -> UnsafePointer<CChar>? {
    interceptedRecord(a)?.key
}

@c @implementation
public func uf_intercepted_state(_ a: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = interceptedRecord(a) else { return nil }
    return dispatcher(from: r.dispatcher).stateCName(r.state, of: r.feature)
}

@c @implementation
public func uf_intercepted_json(_ a: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = interceptedRecord(a) else { return nil }
    let core = dispatcher(from: r.dispatcher)
    return core.scratch.intercepted.text { core.actionDescription($0) }
}

@c @implementation
public func uf_intercepted_id(_ a: OpaquePointer?) -> UInt64 {
    interceptedRecord(a)?.id ?? 0
}

@c @implementation
public func uf_intercepted_dispatcher(_ a: OpaquePointer?) -> OpaquePointer? {
    interceptedRecord(a).map { OpaquePointer($0.dispatcher) }
}

@c @implementation
public func uf_intercepted_set_reason(_ a: OpaquePointer?, _ reason: UnsafePointer<CChar>?) -> Int32 {
    do throws(UniFlowError) {
        let r = try required(interceptedRecord(a), "uf_intercepted_set_reason", "a")
        dispatcher(from: r.dispatcher).scratch.intercepted.reason = String(cString: try required(reason, "uf_intercepted_set_reason", "reason"))
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}
