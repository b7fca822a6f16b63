import CUniFlow
import Glibc

// The C layer's few idioms, in one place: handles, NULL arguments, failures,
// payloads released when a registration is refused, text handed to the caller.

/// A dispatcher crosses C as `Unmanaged<Dispatcher>.passRetained(...).toOpaque()`;
/// calls borrow it back without retaining (the handle's owner keeps it alive).
/// NULL is `UF_EINVAL`; a dispatcher inherited across `fork` is `UF_EMISUSE`.
@inline(__always)
func withDispatcher(_ d: OpaquePointer?, _ function: StaticString,
                    _ body: (Dispatcher) throws(UniFlowError) -> Status) -> Int32 {
    guard let d else { return nullArgument(function, "dispatcher") }
    return Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))._withUnsafeGuaranteedRef { dispatcher in
        do throws(UniFlowError) {
            if dispatcher.isForkedCopy { throw forkedCopy(function) }
            return try body(dispatcher).rawValue
        } catch {
            return fail(error)
        }
    }
}

/// `withDispatcher` for calls that register a callback: the payload is released
/// (its `payload_free` runs) whenever the registration is not made, NULL
/// dispatcher, a dispatcher inherited across `fork` and NULL callback included.
@inline(__always)
func withRegistration(_ d: OpaquePointer?, _ function: StaticString, payload: UnsafeMutableRawPointer?,
                      payloadFree: PayloadFree?, _ body: (Dispatcher) throws(UniFlowError) -> Status) -> Int32 {
    guard let d else {
        releasePayload(payload, payloadFree)
        return nullArgument(function, "dispatcher")
    }
    // withDispatcher refuses a forked copy before `body` runs: release here first.
    if dispatcher(from: UnsafeMutableRawPointer(d)).isForkedCopy {
        releasePayload(payload, payloadFree)
        return fail(forkedCopy(function))
    }
    return withDispatcher(d, function) { (dispatcher) throws(UniFlowError) in
        do throws(UniFlowError) {
            return try body(dispatcher)
        } catch {
            releasePayload(payload, payloadFree)
            throw error
        }
    }
}

/// What a registering entry point does with its own arguments: checks them,
/// asks for the callback (which checks `fn`; asking at its turn keeps the order
/// in which the checks name the arguments) and registers it; returns the id.
typealias CallbackRegistration<Function> =
    (Dispatcher, () throws(UniFlowError) -> HostCallback<Function>) throws(UniFlowError) -> UInt64

/// `uf_subscribe`, `uf_watch`, their deferred forms and `uf_intercept`: a host callback kept
/// under a new id, which `out_id` receives. The payload is released if the
/// registration fails, as `withRegistration` does.
func registerCallback<Function>(_ d: OpaquePointer?, _ function: StaticString, _ fn: Function?,
                                _ payload: UnsafeMutableRawPointer?, _ payloadFree: PayloadFree?,
                                _ outID: UnsafeMutablePointer<UInt64>?,
                                _ register: CallbackRegistration<Function>) -> Int32 {
    withRegistration(d, function, payload: payload, payloadFree: payloadFree) { (dispatcher) throws(UniFlowError) in
        let id = try register(dispatcher) { () throws(UniFlowError) in
            HostCallback(try required(fn, function, "fn"), payload: payload, payloadFree: payloadFree)
        }
        outID?.pointee = id
        return .ok
    }
}

/// The dispatcher behind a handle known to be valid (one passed to a callback).
@inline(__always)
func dispatcher(from raw: UnsafeMutableRawPointer) -> Dispatcher {
    Unmanaged<Dispatcher>.fromOpaque(raw).takeUnretainedValue()
}

/// A required argument: the value, or `UF_EINVAL` naming the function and the
/// parameter (`uf_register: definitions_json is NULL`).
@inline(__always)
func required<T>(_ value: T?, _ function: StaticString, _ parameter: StaticString) throws(UniFlowError) -> T {
    guard let value else { throw UniFlowError(.invalidArgument, "\(function): \(parameter) is NULL") }
    return value
}

/// `UF_EINVAL` for a NULL argument, recorded (for functions that return before
/// any dispatcher is involved).
@inline(never)
func nullArgument(_ function: StaticString, _ parameter: StaticString) -> Int32 {
    fail(UniFlowError(.invalidArgument, "\(function): \(parameter) is NULL"))
}

func forkedCopy(_ function: StaticString) -> UniFlowError {
    UniFlowError(.misuse, "\(function): this dispatcher was made before fork(); in the child it may only be freed")
}

/// Text the caller owns and frees with `uf_free`.
func callerString(_ text: String) throws(UniFlowError) -> UnsafeMutablePointer<CChar> {
    try Memory.copy(text, for: "the returned text")
}

/// Sets `*out` to text the caller frees with `uf_free` (nil: NULL).
@inline(__always)
func give(_ text: String?, to out: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) throws(UniFlowError) {
    out.pointee = try text.map { (text) throws(UniFlowError) in try callerString(text) }
}
