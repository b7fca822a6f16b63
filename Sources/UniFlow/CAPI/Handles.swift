import CUniFlow

/// A dispatcher crosses C as `Unmanaged<Dispatcher>.passRetained(...).toOpaque()`;
/// calls borrow it back without retaining (the handle's owner keeps it alive).
@inline(__always)
func withDispatcher(_ d: OpaquePointer?, _ function: StaticString,
                    _ body: (Dispatcher) throws(UniFlowError) -> Status) -> Int32 {
    guard let d else { return nullArgument(function, "dispatcher") }
    return Unmanaged<Dispatcher>.fromOpaque(UnsafeRawPointer(d))._withUnsafeGuaranteedRef { dispatcher in
        do throws(UniFlowError) {
            return try body(dispatcher).rawValue
        } catch {
            return fail(error)
        }
    }
}

/// The dispatcher behind a handle known to be valid (one passed to a callback).
@inline(__always)
func dispatcher(from raw: UnsafeMutableRawPointer) -> Dispatcher {
    Unmanaged<Dispatcher>.fromOpaque(raw).takeUnretainedValue()
}

/// A C `payload_free` pointer as the core stores it.
public typealias PayloadFree = @convention(c) (UnsafeMutableRawPointer?) -> Void

/// Copies a Swift string into memory the caller frees with `uf_free`.
func mallocString(_ text: String) -> UnsafeMutablePointer<CChar>? {
    text.withCString { strdup($0) }
}

import Glibc
