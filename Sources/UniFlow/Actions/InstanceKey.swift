/// The rules for an instance's key (`docs/instances.md`): 1 to 256 bytes of UTF-8
/// without control characters (C0 and C1), blanks (any Unicode space or line
/// separator), `.`, `[`, `]`, `<`, `>` or `,`, so that
/// `model.F.<key>` reaches an instance in a JsonLogic `var` path and `F[key]`
/// reads unambiguously in a filter.
enum InstanceKey {
    static let maxLength = 256

    /// Why the bytes cannot be a key (`must not be empty`, `'a.b' contains '.'`),
    /// or nil when they can. A key must be well-formed UTF-8 even from C: the model
    /// is JSON, and two malformed keys would both come out as U+FFFD, the same
    /// member twice.
    static func refusal(_ bytes: UnsafeRawBufferPointer) -> String? {
        if bytes.isEmpty { return "a key must not be empty" }
        if bytes.count > maxLength { return "a key is at most \(maxLength) bytes, got \(bytes.count)" }
        if !isWellFormedUTF8(bytes) { return "'\(quoted(bytes))' is not valid UTF-8" }
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
        if bytes.contains(where: { $0 >= 0x80 }) {
            // Beyond ASCII: the C1 controls (U+0080-U+009F) and Unicode's blanks
            // (no-break and ideographic spaces, line and paragraph separators).
            for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars where scalar.value >= 0x80 {
                if scalar.value <= 0x9F { return "'\(quoted(bytes))' contains a control character" }
                switch scalar.properties.generalCategory {
                case .spaceSeparator, .lineSeparator, .paragraphSeparator:
                    return "'\(quoted(bytes))' contains a blank"
                default:
                    continue
                }
            }
        }
        return nil
    }

    static func refusal(_ text: String) -> String? {
        var text = text
        return text.withUTF8 { refusal(UnsafeRawBufferPointer($0)) }
    }

    /// UTF-8 as RFC 3629 defines it: no overlong forms, no surrogates, nothing
    /// above U+10FFFF.
    static func isWellFormedUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var i = 0
        while i < bytes.count {
            let lead = bytes[i]
            if lead < 0x80 {
                i += 1
                continue
            }
            var low: UInt8 = 0x80, high: UInt8 = 0xBF
            let trailing: Int
            switch lead {
            case 0xC2...0xDF: trailing = 1
            case 0xE0: trailing = 2; low = 0xA0
            case 0xE1...0xEC, 0xEE...0xEF: trailing = 2
            case 0xED: trailing = 2; high = 0x9F
            case 0xF0: trailing = 3; low = 0x90
            case 0xF1...0xF3: trailing = 3
            case 0xF4: trailing = 3; high = 0x8F
            default: return false
            }
            guard i + trailing < bytes.count, (low...high).contains(bytes[i + 1]) else { return false }
            var k = 2
            while k <= trailing {
                guard (0x80...0xBF).contains(bytes[i + k]) else { return false }
                k += 1
            }
            i += trailing + 1
        }
        return true
    }

    /// The key for a message, control characters escaped the way JSON would.
    private static func quoted(_ bytes: UnsafeRawBufferPointer) -> String {
        var out = ""
        for scalar in String(decoding: bytes, as: UTF8.self).unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
