import CUniFlow

// Transactions, snapshots and journals.

@c @implementation
public func uf_submit_batch(_ d: OpaquePointer?, _ actions_json_array: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_submit_batch") { (dispatcher) throws(UniFlowError) in
        try dispatcher.submitBatch(try required(actions_json_array, "uf_submit_batch", "actions_json_array"))
        return .ok
    }
}

@c @implementation
public func uf_state_restore(_ d: OpaquePointer?, _ model_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_state_restore") { (dispatcher) throws(UniFlowError) in
        try dispatcher.restore(try JSONParser.parse(try required(model_json, "uf_state_restore", "model_json")))
        return .ok
    }
}

@c @implementation
public func uf_replay_file(_ d: OpaquePointer?, _ journal_path: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_replay_file") { (dispatcher) throws(UniFlowError) in
        let path = try required(journal_path, "uf_replay_file", "journal_path")
        try dispatcher.refuseInsideCallbacks("uf_replay_file")
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.replay(path: path) }
        return .ok
    }
}

@c @implementation
public func uf_snapshot_get(_ d: OpaquePointer?, _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_snapshot_get") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_json, "uf_snapshot_get", "out_json")
        try give(dispatcher.exclusive { dispatcher.snapshotJSON().jsonText }, to: out)
        return .ok
    }
}

@c @implementation
public func uf_snapshot_restore(_ d: OpaquePointer?, _ snapshot_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_snapshot_restore") { (dispatcher) throws(UniFlowError) in
        try dispatcher.restoreSnapshot(try JSONParser.parse(try required(snapshot_json, "uf_snapshot_restore", "snapshot_json")))
        return .ok
    }
}
