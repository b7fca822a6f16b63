import Glibc

/// Reads JSON text straight into a `JSONValue`, for the record hot path
/// (`uf_record_apply`), and declines everything but the plain cases.
///
/// Why it exists: a follower applies one record per outer call of the writer,
/// and the goal is that applying a record of one mutation costs at most 1.5x
/// that mutation made locally (`uf_record_apply_one` against
/// `uf_submit_actualize` in bench/README.md). Parsed by jansson, a record of one
/// actualize (about 600 bytes, 45 values) cost 192,000 instructions against
/// the local action's 47,700 (4.0x): 67% of it was `json_loadb` (a malloc per
/// value and a hashtable per object), the conversion of that tree to
/// `JSONValue` about 25,000 more and `json_delete` 23,000. Read here, reading
/// costs about 20,000 (one allocation per container and per string longer than
/// Swift's small strings), and the whole apply 46,800 (0.98x).
///
/// It is not a second JSON engine. jansson (`JSONParser.parse`) stays the one
/// that decides what is valid and says why not: this reader returns nil for
/// anything it does not fully handle, and its caller then parses the text with
/// `JSONParser.parse`, which gives the error its canonical message (and line and
/// column). The rule that keeps that safe: whenever this reader returns a value,
/// it is exactly the value `JSONParser.parse` returns for the same text (the
/// same cases, numbers of the same kind and bits, keys in the same order).
/// `JSONTextReaderTests` checks it against jansson over hand-picked and random
/// texts. It declines (returns nil) on:
///
/// * any text that is not one JSON value with optional whitespace around it
///   (jansson's `JSON_DECODE_ANY`: a lone scalar is a document);
/// * a `\u` escape anywhere, and any escape in an object's key (the keys are
///   then compared as the bytes of the text);
/// * a byte of a string below 0x20, and bytes of 0x80 and above that are not
///   well-formed UTF-8 by jansson's rules (no overlong forms, no surrogates,
///   nothing above U+10FFFF);
/// * a key that may repeat in its object (jansson refuses duplicates): two keys
///   of one object with the same 64-bit hash, equal or not;
/// * an integer outside `Int64`, and any number with a fraction or an exponent
///   that it cannot convert exactly as `strtod` does: it converts only those
///   whose significand fits 2^53 and whose power of ten is at most 22 either
///   way, where one correctly rounded multiplication or division is the
///   correctly rounded result that glibc's `strtod` gives too (Clinger's fast
///   path);
/// * containers nested deeper than `JSONParser.maxDepth`.
struct JSONTextReader: ~Copyable {
    /// The value of the whole text, or nil when jansson must read it.
    static func read(_ bytes: UnsafeRawPointer, length: Int) -> JSONValue? {
        var reader = JSONTextReader(bytes.assumingMemoryBound(to: UInt8.self), length: length)
        reader.skipWhitespace()
        guard let value = reader.value(depth: 1) else { return nil }
        reader.skipWhitespace()
        // Not `at == end ? value : nil`: JSONValue is ExpressibleByNilLiteral,
        // so that `nil` would be `.null`, not "declined".
        guard reader.at == reader.end else { return Optional.none }
        return value
    }

    private let text: UnsafePointer<UInt8>
    private let end: Int
    private var at = 0

    // The values and keys of the containers being read, innermost last. A
    // container, once closed, moves its own off the top into an array of
    // exactly its size, so that no container's array grows while it is read
    // and nothing is retained and released on the way.
    private var values: UnsafeMutablePointer<JSONValue>
    private var valueCount = 0
    private var valueCapacity: Int
    private var keys: UnsafeMutablePointer<PendingKey>
    private var keyCount = 0
    private var keyCapacity: Int

    private struct PendingKey {
        var name: String
        /// FNV-1a of the key's bytes: keys of one object with equal hashes may
        /// be duplicates, which jansson is left to refuse.
        var hash: UInt64
    }

    /// FNV-1a, 64 bits, over a key's bytes.
    static let hashBasis: UInt64 = 0xcbf2_9ce4_8422_2325

    @inline(__always)
    static func hash(_ hash: UInt64, _ byte: UInt8) -> UInt64 { (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }

    private init(_ text: UnsafePointer<UInt8>, length: Int) {
        self.text = text
        end = length
        valueCapacity = 32
        values = .allocate(capacity: valueCapacity)
        keyCapacity = 32
        keys = .allocate(capacity: keyCapacity)
    }

    deinit {
        // What a declined text left on the stacks.
        values.deinitialize(count: valueCount)
        values.deallocate()
        keys.deinitialize(count: keyCount)
        keys.deallocate()
    }

    // MARK: Values

    private mutating func value(depth: Int) -> JSONValue? {
        guard at < end else { return nil }
        switch text[at] {
        case UInt8(ascii: "{"): return object(depth: depth)
        case UInt8(ascii: "["): return array(depth: depth)
        case UInt8(ascii: "\""):
            at += 1
            return string().map { .string($0) }
        case UInt8(ascii: "t"): return literal("true", .bool(true))
        case UInt8(ascii: "f"): return literal("false", .bool(false))
        case UInt8(ascii: "n"): return literal("null", .null)
        default: return number()
        }
    }

    private mutating func literal(_ word: StaticString, _ value: JSONValue) -> JSONValue? {
        let count = word.utf8CodeUnitCount
        guard end - at >= count, memcmp(text + at, word.utf8Start, count) == 0 else { return nil }
        at += count
        return value
    }

    private mutating func array(depth: Int) -> JSONValue? {
        guard depth <= JSONParser.maxDepth else { return nil }
        at += 1
        let first = valueCount
        skipWhitespace()
        if at < end, text[at] == UInt8(ascii: "]") {
            at += 1
            return .array([])
        }
        while true {
            guard let item = value(depth: depth + 1) else { return nil }
            push(item)
            guard let more = nextMember(closing: UInt8(ascii: "]")) else { return nil }
            if !more { break }
        }
        // reserveCapacity and append, not Array(unsafeUninitializedCapacity:):
        // that one allocates through an unspecialized generic path that looks up
        // the storage's type metadata at run time, which cost more than the rest.
        var items: [JSONValue] = []
        items.reserveCapacity(valueCount - first)
        for i in first..<valueCount { items.append((values + i).move()) }
        valueCount = first
        return .array(items)
    }

    private mutating func object(depth: Int) -> JSONValue? {
        guard depth <= JSONParser.maxDepth else { return nil }
        at += 1
        let first = valueCount, firstKey = keyCount
        skipWhitespace()
        if at < end, text[at] == UInt8(ascii: "}") {
            at += 1
            return .object(JSONObject())
        }
        // One bit per key's hash (mod 64): a key whose bit is taken is compared
        // with the keys before it; past `pairwiseKeys` keys, all are sorted at the end.
        var seen: UInt64 = 0
        while true {
            guard at < end, text[at] == UInt8(ascii: "\"") else { return nil }
            at += 1
            guard let key = key() else { return nil }
            if keyCount - firstKey < Self.pairwiseKeys {
                let bit: UInt64 = 1 &<< (key.hash & 63)
                if seen & bit != 0 {
                    for i in firstKey..<keyCount where keys[i].hash == key.hash { return nil }
                }
                seen |= bit
            }
            pushKey(key)
            skipWhitespace()
            guard at < end, text[at] == UInt8(ascii: ":") else { return nil }
            at += 1
            skipWhitespace()
            guard let item = value(depth: depth + 1) else { return nil }
            push(item)
            guard let more = nextMember(closing: UInt8(ascii: "}")) else { return nil }
            if !more { break }
        }
        let count = valueCount - first
        if count > Self.pairwiseKeys, !keysAreDistinct(from: firstKey, count: count) { return nil }
        var entries: [(key: String, value: JSONValue)] = []
        entries.reserveCapacity(count)
        for i in 0..<count {
            entries.append((key: (keys + firstKey + i).move().name, value: (values + first + i).move()))
        }
        valueCount = first
        keyCount = firstKey
        return .object(JSONObject(entries))
    }

    /// The keys of an object up to which duplicates are looked for as they are read.
    private static let pairwiseKeys = 32

    /// No two keys of a large object share a hash: sorted, so that an object
    /// of thousands of keys stays cheap.
    private func keysAreDistinct(from first: Int, count: Int) -> Bool {
        let hashes = UnsafeBufferPointer(start: keys + first, count: count).map(\.hash).sorted()
        for i in 1..<count where hashes[i - 1] == hashes[i] { return false }
        return true
    }

    // MARK: Strings

    /// A key after its opening quote, with the hash of its bytes; nil for one
    /// with an escape (see the type's comment).
    private mutating func key() -> PendingKey? {
        // The position in a local: the loops here run over most of a record's bytes.
        let start = at
        var i = at
        var hash = Self.hashBasis
        while i < end {
            let c = text[i]
            if c == UInt8(ascii: "\"") {
                let bytes = UnsafeBufferPointer(start: text + start, count: i - start)
                let name = KnownKeys.shared.name(of: bytes, hash: hash) ?? String(decoding: bytes, as: UTF8.self)
                at = i + 1
                return PendingKey(name: name, hash: hash)
            }
            if c < 0x20 || c == UInt8(ascii: "\\") { return nil }
            if c >= 0x80 {
                guard let width = utf8Sequence(at: i) else { return nil }
                for j in i..<(i + width) { hash = Self.hash(hash, text[j]) }
                i += width
                continue
            }
            hash = Self.hash(hash, c)
            i += 1
        }
        return nil
    }

    /// A string's value after its opening quote.
    private mutating func string() -> String? {
        let start = at
        var i = at
        while i < end {
            let c = text[i]
            if c == UInt8(ascii: "\"") {
                at = i + 1
                return String(decoding: UnsafeBufferPointer(start: text + start, count: i - start), as: UTF8.self)
            }
            if c == UInt8(ascii: "\\") {
                at = i
                return escapedString(from: start)
            }
            if c < 0x20 { return nil }
            if c >= 0x80 {
                guard let width = utf8Sequence(at: i) else { return nil }
                i += width
                continue
            }
            i += 1
        }
        return nil
    }

    /// The rest of a string from its first escape on (`at` is there); the
    /// bytes before it start at `start`.
    private mutating func escapedString(from start: Int) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(at - start + 16)
        bytes.append(contentsOf: UnsafeBufferPointer(start: text + start, count: at - start))
        while at < end {
            let c = text[at]
            if c == UInt8(ascii: "\"") {
                at += 1
                return String(decoding: bytes, as: UTF8.self)
            }
            if c == UInt8(ascii: "\\") {
                guard at + 1 < end else { return nil }
                switch text[at + 1] {
                case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): bytes.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                default: return nil // \u, or not an escape at all
                }
                at += 2
                continue
            }
            if c < 0x20 { return nil }
            if c >= 0x80 {
                guard let width = utf8Sequence(at: at) else { return nil }
                bytes.append(contentsOf: UnsafeBufferPointer(start: text + at, count: width))
                at += width
                continue
            }
            bytes.append(c)
            at += 1
        }
        return nil
    }

    /// The length of the well-formed UTF-8 sequence at `at` (its first byte is
    /// 0x80 or above), by jansson's rules (`utf8_check_first`,
    /// `utf8_check_full`); nil for an ill-formed one.
    private func utf8Sequence(at: Int) -> Int? {
        let first = text[at]
        let width: Int
        var scalar: UInt32
        switch first {
        case 0xC2...0xDF: width = 2; scalar = UInt32(first & 0x1F)
        case 0xE0...0xEF: width = 3; scalar = UInt32(first & 0x0F)
        case 0xF0...0xF4: width = 4; scalar = UInt32(first & 0x07)
        default: return nil // a continuation byte, or a first byte UTF-8 does not have
        }
        guard end - at >= width else { return nil }
        for i in 1..<width {
            let c = text[at + i]
            guard c & 0xC0 == 0x80 else { return nil }
            scalar = scalar << 6 | UInt32(c & 0x3F)
        }
        switch width {
        case 3 where scalar < 0x800 || (0xD800...0xDFFF).contains(scalar): return nil
        case 4 where scalar < 0x1_0000 || scalar > 0x10_FFFF: return nil
        default: return width
        }
    }

    // MARK: Numbers

    /// A number as jansson's lexer reads it: `-? (0 | [1-9][0-9]*) (. [0-9]+)?
    /// ([eE] [+-]? [0-9]+)?`, an integer when it has neither fraction nor
    /// exponent, a real otherwise.
    private mutating func number() -> JSONValue? {
        var i = at
        let negative = text[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        // The significant digits (leading zeros dropped), at most 19 of them:
        // 10^19 - 1 fits a UInt64.
        var significand: UInt64 = 0
        var digits = 0
        var exponent = 0
        guard i < end, isDigit(text[i]) else { return nil }
        if text[i] == UInt8(ascii: "0") {
            i += 1
            // A leading zero stands alone; jansson refuses "01".
            if i < end, isDigit(text[i]) { return nil }
        } else {
            while i < end, isDigit(text[i]) {
                guard digits < 19 else { return nil }
                significand = significand * 10 + UInt64(text[i] &- UInt8(ascii: "0"))
                digits += 1
                i += 1
            }
        }
        var isInteger = true
        if i < end, text[i] == UInt8(ascii: ".") {
            isInteger = false
            i += 1
            guard i < end, isDigit(text[i]) else { return nil }
            while i < end, isDigit(text[i]) {
                let digit = UInt64(text[i] &- UInt8(ascii: "0"))
                if significand != 0 || digit != 0 {
                    guard digits < 19 else { return nil }
                    digits += 1
                }
                significand = significand * 10 + digit
                exponent -= 1
                i += 1
            }
        }
        if i < end, text[i] == UInt8(ascii: "e") || text[i] == UInt8(ascii: "E") {
            isInteger = false
            i += 1
            var negativeExponent = false
            if i < end, text[i] == UInt8(ascii: "+") || text[i] == UInt8(ascii: "-") {
                negativeExponent = text[i] == UInt8(ascii: "-")
                i += 1
            }
            guard i < end, isDigit(text[i]) else { return nil }
            var written = 0
            while i < end, isDigit(text[i]) {
                // Beyond this the fast path is out of reach anyway.
                guard written < 10_000 else { return nil }
                written = written * 10 + Int(text[i] &- UInt8(ascii: "0"))
                i += 1
            }
            exponent += negativeExponent ? -written : written
        }
        at = i
        if isInteger {
            // strtoll's range: jansson refuses the others.
            if negative {
                guard significand <= UInt64(Int64.max) + 1 else { return nil }
                return .int(Int64(truncatingIfNeeded: 0 &- significand))
            }
            guard significand <= UInt64(Int64.max) else { return nil }
            return .int(Int64(significand))
        }
        var real: Double
        if significand == 0 {
            real = 0 // strtod gives zero for zero digits, whatever the exponent
        } else {
            // Clinger's fast path: both operands exact, one rounding.
            guard significand <= 1 << 53, (-22...22).contains(exponent) else { return nil }
            real = exponent < 0 ? Double(significand) / Self.powersOfTen[-exponent]
                : Double(significand) * Self.powersOfTen[exponent]
        }
        return .double(negative ? -real : real)
    }

    /// 10^0 ... 10^22, every one a double exactly.
    private static let powersOfTen: [Double] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
        1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
    ]

    @inline(__always)
    private func isDigit(_ c: UInt8) -> Bool { c &- UInt8(ascii: "0") < 10 }

    // MARK: Whitespace and the stacks

    /// jansson's whitespace: space, tab, line feed and carriage return.
    private mutating func skipWhitespace() {
        while at < end {
            switch text[at] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): at += 1
            default: return
            }
        }
    }

    /// After a container's member: true at a comma (another member follows),
    /// false at `closing` (the container ends), nil at anything else.
    private mutating func nextMember(closing: UInt8) -> Bool? {
        skipWhitespace()
        guard at < end else { return nil }
        let c = text[at]
        at += 1
        if c == closing { return false }
        guard c == UInt8(ascii: ",") else { return nil }
        skipWhitespace()
        return true
    }

    private mutating func push(_ value: consuming JSONValue) {
        Self.makeRoom(&values, count: valueCount, capacity: &valueCapacity)
        (values + valueCount).initialize(to: value)
        valueCount += 1
    }

    private mutating func pushKey(_ key: consuming PendingKey) {
        Self.makeRoom(&keys, count: keyCount, capacity: &keyCapacity)
        (keys + keyCount).initialize(to: key)
        keyCount += 1
    }

    /// Doubles a full stack (the pending values, the pending keys).
    private static func makeRoom<Element>(_ base: inout UnsafeMutablePointer<Element>, count: Int, capacity: inout Int) {
        guard count == capacity else { return }
        let grown = UnsafeMutablePointer<Element>.allocate(capacity: capacity * 2)
        grown.moveInitialize(from: base, count: count)
        base.deallocate()
        base = grown
        capacity *= 2
    }
}

/// The keys of records and of their lines, made once. Making a `String` from a
/// key's bytes cost more than reading the rest of it, and a record's keys are
/// nearly all of these (its `after` names partitions by number): a key found
/// here is taken from the table, whose bytes it matches exactly.
///
/// The table is made once and never freed, and is kept in plain memory rather
/// than arrays: reading it then retains nothing, which mattered per key.
// @unchecked: everything is written in `init`, before the table is shared, and only read after.
private struct KnownKeys: @unchecked Sendable {
    static let shared = KnownKeys()

    private struct Entry {
        var hash: UInt64
        var name: String
        /// The name's bytes in `bytes`.
        var start: Int
        var count: Int
    }

    private let entries: UnsafeMutablePointer<Entry>
    /// Every name's bytes, one after the other.
    private let bytes: UnsafeMutablePointer<UInt8>
    /// Open addressing by hash: an index into `entries`, or -1.
    private let slots: UnsafeMutablePointer<Int32>
    private let mask = 1023

    private init() {
        var names = ["uniflow_record", "fingerprint", "partitions", "partition", "version", "prev", "node", "incarnation",
                     "at", "lines", "after", "claim", "release", "snapshot", "seq", "feature", "key", "kind", "state",
                     "payload", "action", "timer", "into", "in", "from", "event", "id"]
        names += (0..<256).map { String($0) }
        entries = .allocate(capacity: names.count)
        bytes = .allocate(capacity: names.reduce(0) { $0 + $1.utf8.count })
        slots = .allocate(capacity: mask + 1)
        slots.initialize(repeating: -1, count: mask + 1)
        var start = 0
        for (n, name) in names.enumerated() {
            let hash = name.utf8.reduce(JSONTextReader.hashBasis) { JSONTextReader.hash($0, $1) }
            var slot = Int(truncatingIfNeeded: hash) & mask
            while slots[slot] >= 0 { slot = (slot + 1) & mask }
            slots[slot] = Int32(n)
            for (i, byte) in name.utf8.enumerated() { bytes[start + i] = byte }
            (entries + n).initialize(to: Entry(hash: hash, name: name, start: start, count: name.utf8.count))
            start += name.utf8.count
        }
    }

    /// The key of these bytes (with their FNV-1a hash), or nil when it is not one of the table's.
    func name(of key: UnsafeBufferPointer<UInt8>, hash: UInt64) -> String? {
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            let i = Int(slots[slot])
            guard i >= 0 else { return nil }
            if entries[i].hash == hash, entries[i].count == key.count,
               memcmp(bytes + entries[i].start, key.baseAddress!, key.count) == 0 {
                return entries[i].name
            }
            slot = (slot + 1) & mask
        }
    }
}
