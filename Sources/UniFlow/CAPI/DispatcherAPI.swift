import CUniFlow
import Glibc

// Creating and freeing dispatchers, registering features, reading state.

@c @implementation
public func uf_dispatcher_new(_ out: UnsafeMutablePointer<OpaquePointer?>?, _ options_json: UnsafePointer<CChar>?) -> Int32 {
    guard let out else { return nullArgument("uf_dispatcher_new", "out") }
    out.pointee = nil
    var options = DispatcherOptions()
    if let options_json {
        do throws(UniFlowError) {
            options = try DispatcherOptions(json: try JSONParser.parse(options_json))
        } catch {
            // Any options problem other than unreadable JSON is a bad argument.
            return fail(error.status == .invalidJSON ? error : UniFlowError(.invalidArgument, error.message))
        }
    }
    let dispatcher: Dispatcher
    do throws(UniFlowError) {
        dispatcher = try Dispatcher(options: options)
    } catch {
        return fail(error)
    }
    out.pointee = OpaquePointer(Unmanaged.passRetained(dispatcher).toOpaque())
    return Status.ok.rawValue
}

@c @implementation
public func uf_dispatcher_free(_ d: OpaquePointer?) {
    guard let d else { return }
    let unmanaged = Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))
    do throws(UniFlowError) {
        try unmanaged.takeUnretainedValue().close()
    } catch {
        _ = fail(error)
        return
    }
    unmanaged.release()
}

@c @implementation
public func uf_register(_ d: OpaquePointer?, _ definitions_json: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_register") { (dispatcher) throws(UniFlowError) in
        guard let definitions_json else { throw UniFlowError(.invalidArgument, "uf_register: definitions_json is NULL") }
        let json = try JSONParser.parse(definitions_json)
        try dispatcher.exclusive { () throws(UniFlowError) in try dispatcher.register(json) }
        return .ok
    }
}

@c @implementation
public func uf_register_file(_ d: OpaquePointer?, _ path: UnsafePointer<CChar>?) -> Int32 {
    withDispatcher(d, "uf_register_file") { (dispatcher) throws(UniFlowError) in
        guard let path else { throw UniFlowError(.invalidArgument, "uf_register_file: path is NULL") }
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
        guard let out_json else { throw UniFlowError(.invalidArgument, "uf_state_get: out_json is NULL") }
        let text = dispatcher.exclusive { dispatcher.modelJSON().jsonText }
        out_json.pointee = mallocString(text)
        return .ok
    }
}

@c @implementation
public func uf_feature_get(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?,
                           _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_feature_get") { (dispatcher) throws(UniFlowError) in
        guard let feature else { throw UniFlowError(.invalidArgument, "uf_feature_get: feature is NULL") }
        guard let out_json else { throw UniFlowError(.invalidArgument, "uf_feature_get: out_json is NULL") }
        out_json.pointee = nil
        let name = String(cString: feature)
        let state = try dispatcher.exclusive { () throws(UniFlowError) -> JSONValue? in
            dispatcher.featureState(Int(try dispatcher.resolveFeature(name)))
        }
        if let state { out_json.pointee = mallocString(state.jsonText) }
        return .ok
    }
}

@c @implementation
public func uf_definitions_get(_ d: OpaquePointer?, _ out_json: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_definitions_get") { (dispatcher) throws(UniFlowError) in
        guard let out_json else { throw UniFlowError(.invalidArgument, "uf_definitions_get: out_json is NULL") }
        let text = dispatcher.exclusive { dispatcher.definitionsText() }
        out_json.pointee = mallocString(text)
        return .ok
    }
}
