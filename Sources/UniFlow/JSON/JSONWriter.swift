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
        case .int(let i): raw(String(i))
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
        bytes.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
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
        bytes.append(UInt8(ascii: "\""))
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
