import CUniFlow
import Glibc

// Version, status names and thread-local errors. Static strings come from
// `StaticString`s, whose bytes live in the binary and end in NUL.

@c @implementation
public func uf_version() -> UnsafePointer<CChar>? {
    Version.text
}

@c @implementation
public func uf_version_number() -> Int32 {
    UNIFLOW_VERSION_NUMBER
}

@c @implementation
public func uf_last_status() -> Int32 {
    ThreadError.current?.pointee.status ?? 0
}

@c @implementation
public func uf_last_error() -> UnsafePointer<CChar>? {
    if let message = ThreadError.current?.pointee.message { return UnsafePointer(message) }
    return cString("")
}

@c @implementation
public func uf_status_name(_ status: Int32) -> UnsafePointer<CChar>? {
    cString(Status(rawValue: status)?.staticName ?? "UF_UNKNOWN")
}

@c @implementation
public func uf_strerror(_ status: Int32) -> UnsafePointer<CChar>? {
    cString(Status(rawValue: status)?.staticSentence ?? "unknown status code")
}

@c @implementation
public func uf_free(_ p: UnsafeMutableRawPointer?) {
    free(p)
}

private func cString(_ text: StaticString) -> UnsafePointer<CChar> {
    UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
}

/// The library's version, read from the header's `UNIFLOW_VERSION`: the one place
/// it is written.
enum Version {
    /// A copy made once and kept for the life of the process (C borrows it forever).
    // Written once, on first use, and never again: safe to share.
    nonisolated(unsafe) static let text: UnsafePointer<CChar> = UNIFLOW_VERSION.withCString { UnsafePointer(strdup($0)!) }
}
