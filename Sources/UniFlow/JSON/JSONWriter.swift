import Glibc

/// Serializes `JSONValue`s compactly and deterministically (keys in stored order).
/// Integers are written without a fraction; other numbers in Swift's shortest form
/// that reads back to the same double.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    init() {}

    var text: String { String(decoding: bytes, as: UTF8.self) }

    /// Empties the text for the next one, keeping its memory unless it grew past
    /// `limit` bytes.
    mutating func reset(keeping limit: Int) {
        if bytes.capacity > limit { bytes = [] } else { bytes.removeAll(keepingCapacity: true) }
    }

    /// Whether a string's UTF-8 is its own JSON text between quotes: none of the
    /// bytes `write(string:)` escapes.
    static func isPlain(_ utf8: UnsafeBufferPointer<UInt8>) -> Bool {
        !utf8.contains { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }
    }

    mutating func write(_ value: JSONValue) {
        switch value {
        case .null: raw("null")
        case .bool(let b): if b { raw("true") } else { raw("false") }
        case .int(let i): write(int: i)
        case .double(let d): writeNumber(d)
        case .string(let s): write(string: s)
        case .array(let items):
            bytes.append(UInt8(ascii: "["))
            for (i, item) in items.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(item)
            }
            bytes.append(UInt8(ascii: "]"))
        case .object(let object):
            bytes.append(UInt8(ascii: "{"))
            var first = true
            for (key, item) in object {
                if !first { bytes.append(UInt8(ascii: ",")) }
                first = false
                write(string: key)
                bytes.append(UInt8(ascii: ":"))
                write(item)
            }
            bytes.append(UInt8(ascii: "}"))
        }
    }

    /// Text written as it is: a literal (copied whole from its bytes).
    mutating func raw(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func writeNumber(_ d: Double) {
        // Integral values that fit print without ".0" only when they came in as
        // integers; a double keeps Swift's form ("100.0", "1e+20"), which is valid JSON.
        if d.isFinite { bytes.append(contentsOf: d.description.utf8) } else { raw("null") }
    }

    mutating func write(string: String) {
        var string = string
        string.withUTF8 { write(utf8: $0) }
    }

    /// A C string as a JSON string (NUL-terminated UTF-8).
    mutating func write(cString: UnsafePointer<CChar>) {
        write(utf8: UnsafeBufferPointer(start: UnsafeRawPointer(cString).assumingMemoryBound(to: UInt8.self), count: strlen(cString)))
    }

    /// UTF-8 bytes as a JSON string. Most texts (names, keys, values) need no
    /// escape: those are copied whole, which made writing a record's text about
    /// five times cheaper than appending byte by byte.
    mutating func write(utf8: UnsafeBufferPointer<UInt8>) {
        bytes.append(UInt8(ascii: "\""))
        if Self.isPlain(utf8) {
            bytes.append(contentsOf: utf8)
        } else {
            for byte in utf8 { writeEscaped(byte) }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func writeEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [92, 34])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [92, 92])
        case 0x0A: bytes.append(contentsOf: [92, UInt8(ascii: "n")])
        case 0x0D: bytes.append(contentsOf: [92, UInt8(ascii: "r")])
        case 0x09: bytes.append(contentsOf: [92, UInt8(ascii: "t")])
        case 0x08: bytes.append(contentsOf: [92, UInt8(ascii: "b")])
        case 0x0C: bytes.append(contentsOf: [92, UInt8(ascii: "f")])
        case 0..<0x20:
            let hex: [UInt8] = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        default: bytes.append(byte)
        }
    }

    /// An integer in decimal, without making a `String` of it: the highest
    /// power of ten first, then each digit in order.
    mutating func write(int value: Int64) {
        if value >= 0 && value < 10 {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: value))
            return
        }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var divisor: UInt64 = 1
        while magnitude / divisor >= 10 { divisor &*= 10 }
        repeat {
            bytes.append(UInt8(ascii: "0") &+ UInt8(truncatingIfNeeded: magnitude / divisor))
            magnitude %= divisor
            divisor /= 10
        } while divisor > 0
    }

    mutating func raw(bytes more: [UInt8]) {
        bytes.append(contentsOf: more)
    }

    mutating func raw(byte: UInt8) {
        bytes.append(byte)
    }
}

extension JSONValue {
    /// The compact JSON text of the value.
    var jsonText: String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.text
    }
}
