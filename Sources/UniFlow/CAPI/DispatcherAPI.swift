import CUniFlow
import Glibc

// Creating and freeing dispatchers, registering features, reading state.

@c @implementation
public func uf_dispatcher_new(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ options_json: UnsafePointer<CChar>?) -> Int32 {
    guard let out else { return nullArgument("uf_dispatcher_new", "out") }
    out.pointee = nil
    do throws(UniFlowError) {
        var options = DispatcherOptions()
        if let options_json {
            // The text is read as every JSON text is (UF_EJSON, or UF_ESCHEMA past the
            // depth limit); an option that does not fit is a bad argument (UF_EINVAL).
            options = try DispatcherOptions(json: try JSONParser.parse(options_json))
        }
        out.pointee = OpaquePointer(Unmanaged.passRetained(try Dispatcher(options: options)).toOpaque())
        return Status.ok.rawValue
    } catch {
        return fail(error)
    }
}

@c @implementation
public func uf_dispatcher_free(_ d: OpaquePointer?) {
    guard let d else { return }
    let unmanaged = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))
    let dispatcher = unmanaged.takeUnretainedValue()
    if dispatcher.isForkedCopy {
        // The parent's threads do not exist here: nothing to join, nothing to wait for.
        dispatcher.abandonInForkedChild()
        unmanaged.release()
        return
    }
    if dispatcher.isProcessingOnCurrentThread {
        _ = fail(UniFlowError(.misuse, "uf_dispatcher_free called from inside one of the dispatcher's callbacks; free it after the outer call returns"))
        return
    }
    dispatcher.stopTimerThread()
    do throws(UniFlowError) {
        try dispatcher.close()
    } catch {
        _ = fail(error)
        return
    }
    unmanaged.release()
}

@c @implementation
public func uf_register(_ d: OpaquePointer?, _ definitions_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_register") { (dispatcher) throws(UniFlowError) in
        let json = try JSONParser.parse(try required(definitions_json, "uf_register", "definitions_json"))
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.register(json) }
        return .ok
    }
}

@c @implementation
public func uf_register_file(_ d: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_register_file") { (dispatcher) throws(UniFlowError) in
        let path = try required(path, "uf_register_file", "path")
        let text = try FileReader.read(path)
        let json: JSONValue
        do throws(UniFlowError) {
            json = try JSONParser.parse(text)
        } catch {
            throw error.prefixed(String(cString: path))
        }
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.register(json) }
        return .ok
    }
}

@c @implementation
public func uf_state_get(_ d: OpaquePointer?, _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_state_get") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_json, "uf_state_get", "out_json")
        try give(dispatcher.exclusive { dispatcher.modelJSON().jsonText }, to: out)
        return .ok
    }
}

@c @implementation
public func uf_feature_get(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?,
                           _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_feature_get") { (dispatcher) throws(UniFlowError) in
        let name = String(cString: try required(feature, "uf_feature_get", "feature"))
        let out = try required(out_json, "uf_feature_get", "out_json")
        out.pointee = nil
        let value = try dispatcher.exclusive { () throws(UniFlowError) -> JSONValue? in
            dispatcher.featureJSON(try dispatcher.resolveFeature(name))
        }
        try give(value?.jsonText, to: out)
        return .ok
    }
}

@c @implementation
public func uf_instance_get(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                            _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_instance_get") { (dispatcher) throws(UniFlowError) in
        let name = String(cString: try required(feature, "uf_instance_get", "feature"))
        let key = String(cString: try required(key, "uf_instance_get", "key"))
        let out = try required(out_json, "uf_instance_get", "out_json")
        out.pointee = nil
        let value = try dispatcher.exclusive { () throws(UniFlowError) -> JSONValue? in
            try dispatcher.instanceJSON(try dispatcher.resolveFeature(name), key: key)
        }
        try give(value?.jsonText, to: out)
        return .ok
    }
}

@c @implementation
public func uf_definitions_get(_ d: OpaquePointer?, _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_definitions_get") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_json, "uf_definitions_get", "out_json")
        try give(dispatcher.exclusive { dispatcher.definitionsText() }, to: out)
        return .ok
    }
}

@c @implementation
public func uf_graph_dot(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?,
                         _ out_dot: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_graph_dot") { (dispatcher) throws(UniFlowError) in
        let out = try required(out_dot, "uf_graph_dot", "out_dot")
        out.pointee = nil
        let name = feature.map { String(cString: $0) }
        try give(try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.graphDOT(only: name) }, to: out)
        return .ok
    }
}

@c @implementation
public func uf_state_active(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?, _ key: UnsafePointer<CChar>?,
                            _ path: UnsafePointer<CChar>?, _ out_active: UnsafeMutablePointer<Int32>?) -> Int32 {
    withDispatcher(d, "uf_state_active") { (dispatcher) throws(UniFlowError) in
        let name = String(cString: try required(feature, "uf_state_active", "feature"))
        let state = String(cString: try required(path, "uf_state_active", "path"))
        let out = try required(out_active, "uf_state_active", "out_active")
        out.pointee = 0
        let keyText = key.map { String(cString: $0) }
        let active = try dispatcher.exclusive { () throws(UniFlowError) -> Bool in
            try dispatcher.isStateActive(feature: name, key: keyText, path: state)
        }
        out.pointee = active ? 1 : 0
        return .ok
    }
}
