import Testing
@testable import UniFlow

/// `JSONTextReader` against jansson (`JSONParser.parse`): whenever the reader
/// returns a value it is exactly jansson's, and whenever jansson refuses a
/// text the reader declines it.
@Suite struct JSONTextReaderTests {
    /// What the reader and jansson made of one text.
    struct Outcome {
        var read: JSONValue?
        var parsed: Result<JSONValue, UniFlowError>
    }

    static func outcome(_ bytes: [UInt8]) -> Outcome {
        // A byte past the end that a reader must not take for part of the text.
        let padded = bytes + [UInt8(ascii: "1")]
        return padded.withUnsafeBytes { raw in
            let read = JSONTextReader.read(raw.baseAddress!, length: bytes.count)
            let parsed = Result { () throws(UniFlowError) -> JSONValue in try JSONParser.parse(raw.baseAddress!, length: bytes.count) }
            return Outcome(read: read, parsed: parsed)
        }
    }

    /// The reader's rule, checked for one text; returns whether it read it.
    @discardableResult
    static func check(_ bytes: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let outcome = outcome(bytes)
        guard let read = outcome.read else { return false }
        switch outcome.parsed {
        case .success(let parsed):
            #expect(identical(read, parsed), "read \(read.jsonText), jansson \(parsed.jsonText) for \(describe(bytes))",
                    sourceLocation: sourceLocation)
        case .failure(let error):
            Issue.record("read \(read.jsonText), jansson refused \(describe(bytes)): \(error.message)", sourceLocation: sourceLocation)
        }
        return true
    }

    @discardableResult
    static func check(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        check(Array(text.utf8), sourceLocation: sourceLocation)
    }

    static func describe(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.prefix(300), as: UTF8.self).debugDescription + (bytes.count > 300 ? "..." : "")
    }

    /// Equal as values and as what the core can tell apart: the same case
    /// (1 and 1.0 are not), the same bits of a double (0.0 and -0.0 are not),
    /// the same bytes of a string and the same order of keys.
    static func identical(_ a: JSONValue, _ b: JSONValue) -> Bool {
        switch (a, b) {
        case (.null, .null): true
        case (.bool(let x), .bool(let y)): x == y
        case (.int(let x), .int(let y)): x == y
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.string(let x), .string(let y)): x.utf8.elementsEqual(y.utf8)
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { identical($0, $1) }
        case (.object(let x), .object(let y)):
            x.count == y.count && zip(x.entries, y.entries).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && identical($0.value, $1.value) }
        default: false
        }
    }

    // MARK: Hand-picked texts

    /// Texts jansson accepts and the reader must read too (they are what
    /// records are made of), each checked against jansson.
    @Test(arguments: [
        "0", "-0", "1", "-1", "42", "1e3", "1E-2", "1.5", "0.1", "-0.0", "0.0", "42.5", "1.0", "2.50", "1e0", "1e+2",
        "123456789.125", "0.000001", "9007199254740992", "900719925474099.1", "9007199254740991e-3",
        "9223372036854775807", "-9223372036854775808", "1e22", "1e-22", "4.35e-5",
        "true", "false", "null", "\"\"", "\"x\"", "[]", "{}", "[[]]", "{\"a\":{}}", "[{}, [], {\"b\": []}]",
        " \t\r\n{ \"a\" : [ 1 , 2 ] , \"b\" : null } \n\t\r ",
        #""a\"b\\c\/d\be\ff\ng\rh\ti""#, #"{"k": "\\\"\\"}"#,
        "\"é ü 中文 😀\"", "{\"é\": \"\u{10FFFF}\"}", "\"\u{7F}\"",
        #"{"b": 1, "a": [true, null, 2.5, "x"], "c": {"d": -3}}"#,
        #"{"0":1,"1":1,"2":1,"3":1,"4":1,"5":1,"6":1,"7":1,"8":1,"9":1,"10":1,"11":1,"12":1,"13":1,"14":1,"15":1}"#,
        "{" + (0..<100).map { "\"k\($0)\": \($0)" }.joined(separator: ",") + "}",
        // Keys the reader knows (a table) and keys next to them that it does not.
        #"{"255":1,"256":2,"00":3,"-1":4,"uniflow_record":5,"uniflow_recor":6,"uniflow_recordx":7,"":8,"Kind":9,"kind":10}"#,
        #"{"uniflow_record":1,"fingerprint":"a73e1098b80d559e","partitions":16,"partition":16,"version":3,"prev":"c38260b8","node":"a","incarnation":"af277ecc54a8c606","at":1795924369437,"lines":[{"seq":2,"feature":"Transfer","kind":"actualization","state":"InProgress","payload":{"progress":42.5,"bytes":1048576,"total":4194304,"url":"https://example.com/files/archive.tar.gz","paused":false},"at":1795924369437,"action":{"kind":"actualize","feature":"Transfer","in":"InProgress"}}],"after":{"0":1,"1":1,"2":1,"3":1,"4":1,"5":1,"6":1,"7":1,"8":1,"9":1,"10":1,"11":1,"12":1,"13":1,"14":1,"15":1}}"#,
        String(repeating: "[", count: 256) + String(repeating: "]", count: 256),
        String(repeating: "{\"a\":", count: 255) + "[]" + String(repeating: "}", count: 255),
    ])
    func readsWhatRecordsAreMadeOf(text: String) {
        #expect(Self.check(text), "declined \(text.prefix(200))")
    }

    /// Texts the reader may decline (jansson reads some, refuses others);
    /// whatever it returns must be jansson's.
    @Test(arguments: [
        // Not one value.
        "", " ", "\n", "1 2", "{} {}", "[1,]", "{\"a\":1,}", "[,1]", "{,}", "[1 2]", "{\"a\" 1}", "{\"a\":}", "{1:2}",
        "[", "]", "{", "}", "[1", "{\"a\":1", "\"abc", "\"\\", "\"\\\"", "tru", "nul", "fals", "truex", "true1", "[true1]",
        "nulll", "True", "NULL", "'a'", "{'a':1}", "[1]x", "1,", "\u{FEFF}1", "//x\n1", "/**/1",
        // Numbers jansson refuses, or that need strtod's full algorithm.
        "01", "-01", "00", "-", "+1", ".5", "1.", "1.e3", "1e", "1e+", "-.5", "0x10", "1_000", "Infinity", "-Infinity", "NaN",
        "9223372036854775808", "-9223372036854775809", "18446744073709551616", "99999999999999999999",
        "1e999", "-1e999", "1e-999", "1e23", "1e-23", "9007199254740993.0", "0.1e-400", "0e99999", "1e0000000000000000002",
        "123456789012345678901234567890.5", "0.30000000000000004", "2.2250738585072014e-308", "1.7976931348623157e308",
        "0.00000000000000000000000000001", "-0e5", "1.5E+400",
        // Escapes.
        #""\u0041""#, #""\u0000""#, #"{"a\u0000b": 1}"#, #""\uD800""#, #""\uD83D\uDE00""#, #""\x41""#, #""\'""#, #""\a""#,
        #"{"a\/b": 1}"#, #"{"a/b": 1, "a\/b": 2}"#, #"{"\n": 1}"#,
        // Control characters inside strings.
        "\"a\tb\"", "\"a\nb\"", "\"\u{01}\"", "\"\u{1F}\"",
        // Duplicate keys, near and far apart.
        #"{"a": 1, "a": 2}"#, #"{"a": 1, "b": {"a": 2}, "b": 3}"#, #"[{"x":1},{"x":1,"x":1}]"#,
        "{" + (0..<40).map { "\"k\($0 % 39)\": \($0)" }.joined(separator: ",") + "}",
        // Too deep: level 257.
        String(repeating: "[", count: 257) + String(repeating: "]", count: 257),
        String(repeating: "{\"a\":", count: 256) + "[]" + String(repeating: "}", count: 256),
        String(repeating: "[", count: 3000) + String(repeating: "]", count: 3000),
        // Truncated records.
        #"{"uniflow_record":1,"fingerprint":"a73e"#, #"{"uniflow_record":1,"lines":[{"seq":2,"feature":"#,
    ])
    func followsJanssonWhereverItReads(text: String) {
        Self.check(text)
    }

    /// Bytes that are not UTF-8, or that are: the reader reads only
    /// well-formed sequences, as jansson does.
    @Test(arguments: [
        [0x22, 0xFF, 0x22], [0x22, 0xC0, 0x80, 0x22], [0x22, 0xC1, 0xBF, 0x22], [0x22, 0x80, 0x22],
        [0x22, 0xE0, 0x80, 0x80, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xF4, 0x90, 0x80, 0x80, 0x22],
        [0x22, 0xF5, 0x80, 0x80, 0x80, 0x22], [0x22, 0xF0, 0x80, 0x80, 0x80, 0x22], [0x22, 0xC3, 0x22],
        [0x22, 0xE2, 0x82, 0x22], [0x22, 0xC3, 0xA9, 0x22], [0x22, 0xE2, 0x82, 0xAC, 0x22], [0x22, 0xF0, 0x9F, 0x98, 0x80, 0x22],
        [0x22, 0xEF, 0xBF, 0xBF, 0x22], [0x22, 0xED, 0x9F, 0xBF, 0x22], [0x22, 0xEE, 0x80, 0x80, 0x22],
        [0x7B, 0x22, 0xC3, 0xA9, 0x22, 0x3A, 0x31, 0x7D], [0x7B, 0x22, 0xC3, 0x22, 0x3A, 0x31, 0x7D], [0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D],
        [0x5B, 0xC3, 0xA9, 0x5D], [0x22, 0x00, 0x22], [0x31, 0x00], [0x00], [0x5B, 0x31, 0x00, 0x5D],
    ] as [[UInt8]])
    func utf8AsJanssonSeesIt(bytes: [UInt8]) {
        let read = Self.check(bytes)
        let wellFormed = String(validating: bytes, as: UTF8.self) != nil && !bytes.contains(0)
        if read { #expect(wellFormed) }
    }

    @Test func whatJanssonRefusesIsDeclined() {
        // check() records an issue for any of these the reader reads; these
        // must be refused by jansson too, or the list is wrong.
        for text in ["{\"a\": 1, \"a\": 2}", "01", "9223372036854775808", "[1,]", "\"\u{01}\"", "1e999", ""] {
            let outcome = Self.outcome(Array(text.utf8))
            if case .some(let read) = outcome.read { Issue.record("read \(text) as \(read.jsonText)") }
            if case .success = outcome.parsed { Issue.record("jansson read \(text)") }
        }
    }

    @Test func parseFastGivesJanssonsErrors() {
        for text in ["", "{", "[1,]", "{\"a\": 1, \"a\": 2}", "{\"a\": 99999999999999999999}", "1e999", "\"\\uD800\"",
                     String(repeating: "[", count: 257) + String(repeating: "]", count: 257)] {
            let bytes = Array(text.utf8)
            let fast = bytes.withUnsafeBytes { raw in
                Result { () throws(UniFlowError) -> JSONValue in try JSONParser.parseFast(raw.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!, length: raw.count) }
            }
            let slow = Result { () throws(UniFlowError) -> JSONValue in try JSONParser.parse(text) }
            switch (fast, slow) {
            case (.failure(let a), .failure(let b)):
                #expect(a.status == b.status && a.message == b.message, "\(text.prefix(40))")
            default:
                Issue.record("\(text.prefix(40)): parseFast \(fast), parse \(slow)")
            }
        }
    }

    // MARK: Random texts

    /// Thousands of random documents, written with random whitespace: the
    /// reader reads most of them, and each as jansson does.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomDocuments(seed: UInt64) {
        var generator = DocumentGenerator(seed: seed)
        var readCount = 0
        let total = 1500
        for _ in 0..<total {
            let text = generator.document()
            if Self.check(text) { readCount += 1 }
        }
        // Most documents avoid what the reader declines (\u escapes, long
        // numbers, keys with escapes): it is not declining everything.
        #expect(readCount > total / 3, "read \(readCount) of \(total)")
    }

    /// The same documents with a few bytes changed, deleted, inserted or cut
    /// off: whatever the reader reads of them, jansson reads the same.
    @Test(arguments: [11, 12, 13, 14] as [UInt64])
    func randomlyMutatedDocuments(seed: UInt64) {
        var generator = DocumentGenerator(seed: seed)
        var readCount = 0, refusedCount = 0
        for _ in 0..<2000 {
            var bytes = generator.document()
            for _ in 0...generator.next(2) { generator.mutate(&bytes) }
            if Self.check(bytes) { readCount += 1 }
            if case .failure = Self.outcome(bytes).parsed { refusedCount += 1 }
        }
        // Both kinds happen: the mutations break documents, and leave some valid.
        #expect(readCount > 100 && refusedCount > 100, "read \(readCount), refused \(refusedCount)")
    }
}

/// Random JSON documents from a seed (SplitMix64), as bytes: values of every
/// kind, numbers in every spelling jansson knows, strings with escapes and
/// non-ASCII, keys that sometimes repeat, and whitespace between tokens.
struct DocumentGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    /// A number in 0..<bound.
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }

    private mutating func chance(_ percent: Int) -> Bool { next(100) < percent }

    mutating func document() -> [UInt8] {
        var out: [UInt8] = []
        whitespace(&out)
        value(&out, depth: 0)
        whitespace(&out)
        return out
    }

    private mutating func whitespace(_ out: inout [UInt8]) {
        guard chance(30) else { return }
        for _ in 0...next(3) { out.append([0x20, 0x09, 0x0A, 0x0D][next(4)]) }
    }

    private mutating func value(_ out: inout [UInt8], depth: Int) {
        let kind = depth >= 4 ? 2 + next(6) : next(8)
        switch kind {
        case 0, 1:
            out.append(UInt8(ascii: "{"))
            var used: [String] = []
            for i in 0..<next(depth == 0 ? 12 : 6) {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                whitespace(&out)
                var key = name()
                if !used.isEmpty, chance(3) { key = used[next(used.count)] } // a duplicate now and then
                used.append(key)
                string(key, &out, escapes: chance(5))
                whitespace(&out)
                out.append(UInt8(ascii: ":"))
                whitespace(&out)
                value(&out, depth: depth + 1)
                whitespace(&out)
            }
            out.append(UInt8(ascii: "}"))
        case 2:
            out.append(UInt8(ascii: "["))
            for i in 0..<next(5) {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                whitespace(&out)
                value(&out, depth: depth + 1)
                whitespace(&out)
            }
            out.append(UInt8(ascii: "]"))
        case 3, 4:
            number(&out)
        case 5:
            string(text(), &out, escapes: chance(30))
        default:
            out.append(contentsOf: ["true", "false", "null"][next(3)].utf8)
        }
    }

    private mutating func name() -> String {
        let names = ["kind", "feature", "state", "payload", "a", "b", "é", "0", "15", "seq", "at", "url", "Ü中", ""]
        return chance(70) ? names[next(names.count)] : "k\(next(1000))"
    }

    private mutating func text() -> String {
        let pieces = ["x", "https://example.com/a.tar.gz", "\"", "\\", "/", "\n", "\t", "\u{01}", "é", "😀", "中文", " ", "\u{7F}", "\u{0}"]
        return (0..<next(6)).map { _ in pieces[next(pieces.count)] }.joined()
    }

    /// A JSON string: escapes as JSONWriter writes them or, with `escapes`,
    /// every character that may be escaped, some as `\u`.
    private mutating func string(_ s: String, _ out: inout [UInt8], escapes: Bool) {
        out.append(UInt8(ascii: "\""))
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out.append(contentsOf: #"\""#.utf8)
            case "\\": out.append(contentsOf: #"\\"#.utf8)
            case "\n": out.append(contentsOf: #"\n"#.utf8)
            case "\t": out.append(contentsOf: #"\t"#.utf8)
            case "/" where escapes: out.append(contentsOf: #"\/"#.utf8)
            case _ where scalar.value < 0x20 || (escapes && chance(20)):
                if scalar.value > 0xFFFF {
                    let v = scalar.value - 0x10000
                    out.append(contentsOf: hex4(0xD800 + (v >> 10)).utf8)
                    out.append(contentsOf: hex4(0xDC00 + (v & 0x3FF)).utf8)
                } else {
                    out.append(contentsOf: hex4(scalar.value).utf8)
                }
            default: out.append(contentsOf: String(scalar).utf8)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    private func hex4(_ v: UInt32) -> String {
        let digits = String(v, radix: 16)
        return "\\u" + String(repeating: "0", count: 4 - digits.count) + digits
    }

    /// Numbers in jansson's grammar: integers near Int64's edges and small
    /// ones, reals with fractions and exponents of every length, and doubles
    /// as Swift writes them.
    private mutating func number(_ out: inout [UInt8]) {
        var s = ""
        switch next(6) {
        case 0:
            s = String(Int64(next(2000)) - 1000)
        case 1:
            let edges = ["9223372036854775807", "-9223372036854775808", "9223372036854775806", "-9223372036854775807", "0", "-0"]
            s = edges[next(edges.count)]
        case 2:
            s = String(Double(bitPattern: UInt64(truncatingIfNeeded: next(Int.max)) &* 2 | UInt64(next(2))))
            if s.contains("inf") || s.contains("nan") { s = "1.5" }
        case 3:
            s = String(Double(next(1_000_000)) / Double([1, 10, 100, 1000, 8, 3][next(6)]))
        default:
            if chance(30) { s += "-" }
            s += digits(1 + next(chance(80) ? 6 : 22), leadingZero: false)
            if chance(60) { s += "." + digits(1 + next(chance(80) ? 4 : 22), leadingZero: true) }
            if chance(40) {
                s += ["e", "E"][next(2)] + ["", "+", "-"][next(3)] + digits(1 + next(3), leadingZero: true)
            }
        }
        out.append(contentsOf: s.utf8)
    }

    private mutating func digits(_ count: Int, leadingZero: Bool) -> String {
        if count == 1 || !leadingZero && chance(10) { return String(next(10)) }
        var s = leadingZero ? String(next(10)) : String(1 + next(9))
        for _ in 1..<count { s += String(next(10)) }
        return s
    }

    /// One random change: a byte replaced, deleted or inserted, the text cut
    /// short, or a piece of it repeated.
    mutating func mutate(_ bytes: inout [UInt8]) {
        let interesting = Array("{}[],:\"\\/0123456789.eE+-tfnu \n".utf8) + [0x00, 0x01, 0x7F, 0x80, 0xC3, 0xA9, 0xED, 0xFF]
        let pick = interesting[next(interesting.count)]
        guard !bytes.isEmpty else { bytes.append(pick); return }
        let i = next(bytes.count)
        switch next(5) {
        case 0: bytes[i] = pick
        case 1: bytes.remove(at: i)
        case 2: bytes.insert(pick, at: i)
        case 3: bytes.removeSubrange(i...)
        default:
            let j = min(bytes.count, i + 1 + next(12))
            bytes.insert(contentsOf: Array(bytes[i..<j]), at: j)
        }
    }
}
