import CUniFlow

// Services (`uf_register_service`, `uf_invocation_*`, `uf_service_done`/`_error`):
// convert, call the core (Statecharts/StatechartServices.swift), convert back.

@c @implementation
public func uf_register_service(_ d: OpaquePointer?, _ name: UnsafePointer<CChar>?, _ start: uf_service_fn?,
                                _ stop: uf_service_fn?, _ payload: UnsafeMutableRawPointer?,
                                _ payload_free: PayloadFree?) -> Int32 {
    withRegistration(d, "uf_register_service", payload: payload, payloadFree: payload_free) { (dispatcher) throws(UniFlowError) in
        let name = String(cString: try required(name, "uf_register_service", "name"))
        let start = try required(start, "uf_register_service", "start")
        try dispatcher.exclusive { () throws(UniFlowError) in
            // The payload belongs to `start`'s registration; `stop` shares it and never frees it.
            try dispatcher.registerService(name, start: HostCallback(start, payload: payload, payloadFree: payload_free),
                                           stop: stop.map { HostCallback($0, payload: payload, payloadFree: nil) })
        }
        return .ok
    }
}

@inline(__always)
private func invocation(_ inv: OpaquePointer?) -> InvocationRecord? {
    inv.map { UnsafePointer<InvocationRecord>($0).pointee }
}

@c @implementation
public func uf_invocation_feature(_ inv: OpaquePointer?) -> UnsafePointer<CChar>? { invocation(inv)?.feature }

@c @implementation
public func uf_invocation_key(_ inv: OpaquePointer?) -> UnsafePointer<CChar>? { invocation(inv)?.key }

@c @implementation
public func uf_invocation_id(_ inv: OpaquePointer?) -> UnsafePointer<CChar>? { invocation(inv)?.id }

@c @implementation
public func uf_invocation_input_json(_ inv: OpaquePointer?) -> UnsafePointer<CChar>? { invocation(inv)?.input }

@c @implementation
public func uf_invocation_serial(_ inv: OpaquePointer?) -> UInt64 { invocation(inv)?.serial ?? 0 }

private func settle(_ d: OpaquePointer?, _ function: StaticString, _ serial: UInt64, _ json: UnsafePointer<CChar>?,
                    error: Bool) -> Int32 {
    withDispatcher(d, function) { (dispatcher) throws(UniFlowError) in
        let value = try json.map { (text) throws(UniFlowError) in try JSONParser.parse(String(cString: text)) } ?? .null
        let inside = dispatcher.isProcessingOnCurrentThread
        var queued = false
        try dispatcher.exclusive { () throws(UniFlowError) in
            queued = inside && dispatcher.charts.services.running[serial] != nil
            try dispatcher.serviceSettled(serial, error: error, value: value)
        }
        return queued ? .queued : .ok
    }
}

@c @implementation
public func uf_service_done(_ d: OpaquePointer?, _ serial: UInt64, _ output_json: UnsafePointer<CChar>?) -> Int32 {
    settle(d, "uf_service_done", serial, output_json, error: false)
}

@c @implementation
public func uf_service_error(_ d: OpaquePointer?, _ serial: UInt64, _ error_json: UnsafePointer<CChar>?) -> Int32 {
    settle(d, "uf_service_error", serial, error_json, error: true)
}
