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
        case .bool(let b): raw(b ? "true" : "false")
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

    mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func writeNumber(_ d: Double) {
        // Integral values that fit print without ".0" only when they came in as
        // integers; a double keeps Swift's form ("100.0", "1e+20"), which is valid JSON.
        if d.isFinite { raw(d.description) } else { raw("null") }
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

    /// An integer in decimal, without making a `String` of it.
    mutating func write(int value: Int64) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        // 20 digits hold any UInt64; written backwards, then copied in order.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var i = 20
            repeat {
                i -= 1
                digits[i] = UInt8(ascii: "0") &+ UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: digits[i...]))
        }
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
