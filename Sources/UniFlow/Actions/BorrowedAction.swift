import CJansson
import CUniFlow
import Glibc

/// A string of jansson's tree, borrowed: its bytes, NUL-terminated by jansson,
/// with its length (JSON's `\u0000` can put a NUL inside).
struct BorrowedString {
    let pointer: UnsafePointer<CChar>
    let length: Int

    init(_ json: UnsafeMutablePointer<json_t>) {
        pointer = json_string_value(json)
        length = json_string_length(json)
    }

    /// The string as a C name, or nil when it holds a NUL: as a C string it would
    /// end there and could name something else (`"Toggle\u0000junk"` is not
    /// `Toggle`), and no registered name contains one.
    var cName: UnsafePointer<CChar>? {
        hasNUL ? nil : pointer
    }

    /// Names are short: up to 16 bytes are tested a word at a time (two loads that
    /// may overlap, both inside the string), longer ones with `memchr`.
    private var hasNUL: Bool {
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

    /// A copy, for messages.
    var string: String {
        String(decoding: UnsafeRawBufferPointer(start: pointer, count: length), as: UTF8.self)
    }

    /// Whether the bytes are exactly `literal`'s.
    @inline(__always)
    func equals(_ literal: StaticString) -> Bool {
        length == literal.utf8CodeUnitCount && memcmp(pointer, literal.utf8Start, length) == 0
    }
}

/// An action decoded from jansson's tree for `uf_submit`: its shape is checked
/// (SPEC section 3, with `ActionRequest.decode`'s messages), but nothing is copied.
/// Names stay C strings for the dispatcher to look up, and the payload stays a
/// subtree for the payload check to read field by field. Valid while the tree is.
///
/// `ActionRequest` (built from a `JSONValue`) is the same decoding for actions that
/// are already Swift values (batches, binding templates); the two must agree on
/// every outcome, which `SubmitDecodingTests` checks input by input.
struct BorrowedAction {
    var kind: ActionKind
    var feature: BorrowedString
    /// `from` of a transition or deinitialization, `in` of a trigger.
    var from: BorrowedString?
    /// `into` of an initialize or transition, `in` of an actualize.
    var into: BorrowedString?
    /// The payload object, unchecked.
    var payload: UnsafeMutablePointer<json_t>?
    /// The JSON level of the action object (1 for the outermost action).
    var depth: Int
    var same = false
    var uninitialized = false
    /// As C strings: a NUL inside ends them, as it did when they were Swift strings.
    var scope: UnsafePointer<CChar>?
    var context: UnsafePointer<CChar>?
    var id: UnsafePointer<CChar>?
    /// Trigger only: actions queued when the trigger is processed.
    var submit: [BorrowedAction] = []

    private init(kind: ActionKind, feature: BorrowedString, depth: Int) {
        self.kind = kind
        self.feature = feature
        self.depth = depth
    }

    /// Decodes the action `json` (the root of a tree from `JSONParser.withTree`).
    static func decode(_ json: UnsafeMutablePointer<json_t>) throws(UniFlowError) -> BorrowedAction {
        try decode(json, depth: 1)
    }

    private static func decode(_ json: UnsafeMutablePointer<json_t>, depth: Int) throws(UniFlowError) -> BorrowedAction {
        guard json.pointee.type == JSON_OBJECT else {
            throw UniFlowError(.schema, "action must be an object, got \(JSONParser.typeName(of: json))")
        }
        guard depth <= JSONParser.maxDepth else {
            throw UniFlowError(.schema, "action: actions nest deeper than \(JSONParser.maxDepth) levels")
        }
        // One pass over the keys, each compared as bytes; the values are checked
        // afterwards in `ActionRequest.decode`'s order, so that both report the
        // same first error.
        var values = KeyedValues()
        var iter = json_object_iter(json)
        while let it = iter {
            values.set(key(json_object_iter_key(it), length: json_object_iter_key_len(it)), json_object_iter_value(it))
            iter = json_object_iter_next(json, it)
        }

        guard let kindValue = values[.kind] else { throw UniFlowError(.schema, "action: missing key 'kind'") }
        guard kindValue.pointee.type == JSON_STRING else { throw expected("string", got: kindValue, key: "kind") }
        let kindName = BorrowedString(kindValue)
        guard let kind = actionKind(kindName) else {
            throw UniFlowError(.schema, "action.kind: unknown kind '\(kindName.string)' (expected initialize, actualize, transition, deinitialize or trigger)")
        }
        if values.unknown || values.present & ~ActionKey.allowed(kind) != 0 {
            try checkKeys(json, kind: kind)
        }

        var action = BorrowedAction(kind: kind, feature: try requiredString(values, .feature), depth: depth)
        action.scope = try optionalString(values, .scope)?.pointer
        action.context = try optionalString(values, .context)?.pointer
        action.id = try optionalString(values, .id)?.pointer
        if let payload = values[.payload] {
            guard payload.pointee.type == JSON_OBJECT else { throw expected("object", got: payload, key: "payload") }
            action.payload = payload
        }

        switch kind {
        case .initialize:
            action.into = try requiredString(values, .into)
        case .actualize:
            action.into = try requiredString(values, .in)
        case .transition:
            action.into = try requiredString(values, .into)
            action.from = try optionalString(values, .from)
            if let same = try optionalBool(values, .same) {
                guard action.from == nil else { throw UniFlowError(.schema, "action: 'same' cannot be used with 'from'") }
                action.same = same
            }
        case .deinitialize:
            action.from = try optionalString(values, .from)
        case .trigger:
            action.from = try optionalString(values, .in)
            if let initialized = try optionalBool(values, .initialized) {
                guard action.from == nil else { throw UniFlowError(.schema, "action: 'initialized' cannot be used with 'in'") }
                action.uninitialized = !initialized
            }
            if let submit = values[.submit] {
                guard submit.pointee.type == JSON_ARRAY else { throw expected("array", got: submit, key: "submit") }
                let count = json_array_size(submit)
                action.submit.reserveCapacity(count)
                for i in 0..<count {
                    do throws(UniFlowError) {
                        action.submit.append(try decode(json_array_get(submit, i)!, depth: depth + 2))
                    } catch {
                        throw error.prefixed("submit[\(i)]")
                    }
                }
            }
        }
        return action
    }

    /// The same action as a `uf_action` with borrowed strings, when it is one that
    /// needs nothing else: no payload and no `submit` list, and names without NUL
    /// (a C string would end there). `uf_submit` then takes `uf_dispatch`'s path.
    var plainAction: uf_action? {
        guard payload == nil, submit.isEmpty, let feature = feature.cName else { return nil }
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.feature = feature
        if let from {
            guard let name = from.cName else { return nil }
            a.from = name
        }
        if let into {
            guard let name = into.cName else { return nil }
            a.into = name
        }
        switch kind {
        case .initialize: a.kind = UF_ACTION_INITIALIZE
        case .actualize: a.kind = UF_ACTION_ACTUALIZE
        case .transition: a.kind = UF_ACTION_TRANSITION
        case .deinitialize: a.kind = UF_ACTION_DEINITIALIZE
        case .trigger: a.kind = UF_ACTION_TRIGGER
        }
        a.same = same ? 1 : 0
        a.uninitialized = uninitialized ? 1 : 0
        a.scope = scope
        a.context = context
        a.id = id
        return a
    }

    // MARK: Keys

    /// The values of the keys an action knows, by `ActionKey`: one stored
    /// property each, so that reading a key named by a constant is a field access.
    private struct KeyedValues {
        private var kind, feature, scope, context, id, into, `in`, from, same, payload, initialized, submit: Value?
        /// The keys seen, as `ActionKey.bit`s.
        private(set) var present: UInt16 = 0
        /// A key no action knows was seen.
        private(set) var unknown = false

        typealias Value = UnsafeMutablePointer<json_t>

        @inline(__always)
        mutating func set(_ key: ActionKey?, _ value: Value?) {
            guard let key else {
                unknown = true
                return
            }
            present |= key.bit
            switch key {
            case .kind: kind = value
            case .feature: feature = value
            case .scope: scope = value
            case .context: context = value
            case .id: id = value
            case .into: into = value
            case .in: self.in = value
            case .from: from = value
            case .same: same = value
            case .payload: payload = value
            case .initialized: initialized = value
            case .submit: submit = value
            }
        }

        @inline(__always)
        subscript(key: ActionKey) -> Value? {
            switch key {
            case .kind: kind
            case .feature: feature
            case .scope: scope
            case .context: context
            case .id: id
            case .into: into
            case .in: self.in
            case .from: from
            case .same: same
            case .payload: payload
            case .initialized: initialized
            case .submit: submit
            }
        }
    }

    /// The key spelled by `length` bytes at `name`, compared as bytes.
    private static func key(_ name: UnsafePointer<CChar>, length: Int) -> ActionKey? {
        let key = BorrowedString(pointer: name, length: length)
        switch length {
        case 2: return key.equals("id") ? .id : key.equals("in") ? .in : nil
        case 4:
            switch UInt8(bitPattern: name[0]) {
            case UInt8(ascii: "k"): return key.equals("kind") ? .kind : nil
            case UInt8(ascii: "i"): return key.equals("into") ? .into : nil
            case UInt8(ascii: "f"): return key.equals("from") ? .from : nil
            case UInt8(ascii: "s"): return key.equals("same") ? .same : nil
            default: return nil
            }
        case 5: return key.equals("scope") ? .scope : nil
        case 6: return key.equals("submit") ? .submit : nil
        case 7:
            switch UInt8(bitPattern: name[0]) {
            case UInt8(ascii: "f"): return key.equals("feature") ? .feature : nil
            case UInt8(ascii: "c"): return key.equals("context") ? .context : nil
            case UInt8(ascii: "p"): return key.equals("payload") ? .payload : nil
            default: return nil
            }
        case 11: return key.equals("initialized") ? .initialized : nil
        default: return nil
        }
    }

    private static func actionKind(_ name: BorrowedString) -> ActionKind? {
        switch name.length {
        case 7: name.equals("trigger") ? .trigger : nil
        case 9: name.equals("actualize") ? .actualize : nil
        case 10: name.equals("transition") ? .transition : name.equals("initialize") ? .initialize : nil
        case 12: name.equals("deinitialize") ? .deinitialize : nil
        default: nil
        }
    }

    /// Throws for the first key, in the object's order, that the kind does not
    /// allow (only called when there is one).
    private static func checkKeys(_ json: UnsafeMutablePointer<json_t>, kind: ActionKind) throws(UniFlowError) {
        var iter = json_object_iter(json)
        while let it = iter {
            let name = json_object_iter_key(it)!
            let known = key(name, length: json_object_iter_key_len(it))
            if let error = ActionKey.refusal(known, named: String(cString: name), kind: kind) { throw error }
            iter = json_object_iter_next(json, it)
        }
    }

    // MARK: Values

    private static func requiredString(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> BorrowedString {
        guard let value = values[key] else { throw UniFlowError(.schema, "action: missing key '\(key.name)'") }
        guard value.pointee.type == JSON_STRING else { throw expected("string", got: value, key: key.name) }
        return BorrowedString(value)
    }

    private static func optionalString(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> BorrowedString? {
        guard let value = values[key] else { return nil }
        guard value.pointee.type == JSON_STRING else { throw expected("string", got: value, key: key.name) }
        return BorrowedString(value)
    }

    private static func optionalBool(_ values: KeyedValues, _ key: ActionKey) throws(UniFlowError) -> Bool? {
        guard let value = values[key] else { return nil }
        switch value.pointee.type {
        case JSON_TRUE: return true
        case JSON_FALSE: return false
        default: throw expected("boolean", got: value, key: key.name)
        }
    }

    private static func expected(_ type: String, got value: UnsafeMutablePointer<json_t>, key: String) -> UniFlowError {
        UniFlowError(.schema, "action.\(key): expected \(type), got \(JSONParser.typeName(of: value))")
    }
}

extension BorrowedString {
    fileprivate init(pointer: UnsafePointer<CChar>, length: Int) {
        self.pointer = pointer
        self.length = length
    }
}

extension ActionKey {
    /// The key as JSON spells it.
    var name: String {
        switch self {
        case .kind: "kind"
        case .feature: "feature"
        case .scope: "scope"
        case .context: "context"
        case .id: "id"
        case .into: "into"
        case .in: "in"
        case .from: "from"
        case .same: "same"
        case .payload: "payload"
        case .initialized: "initialized"
        case .submit: "submit"
        }
    }
}
