import CUniFlow
import Glibc

// Subscriptions, deferred subscriptions and the reporter.

@c @implementation
public func uf_subscribe(_ d: OpaquePointer?, _ when: UnsafePointer<CChar>?, _ fn: uf_subscriber_fn?,
                         _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?,
                         _ out_id: UnsafeMutablePointer<UInt64>?) -> Int32 {
    registerCallback(d, "uf_subscribe", fn, payload, payload_free, out_id, subscription(when, deferred: false))
}

@c @implementation
public func uf_subscribe_deferred(_ d: OpaquePointer?, _ when: UnsafePointer<CChar>?, _ fn: uf_subscriber_fn?,
                                  _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?,
                                  _ out_id: UnsafeMutablePointer<UInt64>?) -> Int32 {
    registerCallback(d, "uf_subscribe_deferred", fn, payload, payload_free, out_id, subscription(when, deferred: true))
}

/// What `uf_subscribe` registers: compiles the filter `when` (every mutation
/// when NULL) and subscribes.
private func subscription(_ when: UnsafePointer<CChar>?, deferred: Bool) -> CallbackRegistration<uf_subscriber_fn> {
    { (dispatcher, callback) throws(UniFlowError) in
        let callback = try callback()
        var pathRefusal: String?
        let expression = try when.map { (text) throws(UniFlowError) in
            try FilterExpression.parse(String(cString: text), pathRefusal: &pathRefusal)
        } ?? FilterExpression(form: .anyMutation)
        return try dispatcher.exclusive { () throws(UniFlowError) -> UInt64 in
            try dispatcher.refusePath(pathRefusal, of: expression)
            return try dispatcher.subscribe(try dispatcher.compile(expression), deferred: deferred, callback)
        }
    }
}

@c @implementation
public func uf_unsubscribe(_ d: OpaquePointer?, _ id: UInt64) -> Int32 {
    withDispatcher(d, "uf_unsubscribe") { (dispatcher) throws(UniFlowError) in
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.unsubscribe(id) }
        return .ok
    }
}

@c @implementation
public func uf_set_reporter(_ d: OpaquePointer?, _ fn: uf_report_fn?, _ payload: UnsafeMutableRawPointer?,
                            _ payload_free: PayloadFree?) -> Int32 {
    guard let fn else {
        // Back to the built-in reporter: the library keeps nothing of the payload.
        // It is released last, once the dispatcher is no longer touched: its
        // payload_free may free the dispatcher.
        let status = withDispatcher(d, "uf_set_reporter") { (dispatcher) throws(UniFlowError) in
            try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.setReporter(nil) }
            return .ok
        }
        releasePayload(payload, payload_free)
        return status
    }
    return withRegistration(d, "uf_set_reporter", payload: payload, payloadFree: payload_free) { (dispatcher) throws(UniFlowError) in
        try dispatcher.exclusive { () throws(UniFlowError) in
            try dispatcher.setReporter(HostCallback(fn, payload: payload, payloadFree: payload_free))
        }
        return .ok
    }
}

// MARK: Mutations

@inline(__always)
private func record(_ m: OpaquePointer?) -> MutationRecord? {
    m.map { UnsafePointer<MutationRecord>($0).pointee }
}

@c @implementation
public func uf_mutation_dispatcher(_ m: OpaquePointer?) -> OpaquePointer? {
    record(m).map { OpaquePointer($0.dispatcher) }
}

@c @implementation
public func uf_mutation_subscription_id(_ m: OpaquePointer?) -> UInt64 {
    record(m)?.subscriptionID ?? 0
}

@c @implementation
public func uf_mutation_kind_of(_ m: OpaquePointer?) -> uf_mutation_kind {
    uf_mutation_kind(rawValue: UInt32(record(m)?.kind ?? 0))
}

@c @implementation
public func uf_mutation_seq(_ m: OpaquePointer?) -> UInt64 {
    record(m)?.seq ?? 0
}

@c @implementation
public func uf_mutation_key(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    record(m)?.key
}

@c @implementation
public func uf_mutation_dropped(_ m: OpaquePointer?) -> UInt64 {
    record(m)?.dropped ?? 0
}

@c @implementation
public func uf_mutation_feature(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m) else { return nil }
    return dispatcher(from: r.dispatcher).featureCName(r.feature)
}

@c @implementation
public func uf_mutation_old_state(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m) else { return nil }
    return dispatcher(from: r.dispatcher).stateCName(r.oldState, of: r.feature)
}

@c @implementation
public func uf_mutation_new_state(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m) else { return nil }
    return dispatcher(from: r.dispatcher).stateCName(r.newState, of: r.feature)
}

@c @implementation
public func uf_mutation_old_payload_json(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m) else { return nil }
    return dispatcher(from: r.dispatcher).scratch.delivery.oldPayloadText(r)
}

@c @implementation
public func uf_mutation_new_payload_json(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m) else { return nil }
    return dispatcher(from: r.dispatcher).scratch.delivery.newPayloadText(r)
}

@c @implementation
public func uf_mutation_json(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m) else { return nil }
    let core = dispatcher(from: r.dispatcher)
    return core.scratch.delivery.mutationText(r) { core.mutationJSON($0, $1) }
}

@c @implementation
public func uf_mutation_foreign(_ m: OpaquePointer?) -> Int32 {
    record(m)?.foreign == true ? 1 : 0
}
