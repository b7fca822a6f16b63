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

    /// Forgets `payload_free` and returns what runs it. For a callback kept in a
    /// class's storage: `payload_free` is the host's code and may call the library
    /// back (`uf_unsubscribe` may), which must not find that storage in the middle
    /// of a modifying access, as `storage[i].callback.release()` would leave it.
    mutating func takeRelease() -> PendingRelease {
        defer { payloadFree = nil }
        return PendingRelease(payloadFree: payloadFree, payload: payload)
    }

    /// Runs `payload_free` of a value that is dropped right after.
    consuming func releaseAndDrop() {
        payloadFree?(payload)
    }
}

/// A `payload_free` taken from its callback, to run once the storage that held it
/// is no longer being accessed.
struct PendingRelease {
    let payloadFree: PayloadFree?
    let payload: UnsafeMutableRawPointer?

    func run() { payloadFree?(payload) }
}

// C function pointers are plain addresses: registrations that hold one can live in
// the flat, never-retained tables of `HotStorage`.
extension HostCallback: BitwiseCopyable where Function: BitwiseCopyable {}

/// Releases the payload of a registration that was refused before the library kept it.
@inline(__always)
func releasePayload(_ payload: UnsafeMutableRawPointer?, _ payloadFree: PayloadFree?) {
    payloadFree?(payload)
}
