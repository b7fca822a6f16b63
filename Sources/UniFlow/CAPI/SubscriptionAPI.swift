import CUniFlow
import Glibc

// Subscriptions and the accessors of the mutation a subscriber receives. The
// mutation is a `MutationRecord` on the processing thread's stack; text is made
// on first request and kept until the delivery ends.

@c @implementation
public func uf_subscribe(_ d: OpaquePointer?, _ when: UnsafePointer<CChar>?, _ fn: uf_subscriber_fn?,
                         _ payload: UnsafeMutableRawPointer?, _ payload_free: PayloadFree?,
                         _ out_id: UnsafeMutablePointer<UInt64>?) -> Int32 {
    // payload_free runs at once whenever the subscription is not made.
    guard let fn else {
        payload_free?(payload)
        return nullArgument("uf_subscribe", "fn")
    }
    guard d != nil else {
        payload_free?(payload)
        return nullArgument("uf_subscribe", "dispatcher")
    }
    return withDispatcher(d, "uf_subscribe") { (dispatcher) throws(UniFlowError) in
        do throws(UniFlowError) {
            let expression = try when.map { (text) throws(UniFlowError) in try FilterExpression.parse(String(cString: text)) }
                ?? FilterExpression(form: .anyMutation)
            let id = try dispatcher.exclusive { () throws(UniFlowError) -> UInt64 in
                try dispatcher.subscribe(try dispatcher.compile(expression), fn: fn, payload: payload, payloadFree: payload_free)
            }
            out_id?.pointee = id
            return .ok
        } catch {
            payload_free?(payload)
            throw error
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

@inline(__always)
private func record(_ m: OpaquePointer?) -> UnsafeMutablePointer<MutationRecord>? {
    m.map { UnsafeMutablePointer<MutationRecord>($0) }
}

@c @implementation
public func uf_mutation_dispatcher(_ m: OpaquePointer?) -> OpaquePointer? {
    record(m).map { OpaquePointer($0.pointee.dispatcher) }
}

@c @implementation
public func uf_mutation_subscription_id(_ m: OpaquePointer?) -> UInt64 {
    record(m)?.pointee.subscriptionID ?? 0
}

@c @implementation
public func uf_mutation_kind_of(_ m: OpaquePointer?) -> uf_mutation_kind {
    uf_mutation_kind(rawValue: UInt32(record(m)?.pointee.kind ?? 0))
}

@c @implementation
public func uf_mutation_seq(_ m: OpaquePointer?) -> UInt64 {
    record(m)?.pointee.seq ?? 0
}

@c @implementation
public func uf_mutation_feature(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m)?.pointee else { return nil }
    return UnsafePointer(dispatcher(from: r.dispatcher).hot.features[Int(r.feature)].name.pointer)
}

@c @implementation
public func uf_mutation_old_state(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m)?.pointee else { return nil }
    return stateName(r, r.oldState)
}

@c @implementation
public func uf_mutation_new_state(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m)?.pointee else { return nil }
    return stateName(r, r.newState)
}

private func stateName(_ r: MutationRecord, _ state: Int32) -> UnsafePointer<CChar>? {
    guard state >= 0 else { return nil }
    let d = dispatcher(from: r.dispatcher)
    return UnsafePointer(d.stateSlot(state, of: d.hot.features[Int(r.feature)]).name.pointer)
}

@c @implementation
public func uf_mutation_old_payload_json(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m)?.pointee, r.oldState >= 0 else { return nil }
    let d = dispatcher(from: r.dispatcher)
    if d.delivery.oldPayloadText == nil {
        d.delivery.oldPayloadText = mallocString(JSONValue.object(d.delivery.oldPayload ?? JSONObject()).jsonText)
    }
    return d.delivery.oldPayloadText.map { UnsafePointer($0) }
}

@c @implementation
public func uf_mutation_new_payload_json(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m)?.pointee, r.newState >= 0 else { return nil }
    let d = dispatcher(from: r.dispatcher)
    if d.delivery.newPayloadText == nil {
        d.delivery.newPayloadText = mallocString(JSONValue.object(d.delivery.newPayload ?? JSONObject()).jsonText)
    }
    return d.delivery.newPayloadText.map { UnsafePointer($0) }
}

@c @implementation
public func uf_mutation_json(_ m: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r = record(m)?.pointee else { return nil }
    let d = dispatcher(from: r.dispatcher)
    if d.delivery.mutationText == nil {
        d.delivery.mutationText = mallocString(d.mutationJSON(r).jsonText)
    }
    return d.delivery.mutationText.map { UnsafePointer($0) }
}

@c @implementation
public func uf_set_reporter(_ d: OpaquePointer?, _ fn: uf_report_fn?, _ payload: UnsafeMutableRawPointer?,
                            _ payload_free: PayloadFree?) -> Int32 {
    guard d != nil else {
        payload_free?(payload)
        return nullArgument("uf_set_reporter", "dispatcher")
    }
    return withDispatcher(d, "uf_set_reporter") { (dispatcher) throws(UniFlowError) in
        // Without a function the library keeps nothing of the payload: release it now.
        if fn == nil { payload_free?(payload) }
        let reporter = fn.map { CustomReporter(fn: $0, payload: payload, payloadFree: payload_free) }
        do throws(UniFlowError) {
            try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.setReporter(reporter) }
        } catch {
            reporter?.release()
            throw error
        }
        return .ok
    }
}
