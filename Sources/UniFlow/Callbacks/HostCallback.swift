/// A C `payload_free` pointer as the core stores it.
public typealias PayloadFree = @convention(c) (UnsafeMutableRawPointer?) -> Void

/// A host's C function with its user payload: what every registration keeps
/// (subscriptions, watches, interceptors, handlers, the reporter, via callbacks).
///
/// The host is promised that `payload_free` runs exactly once. `release()` runs it
/// and forgets it, so a copy that was released cannot release again; the owner of
/// the registration is the one copy that may release (others only call).
struct HostCallback<Function> {
    let function: Function
    let payload: UnsafeMutableRawPointer?
    private(set) var payloadFree: PayloadFree?

    init(_ function: Function, payload: UnsafeMutableRawPointer?, payloadFree: PayloadFree?) {
        self.function = function
        self.payload = payload
        self.payloadFree = payloadFree
    }

    /// Runs `payload_free` (once: a second call on this copy does nothing).
    mutating func release() {
        let free = payloadFree
        payloadFree = nil
        free?(payload)
    }

    /// Runs `payload_free` of a value that is dropped right after.
    consuming func releaseAndDrop() {
        payloadFree?(payload)
    }
}

// C function pointers are plain addresses: registrations that hold one can live in
// the flat, never-retained tables of `HotStorage`.
extension HostCallback: BitwiseCopyable where Function: BitwiseCopyable {}

/// Releases the payload of a registration that was refused before the library kept it.
@inline(__always)
func releasePayload(_ payload: UnsafeMutableRawPointer?, _ payloadFree: PayloadFree?) {
    payloadFree?(payload)
}
