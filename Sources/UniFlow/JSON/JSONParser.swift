import CJansson
import Glibc

/// Parses JSON text strictly with jansson: duplicate keys, integers outside 64 bits
/// and numbers outside the finite doubles are refused (`UF_EJSON`, with line and
/// column), and so are object keys that hold `\u0000`, which jansson cannot
/// read; input nested deeper than `maxDepth` is `UF_ESCHEMA`.
enum JSONParser {
    /// The outermost object or array is level 1.
    static let maxDepth = 256

    /// Parses NUL-terminated text.
    static func parse(_ text: UnsafePointer<CChar>) throws(UniFlowError) -> JSONValue {
        try parse(UnsafeRawPointer(text), length: strlen(text))
    }

    /// Parses a Swift string.
    static func parse(_ text: String) throws(UniFlowError) -> JSONValue {
        let bytes = Array(text.utf8) + [0]
        return try bytes.withUnsafeBufferPointer { (buffer) throws(UniFlowError) -> JSONValue in
            try parse(UnsafeRawPointer(buffer.baseAddress!), length: buffer.count - 1)
        }
    }

    static func parse(_ bytes: UnsafeRawPointer, length: Int) throws(UniFlowError) -> JSONValue {
        let root = try load(bytes, length: length)
        defer { json_decref(root) }
        return try convert(root, depth: 1)
    }

    /// Parses text as `parse` does, read by `JSONTextReader` when it can read
    /// it and by jansson when it declines: the value is the same either way,
    /// and every error is jansson's. For the record hot path (`uf_record_apply`),
    /// whose texts are the core's own and almost never declined.
    static func parseFast(_ bytes: UnsafeRawPointer, length: Int) throws(UniFlowError) -> JSONValue {
        if let value = JSONTextReader.read(bytes, length: length) { return value }
        return try parse(bytes, length: length)
    }

    /// Parses NUL-terminated text into jansson's tree and lends it to `body`; the
    /// tree is freed when `body` returns. The same checks as `parse`, the depth
    /// limit included (over the whole tree, before `body` runs), but nothing is
    /// converted: `body` reads what it needs straight from the tree.
    /// `levels` is the depth allowed, for text that is kept and written again
    /// further down in a larger document.
    static func withTree<R>(_ text: UnsafePointer<CChar>, levels: Int = maxDepth,
                            _ body: (UnsafeMutablePointer<json_t>) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        let root = try load(UnsafeRawPointer(text), length: strlen(text))
        defer { json_decref(root) }
        try checkDepth(root, depth: 1, limit: levels)
        return try body(root)
    }

    /// A value of a tree from `withTree`, converted; `depth` is its level there.
    static func value(of json: UnsafeMutablePointer<json_t>, depth: Int) throws(UniFlowError) -> JSONValue {
        try convert(json, depth: depth)
    }

    /// The JSON type of a value for messages, as `JSONValue.jsonTypeName` names it
    /// (every number is a `number`).
    static func typeName(of json: UnsafeMutablePointer<json_t>) -> String {
        switch json.pointee.type {
        case JSON_OBJECT: "object"
        case JSON_ARRAY: "array"
        case JSON_STRING: "string"
        case JSON_INTEGER, JSON_REAL: "number"
        case JSON_TRUE, JSON_FALSE: "boolean"
        default: "null"
        }
    }

    private static func load(_ bytes: UnsafeRawPointer, length: Int) throws(UniFlowError) -> UnsafeMutablePointer<json_t> {
        if length == 0 { throw UniFlowError(.invalidJSON, "line 1, column 0: empty text is not JSON") }
        var error = json_error_t()
        // JSON_ALLOW_NUL keeps "\u0000" valid JSON; names that contain it fail their own checks.
        let flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL
        guard let root = json_loadb(bytes.assumingMemoryBound(to: CChar.self), length, Int(flags), &error) else {
            // jansson stops at its own depth limit (2048): such input is too deep, as
            // one of 257 levels is, not malformed.
            if json_error_code(&error) == json_error_stack_overflow { throw tooDeep() }
            // An object key holding "\u0000" lands here too: valid JSON, but jansson
            // (keyed by C strings) cannot read it, so it is refused where the text
            // is, with its position, before any path into the document exists.
            throw UniFlowError(.invalidJSON, message(of: error))
        }
        return root
    }

    /// Throws what `convert` would for a container nested too deep, without
    /// converting anything. Recursion is bounded by jansson's own depth limit.
    private static func checkDepth(_ value: UnsafeMutablePointer<json_t>, depth: Int, limit: Int) throws(UniFlowError) {
        switch value.pointee.type {
        case JSON_ARRAY:
            guard depth <= limit else { throw tooDeep(limit) }
            for i in 0..<json_array_size(value) {
                let item = json_array_get(value, i)!
                if isContainer(item) { try checkDepth(item, depth: depth + 1, limit: limit) }
            }
        case JSON_OBJECT:
            guard depth <= limit else { throw tooDeep(limit) }
            var iter = json_object_iter(value)
            while let it = iter {
                let item = json_object_iter_value(it)!
                if isContainer(item) { try checkDepth(item, depth: depth + 1, limit: limit) }
                iter = json_object_iter_next(value, it)
            }
        default:
            break
        }
    }

    @inline(__always)
    private static func isContainer(_ value: UnsafeMutablePointer<json_t>) -> Bool {
        value.pointee.type == JSON_OBJECT || value.pointee.type == JSON_ARRAY
    }

    private static func message(of error: json_error_t) -> String {
        let text = withUnsafeBytes(of: error.text) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
        let line = max(error.line, 1)
        return "line \(line), column \(max(error.column, 0)): \(text)"
    }

    private static func convert(_ value: UnsafeMutablePointer<json_t>, depth: Int) throws(UniFlowError) -> JSONValue {
        switch value.pointee.type {
        case JSON_NULL: return .null
        case JSON_TRUE: return .bool(true)
        case JSON_FALSE: return .bool(false)
        case JSON_INTEGER: return .int(Int64(json_integer_value(value)))
        case JSON_REAL: return .double(json_real_value(value))
        case JSON_STRING:
            let length = json_string_length(value)
            let raw = UnsafeRawBufferPointer(start: json_string_value(value), count: length)
            return .string(String(decoding: raw, as: UTF8.self))
        case JSON_ARRAY:
            guard depth <= maxDepth else { throw tooDeep() }
            let count = json_array_size(value)
            var items: [JSONValue] = []
            items.reserveCapacity(count)
            for i in 0..<count {
                items.append(try convert(json_array_get(value, i), depth: depth + 1))
            }
            return .array(items)
        case JSON_OBJECT:
            guard depth <= maxDepth else { throw tooDeep() }
            var entries: [(key: String, value: JSONValue)] = []
            entries.reserveCapacity(json_object_size(value))
            // jansson keeps insertion order; json_object_foreach is a macro, so iterate by hand.
            var iter = json_object_iter(value)
            while let it = iter {
                let key = String(cString: json_object_iter_key(it))
                entries.append((key, try convert(json_object_iter_value(it), depth: depth + 1)))
                iter = json_object_iter_next(value, it)
            }
            return .object(JSONObject(entries))
        default:
            return .null
        }
    }

    private static func tooDeep(_ limit: Int = maxDepth) -> UniFlowError {
        UniFlowError(.schema, "input is nested deeper than \(limit) levels")
    }
}
