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
    withDispatcher(d, "uf_partition_claim") { (dispatcher) throws(UniFlowError) in
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.claim(Int(p)) }
        return .ok
    }
}

@c @implementation
public func uf_partition_release(_ d: OpaquePointer?, _ p: UInt32) -> Int32 {
    withDispatcher(d, "uf_partition_release") { (dispatcher) throws(UniFlowError) in
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.release(Int(p)) }
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
