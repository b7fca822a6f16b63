import CUniFlow
import Glibc

// Version, status names and thread-local errors. Static strings come from
// `StaticString`s, whose bytes live in the binary and end in NUL.

@c @implementation
public func uf_version() -> UnsafePointer<CChar>? {
    cString(Version.staticText)
}

@c @implementation
public func uf_version_number() -> Int32 {
    Version.number
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

extension Version {
    static let staticText: StaticString = "0.1.0"
}

