import Glibc

// The core's out-of-memory policy, in one place.
//
// Every block the core allocates itself (the flat tables, copies of strings, text
// handed to the host) comes from these functions, which fail with `UF_ENOMEM`
// instead of trapping: the call that needed the memory returns `UF_ENOMEM` and,
// because allocations happen before the model changes, changes nothing. Memory the
// Swift runtime allocates for Swift values (strings, arrays, dictionaries) cannot
// be checked; as in every Swift program, running out of it ends the process.

enum Memory {
    static func outOfMemory(_ what: StaticString) -> UniFlowError {
        UniFlowError(.noMemory, "out of memory (\(what))")
    }

    /// `malloc` for `count` elements.
    static func allocate<T>(_ type: T.Type, count: Int, for what: StaticString) throws(UniFlowError) -> UnsafeMutablePointer<T> {
        guard let raw = malloc(Swift.max(count, 1) * MemoryLayout<T>.stride) else { throw outOfMemory(what) }
        return raw.assumingMemoryBound(to: T.self)
    }

    /// A NUL-terminated copy of a C string.
    static func copy(_ text: UnsafePointer<CChar>, for what: StaticString) throws(UniFlowError) -> UnsafeMutablePointer<CChar> {
        guard let copy = strdup(text) else { throw outOfMemory(what) }
        return copy
    }

    /// A NUL-terminated copy of `count` bytes.
    static func copy(_ bytes: UnsafeRawBufferPointer, for what: StaticString) throws(UniFlowError) -> UnsafeMutablePointer<CChar> {
        let copy = try allocate(CChar.self, count: bytes.count + 1, for: what)
        if let base = bytes.baseAddress { memcpy(copy, base, bytes.count) }
        copy[bytes.count] = 0
        return copy
    }

    /// A NUL-terminated copy of a Swift string (a NUL inside ends the C string).
    static func copy(_ text: String, for what: StaticString) throws(UniFlowError) -> UnsafeMutablePointer<CChar> {
        var text = text
        return try text.withUTF8 { bytes in Result { () throws(UniFlowError) in try copy(UnsafeRawBufferPointer(bytes), for: what) } }.get()
    }
}
