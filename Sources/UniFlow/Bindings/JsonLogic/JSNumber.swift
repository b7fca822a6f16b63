extension JsonLogic {
    /// JavaScript's conversions between numbers and strings, which json-logic-js
    /// relies on everywhere: `Number.prototype.toString` (ECMA-262 Number::toString),
    /// `Number(string)` (StringToNumber) and the global `parseFloat`.
    enum JSNumber {
        /// Number::toString with radix 10: the shortest digits that read back to
        /// the same double, laid out the JavaScript way (`1e+21`, `100000000000000000000`,
        /// `0.000001`, `1e-7`, `-0` as `0`).
        static func format(_ value: Double) -> String {
            if value.isNaN { return "NaN" }
            if value == 0 { return "0" }
            if value < 0 { return "-" + format(-value) }
            if value.isInfinite { return "Infinity" }
            // Swift's description already holds the shortest round-trip digits
            // (closest to the value when several are as short); only the layout differs.
            let (digits, n) = shortestDigits(value)
            let k = digits.count
            var out: [UInt8] = []
            if k <= n && n <= 21 {
                out = digits + [UInt8](repeating: zero, count: n - k)
            } else if 0 < n && n <= 21 {
                out = Array(digits[0..<n]) + [dot] + Array(digits[n...])
            } else if -6 < n && n <= 0 {
                out = [zero, dot] + [UInt8](repeating: zero, count: -n) + digits
            } else {
                let e = n - 1
                out = [digits[0]]
                if k > 1 { out += [dot] + Array(digits[1...]) }
                out += Array("e\(e < 0 ? "-" : "+")\(abs(e))".utf8)
            }
            return String(decoding: out, as: UTF8.self)
        }

        /// The decimal digits `d1…dk` (no leading or trailing zeros) and the exponent
        /// `n` with `value == 0.d1…dk × 10^n`, for a finite positive value.
        private static func shortestDigits(_ value: Double) -> (digits: [UInt8], n: Int) {
            let text = Array(value.description.utf8)
            var mantissa = text[...]
            var exponent = 0
            if let e = text.firstIndex(where: { $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }) {
                mantissa = text[..<e]
                exponent = Int(String(decoding: text[(e + 1)...], as: UTF8.self)) ?? 0
            }
            var digits: [UInt8] = []
            var pointAt: Int?
            for byte in mantissa {
                if byte == dot { pointAt = digits.count } else { digits.append(byte) }
            }
            var n = (pointAt ?? digits.count) + exponent
            while digits.first == zero { digits.removeFirst(); n -= 1 }
            while digits.last == zero { digits.removeLast() }
            return (digits, n)
        }

        /// StringToNumber (`Number(" 12 ")` is 12, `Number("")` 0, `Number("0x10")` 16,
        /// `Number("1e3")` 1000, `Number("12px")` NaN).
        static func parse(_ text: String) -> Double {
            let scalars = Array(text.unicodeScalars)
            var start = 0
            var end = scalars.count
            while start < end && isWhiteSpace(scalars[start]) { start += 1 }
            while end > start && isWhiteSpace(scalars[end - 1]) { end -= 1 }
            if start == end { return 0 }
            let body = Array(scalars[start..<end])
            if body.count > 2 && body[0] == "0", let radix = radix(of: body[1]) {
                return integer(Array(body[2...]), radix: radix) ?? .nan
            }
            var index = 0
            guard let value = decimalLiteral(body, at: &index), index == body.count else { return .nan }
            return value
        }

        /// `parseFloat`: the longest prefix of the text (after leading blanks) that is
        /// a decimal literal, or NaN. No hexadecimal, no trailing-garbage check.
        static func parseFloat(_ text: String) -> Double {
            let scalars = Array(text.unicodeScalars)
            var start = 0
            while start < scalars.count && isWhiteSpace(scalars[start]) { start += 1 }
            var index = 0
            return decimalLiteral(Array(scalars[start...]), at: &index) ?? .nan
        }

        /// Reads the longest StrDecimalLiteral at `index` (sign, `Infinity`, digits with
        /// an optional fraction and exponent) and moves `index` past it; nil when there is none.
        private static func decimalLiteral(_ s: [Unicode.Scalar], at index: inout Int) -> Double? {
            var i = index
            var negative = false
            if i < s.count && (s[i] == "+" || s[i] == "-") {
                negative = s[i] == "-"
                i += 1
            }
            let infinity = Array("Infinity".unicodeScalars)
            if s.count - i >= infinity.count && Array(s[i..<(i + infinity.count)]) == infinity {
                index = i + infinity.count
                return negative ? -.infinity : .infinity
            }
            var integerDigits = ""
            while i < s.count && isDigit(s[i]) { integerDigits.unicodeScalars.append(s[i]); i += 1 }
            var fractionDigits = ""
            if i < s.count && s[i] == "." {
                var j = i + 1
                while j < s.count && isDigit(s[j]) { fractionDigits.unicodeScalars.append(s[j]); j += 1 }
                // "1." is a literal; "." alone is not.
                if !integerDigits.isEmpty || !fractionDigits.isEmpty { i = j }
            }
            if integerDigits.isEmpty && fractionDigits.isEmpty { return nil }
            var exponent = ""
            if i < s.count && (s[i] == "e" || s[i] == "E") {
                var j = i + 1
                var sign = ""
                if j < s.count && (s[j] == "+" || s[j] == "-") { sign = String(s[j]); j += 1 }
                var digits = ""
                while j < s.count && isDigit(s[j]) { digits.unicodeScalars.append(s[j]); j += 1 }
                // "1e" and "1e+" stop before the "e".
                if !digits.isEmpty { exponent = "e" + sign + digits; i = j }
            }
            index = i
            let literal = (negative ? "-" : "") + (integerDigits.isEmpty ? "0" : integerDigits)
                + "." + (fractionDigits.isEmpty ? "0" : fractionDigits) + exponent
            // The text is a plain decimal literal by now, which Swift rounds correctly
            // (overflow to infinity, underflow to zero).
            return Double(literal) ?? .nan
        }

        /// A NonDecimalIntegerLiteral's digits, rounded to the nearest double; nil when
        /// a digit is not of the radix.
        private static func integer(_ digits: [Unicode.Scalar], radix: Int) -> Double? {
            let bitsPerDigit = radix == 16 ? 4 : radix == 8 ? 3 : 1
            var bits: [Bool] = []
            for scalar in digits {
                guard let digit = hexDigitValue(scalar), digit < radix else { return nil }
                for shift in stride(from: bitsPerDigit - 1, through: 0, by: -1) {
                    bits.append((digit >> shift) & 1 == 1)
                }
            }
            guard let first = bits.firstIndex(of: true) else { return 0 }
            let significant = bits[first...]
            // Keep the top 64 bits and fold the rest into a sticky bit: converting that
            // UInt64 rounds to 53 bits exactly as rounding the whole number would.
            var top: UInt64 = 0
            for bit in significant.prefix(64) { top = top << 1 | (bit ? 1 : 0) }
            let dropped = max(significant.count - 64, 0)
            if dropped > 0 && significant.dropFirst(64).contains(true) { top |= 1 }
            return Double(sign: .plus, exponent: dropped, significand: Double(top))
        }

        private static func radix(of scalar: Unicode.Scalar) -> Int? {
            switch scalar {
            case "x", "X": 16
            case "o", "O": 8
            case "b", "B": 2
            default: nil
            }
        }

        private static func hexDigitValue(_ scalar: Unicode.Scalar) -> Int? {
            switch scalar {
            case "0"..."9": Int(scalar.value - 48)
            case "a"..."f": Int(scalar.value - 87)
            case "A"..."F": Int(scalar.value - 55)
            default: nil
            }
        }

        private static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }

        /// StrWhiteSpaceChar: WhiteSpace (tab, VT, FF, space, NBSP, BOM, category Zs)
        /// and LineTerminator (LF, CR, LS, PS).
        static func isWhiteSpace(_ scalar: Unicode.Scalar) -> Bool {
            switch scalar.value {
            case 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680, 0x2000...0x200A,
                 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF: true
            default: false
            }
        }

        private static let zero = UInt8(ascii: "0")
        private static let dot = UInt8(ascii: ".")
    }
}
