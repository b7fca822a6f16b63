import CJansson
import CUniFlow
import Glibc

// Where an action comes from. One decoder (`DecodedAction.decode`) reads an
// action's JSON whether it lives in jansson's tree (`uf_submit`: nothing is copied,
// names stay bytes) or in a `JSONValue` (batches, templates, timers, restores); a
// third source is the C struct `uf_action`, checked by its own rules (UF_EINVAL).
// One resolver (`Dispatcher.resolve`) then turns any of them into a
// `ResolvedAction`, so every check and every message exists once.

/// A name or text an action carries, as its source holds it.
protocol ActionText {
    /// The bytes as a C string for a lookup, or nil when they hold a NUL: as a C
    /// string they would end there and could name something else
    /// (`"Toggle\u0000junk"` is not `Toggle`); no registered name contains one.
    func withCName<R>(_ body: (UnsafePointer<CChar>?) throws(UniFlowError) -> R) throws(UniFlowError) -> R
    /// The bytes, NUL included.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(UniFlowError) -> R) throws(UniFlowError) -> R
    /// A copy, for messages and for sources that keep Swift values.
    var string: String { get }
    /// A C string valid as long as the action: the source's own bytes when they
    /// outlive the call (jansson's tree, the caller's `uf_action`), otherwise a
    /// copy kept in `extras`.
    func cString(keptIn extras: inout ActionExtras?) throws(UniFlowError) -> UnsafePointer<CChar>
}

/// A JSON object an action carries (a state's payload, an event's payload).
protocol ActionObject {
    /// Checks it against the state's fields (see `StateDefinition.checkPayload`).
    /// `depth` is its JSON level (the action is level 1).
    func checked(by state: StateDefinition, depth: Int, feature: () -> String) throws(UniFlowError) -> JSONObject
    /// The object as a Swift value (an event's payload: any object).
    func value(depth: Int) throws(UniFlowError) -> JSONObject
}

/// What an action's names and payload are made of, by where it comes from.
protocol ActionSource {
    associatedtype Text: ActionText
    associatedtype Object: ActionObject
}

/// A JSON value that an action, or a part of one, is decoded from.
protocol ActionJSON: ActionSource {
    /// Calls `body` with each member's key bytes and value; false when the value
    /// is not an object.
    func forEachMember(_ body: (UnsafeRawBufferPointer, Self) throws(UniFlowError) -> Void) throws(UniFlowError) -> Bool
    var text: Text? { get }
    var boolValue: Bool? { get }
    var object: Object? { get }
    /// The elements, when the value is an array.
    var elements: [Self]? { get }
    /// The value's JSON type for messages (`number` for every number).
    var typeName: String { get }
}

// MARK: - JSONValue

extension String: ActionText {
    func withCName<R>(_ body: (UnsafePointer<CChar>?) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        if utf8.contains(0) { return try body(nil) }
        // `withCString` rethrows untyped errors: carry the typed one out in a Result.
        return try withCString { c in Result { () throws(UniFlowError) in try body(c) } }.get()
    }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        var copy = self
        return try copy.withUTF8 { bytes in Result { () throws(UniFlowError) in try body(UnsafeRawBufferPointer(bytes)) } }.get()
    }

    var string: String { self }

    func cString(keptIn extras: inout ActionExtras?) throws(UniFlowError) -> UnsafePointer<CChar> {
        try ActionExtras.make(&extras).own(self)
    }
}

extension JSONObject: ActionObject {
    func checked(by state: StateDefinition, depth: Int, feature: () -> String) throws(UniFlowError) -> JSONObject {
        try state.checkPayload(self, feature: feature())
    }

    func value(depth: Int) -> JSONObject { self }
}

extension JSONValue: ActionJSON {
    typealias Text = String
    typealias Object = JSONObject

    func forEachMember(_ body: (UnsafeRawBufferPointer, JSONValue) throws(UniFlowError) -> Void) throws(UniFlowError) -> Bool {
        guard case .object(let object) = self else { return false }
        for (key, value) in object {
            try key.withBytes { (bytes) throws(UniFlowError) in try body(bytes, value) }
        }
        return true
    }

    var text: String? { stringValue }
    var object: JSONObject? { objectValue }
    var elements: [JSONValue]? { arrayValue }
    var typeName: String { jsonTypeName }
}

// MARK: - jansson's tree

/// A string of jansson's tree, borrowed: its bytes, NUL-terminated by jansson,
/// with its length (JSON's `\u0000` can put a NUL inside).
struct BorrowedString: ActionText {
    let pointer: UnsafePointer<CChar>
    let length: Int

    init(_ json: UnsafeMutablePointer<json_t>) {
        pointer = json_string_value(json)
        length = json_string_length(json)
    }

    /// Names are short: up to 16 bytes are tested a word at a time (two loads that
    /// may overlap, both inside the string), longer ones with `memchr`.
    var hasNUL: Bool {
        @inline(__always) func hasZeroByte(_ word: UInt64) -> Bool {
            (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
        }
        let raw = UnsafeRawPointer(pointer)
        switch length {
        case 0: return false
        case 1..<8:
            for i in 0..<length where pointer[i] == 0 { return true }
            return false
        case 8...16:
            return hasZeroByte(raw.loadUnaligned(as: UInt64.self))
                || hasZeroByte(raw.loadUnaligned(fromByteOffset: length - 8, as: UInt64.self))
        default:
            return memchr(pointer, 0, length) != nil
        }
    }

    /// The string as a C name, or nil when it holds a NUL.
    var cName: UnsafePointer<CChar>? { hasNUL ? nil : pointer }

    func withCName<R>(_ body: (UnsafePointer<CChar>?) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        try body(cName)
    }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: length))
    }

    var string: String {
        String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    /// Borrowed: the tree outlives the call, and what is queued copies it (`owned()`).
    func cString(keptIn extras: inout ActionExtras?) -> UnsafePointer<CChar> { pointer }
}

/// An object of jansson's tree, read field by field by the payload check.
struct JanssonObject: ActionObject {
    let json: UnsafeMutablePointer<json_t>

    func checked(by state: StateDefinition, depth: Int, feature: () -> String) throws(UniFlowError) -> JSONObject {
        try state.checkPayload(jansson: json, depth: depth, feature: feature())
    }

    func value(depth: Int) throws(UniFlowError) -> JSONObject {
        try JSONParser.value(of: json, depth: depth).objectValue ?? JSONObject()
    }
}

/// A value of jansson's tree (from `JSONParser.withTree`), valid while the tree is.
struct JanssonValue: ActionJSON {
    typealias Text = BorrowedString
    typealias Object = JanssonObject

    let json: UnsafeMutablePointer<json_t>

    init(_ json: UnsafeMutablePointer<json_t>) { self.json = json }

    func forEachMember(_ body: (UnsafeRawBufferPointer, JanssonValue) throws(UniFlowError) -> Void) throws(UniFlowError) -> Bool {
        guard json.pointee.type == JSON_OBJECT else { return false }
        var iter = json_object_iter(json)
        while let it = iter {
            let key = UnsafeRawBufferPointer(start: json_object_iter_key(it), count: json_object_iter_key_len(it))
            try body(key, JanssonValue(json_object_iter_value(it)))
            iter = json_object_iter_next(json, it)
        }
        return true
    }

    var text: BorrowedString? { json.pointee.type == JSON_STRING ? BorrowedString(json) : nil }

    var boolValue: Bool? {
        switch json.pointee.type {
        case JSON_TRUE: true
        case JSON_FALSE: false
        default: nil
        }
    }

    var object: JanssonObject? { json.pointee.type == JSON_OBJECT ? JanssonObject(json: json) : nil }

    var elements: [JanssonValue]? {
        guard json.pointee.type == JSON_ARRAY else { return nil }
        return (0..<json_array_size(json)).map { JanssonValue(json_array_get(json, $0)!) }
    }

    var typeName: String { JSONParser.typeName(of: json) }
}

// MARK: - uf_action

/// A string of the caller's `uf_action`: valid for the whole call (what is queued copies it).
struct CText: ActionText {
    let pointer: UnsafePointer<CChar>

    func withCName<R>(_ body: (UnsafePointer<CChar>?) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        try body(pointer)
    }

    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws(UniFlowError) -> R) throws(UniFlowError) -> R {
        try body(UnsafeRawBufferPointer(start: pointer, count: strlen(pointer)))
    }

    var string: String { String(cString: pointer) }

    func cString(keptIn extras: inout ActionExtras?) -> UnsafePointer<CChar> { pointer }
}

/// The C struct `uf_action` as a source: its strings are the caller's.
enum CActionSource: ActionSource {
    typealias Text = CText
    typealias Object = CPayloadText
}

/// `uf_action.payload_json`: JSON text, parsed when the action is resolved.
struct CPayloadText: ActionObject {
    let text: UnsafePointer<CChar>

    private func object() throws(UniFlowError) -> JSONObject {
        let json = try JSONParser.parse(text)
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "uf_action.payload_json must be an object, got \(json.jsonTypeName)")
        }
        return object
    }

    func checked(by state: StateDefinition, depth: Int, feature: () -> String) throws(UniFlowError) -> JSONObject {
        try state.checkPayload(try object(), feature: feature())
    }

    func value(depth: Int) throws(UniFlowError) -> JSONObject { try object() }
}
