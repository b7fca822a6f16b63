import CUniFlow

// Partitions and owners of a partitioned dispatcher (docs/scale-out.md).

@c @implementation
public func uf_partition_of(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                            _ p: UnsafeMutablePointer<UInt32>?) -> Int32 {
    withDispatcher(d, "uf_partition_of") { (dispatcher) throws(UniFlowError) in
        let name = try required(feature, "uf_partition_of", "feature")
        let out = try required(p, "uf_partition_of", "p")
        let partition = try dispatcher.exclusive { () throws(UniFlowError) -> Int in
            try dispatcher.partition(of: String(cString: name), key: key.map { String(cString: $0) })
        }
        out.pointee = UInt32(partition)
        return .ok
    }
}

@c @implementation
public func uf_partition_claim(_ d: OpaquePointer?, _ p: UInt32) -> Int32 {
    withOwnership(d, "uf_partition_claim") { (dispatcher) throws(UniFlowError) in try dispatcher.claim(Int(p)) }
}

@c @implementation
public func uf_partition_release(_ d: OpaquePointer?, _ p: UInt32) -> Int32 {
    withOwnership(d, "uf_partition_release") { (dispatcher) throws(UniFlowError) in try dispatcher.release(Int(p)) }
}

/// A claim or a release: never from inside a callback (it writes a record of
/// its own, which a call being processed cannot interleave with).
private func withOwnership(_ d: OpaquePointer?, _ function: StaticString,
                           _ change: (Dispatcher) throws(UniFlowError) -> Void) -> Int32 {
    withDispatcher(d, function) { (dispatcher) throws(UniFlowError) in
        try dispatcher.refuseInsideCallbacks(function.description)
        try dispatcher.exclusive { () throws(UniFlowError) in try change(dispatcher) }
        return .ok
    }
}

@c @implementation
public func uf_partitions_get(_ d: OpaquePointer?, _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_partitions_get") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_json, "uf_partitions_get", "out_json")
        try give(try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.partitionsJSON().jsonText }, to: out)
        return .ok
    }
}

@c @implementation
public func uf_record_sink(_ d: OpaquePointer?, _ fn: uf_record_fn?, _ payload: UnsafeMutableRawPointer?,
                           _ payload_free: PayloadFree?) -> Int32 {
    withRegistration(d, "uf_record_sink", payload: payload, payloadFree: payload_free) { (dispatcher) throws(UniFlowError) in
        let sink = fn.map { HostCallback($0, payload: payload, payloadFree: payload_free) }
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.setRecordSink(sink) }
        // Without a function there is nothing to keep the payload for.
        if sink == nil { releasePayload(payload, payload_free) }
        return .ok
    }
}

@c @implementation
public func uf_record_json(_ r: OpaquePointer?) -> UnsafePointer<CChar>? {
    guard let r else { return nil }
    return UnsafePointer<RecordView>(r).pointee.text
}

@c @implementation
public func uf_record_partition(_ r: OpaquePointer?, _ p: UnsafeMutablePointer<UInt32>?) -> Int32 {
    readRecord(r, p, "uf_record_partition", "p") { $0.partition }
}

@c @implementation
public func uf_record_version(_ r: OpaquePointer?, _ v: UnsafeMutablePointer<UInt64>?) -> Int32 {
    readRecord(r, v, "uf_record_version", "v") { $0.version }
}

/// A value of the record a sink is shown, through an out-parameter.
private func readRecord<T>(_ r: OpaquePointer?, _ out: UnsafeMutablePointer<T>?, _ function: StaticString,
                           _ parameter: StaticString, _ value: (RecordView) -> T) -> Int32 {
    do throws(UniFlowError) {
        let record = try required(r, function, "r")
        try required(out, function, parameter).pointee = value(UnsafePointer<RecordView>(record).pointee)
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}

@c @implementation
public func uf_record_apply(_ d: OpaquePointer?, _ record_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_record_apply") { (dispatcher) throws(UniFlowError) in
        let text = try required(record_json, "uf_record_apply", "record_json")
        try dispatcher.refuseInsideCallbacks("uf_record_apply")
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.applyRecord(text) }
        return .ok
    }
}

@c @implementation
public func uf_partition_snapshot(_ d: OpaquePointer?, _ p: UInt32, _ json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_partition_snapshot") { (dispatcher) throws(UniFlowError) in
        let out = try required(json, "uf_partition_snapshot", "json")
        try give(try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.partitionSnapshot(Int(p)).jsonText }, to: out)
        return .ok
    }
}
