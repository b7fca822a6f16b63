/// FNV-1a, 32 bits: where a key's instance lives (`fnv1a32(key) mod N`) and the
/// hash that chains a partition's records (`prev`). Fixed by the record format,
/// so every node computes the same value from the same bytes.
enum FNV1a {
    static let offsetBasis: UInt32 = 0x811c_9dc5
    static let prime: UInt32 = 0x0100_0193

    static func hash32(_ text: String) -> UInt32 {
        var text = text
        return text.withUTF8 { hash32(UnsafeRawBufferPointer($0)) }
    }

    static func hash32(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        var hash = offsetBasis
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* prime
        }
        return hash
    }

    static func hash32<Bytes: Sequence>(_ bytes: Bytes) -> UInt32 where Bytes.Element == UInt8 {
        var hash = offsetBasis
        for byte in bytes {
            hash ^= UInt32(byte)
            hash = hash &* prime
        }
        return hash
    }

    static func hash32(cString: UnsafePointer<CChar>) -> UInt32 {
        var hash = offsetBasis
        var p = cString
        while p.pointee != 0 {
            hash ^= UInt32(UInt8(bitPattern: p.pointee))
            hash = hash &* prime
            p += 1
        }
        return hash
    }

    /// Eight lowercase hex digits, as records write a hash.
    static func hex(_ value: UInt32) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: 8 - text.utf8.count) + text
    }
}
