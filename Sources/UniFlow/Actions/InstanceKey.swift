/// The rules for an instance's key (`docs/instances.md`): 1 to 256 bytes of UTF-8
/// without control characters, blanks, `.`, `[`, `]`, `<`, `>` or `,`, so that
/// `model.F.<key>` reaches an instance in a JsonLogic `var` path and `F[key]`
/// reads unambiguously in a filter.
enum InstanceKey {
    static let maxLength = 256

    /// Why the bytes cannot be a key (`must not be empty`, `'a.b' contains '.'`),
    /// or nil when they can. UTF-8 validity is the JSON parser's (or, from C, the
    /// caller's) concern; only the bytes the rules name are looked at.
    static func refusal(_ bytes: UnsafeRawBufferPointer) -> String? {
        if bytes.isEmpty { return "a key must not be empty" }
        if bytes.count > maxLength { return "a key is at most \(maxLength) bytes, got \(bytes.count)" }
        for byte in bytes {
            switch byte {
            case 0..<0x20, 0x7F:
                return "'\(quoted(bytes))' contains a control character"
            case UInt8(ascii: " "), UInt8(ascii: "."), UInt8(ascii: "["), UInt8(ascii: "]"),
                 UInt8(ascii: "<"), UInt8(ascii: ">"), UInt8(ascii: ","):
                let what = byte == UInt8(ascii: " ") ? "a blank" : "'\(Character(Unicode.Scalar(byte)))'"
                return "'\(quoted(bytes))' contains \(what)"
            default:
                continue
            }
        }
        return nil
    }

    static func refusal(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { refusal(UnsafeRawBufferPointer($0)) }
    }

    /// The key for a message, control characters escaped the way JSON would.
    private static func quoted(_ bytes: UnsafeRawBufferPointer) -> String {
        var out = ""
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            if scalar.value < 0x20 || scalar.value == 0x7F {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
