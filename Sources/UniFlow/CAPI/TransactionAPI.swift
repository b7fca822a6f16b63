import CUniFlow

// Transactions, snapshots and journals (SPEC 10).

@c @implementation
public func uf_submit_batch(_ d: OpaquePointer?, _ actions_json_array: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_submit_batch") { (dispatcher) throws(UniFlowError) in
        guard let actions_json_array else { throw UniFlowError(.invalidArgument, "uf_submit_batch: actions_json_array is NULL") }
        let json = try JSONParser.parse(actions_json_array)
        guard let items = json.arrayValue else {
            throw UniFlowError(.schema, "a batch must be an array of actions, got \(json.kindName)")
        }
        var requests: [ActionRequest] = []
        for (i, item) in items.enumerated() {
            do throws(UniFlowError) {
                requests.append(try ActionRequest.decode(item))
            } catch {
                throw error.prefixed("batch[\(i)]")
            }
        }
        try dispatcher.submitBatch(requests)
        return .ok
    }
}

@c @implementation
public func uf_state_restore(_ d: OpaquePointer?, _ model_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_state_restore") { (dispatcher) throws(UniFlowError) in
        guard let model_json else { throw UniFlowError(.invalidArgument, "uf_state_restore: model_json is NULL") }
        try dispatcher.restore(try JSONParser.parse(model_json))
        return .ok
    }
}

@c @implementation
public func uf_replay_file(_ d: OpaquePointer?, _ journal_path: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_replay_file") { (dispatcher) throws(UniFlowError) in
        guard let journal_path else { throw UniFlowError(.invalidArgument, "uf_replay_file: journal_path is NULL") }
        try dispatcher.refuseInsideCallbacks("uf_replay_file")
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.replay(path: journal_path) }
        return .ok
    }
}
