import CUniFlow
import Glibc

// One description of the fields an action carries. Each property of
// `ActionField` below is a column of the table (a `switch` over every field, so
// that adding a case makes the compiler ask for its value in every column).
// What reads it:
//
//   * the JSON decoder (`DecodedAction.decode`): the keys each kind allows or
//     requires, their JSON types and spellings, the checks on their values;
//   * the `uf_action` reader (`DecodedAction.init(_: uf_action)`) and the struct's
//     size versions (`withWholeAction`): the members, which kinds take them, and
//     the release that added them;
//   * `plainAction`, which lends a decoded action to the hot path as a `uf_action`;
//   * the storage of decoded and resolved actions (`DecodedAction`'s text slots,
//     `ActionHeader.texts` and `flags`), the copy of borrowed texts (`owned()`),
//     `HotAction.header`, `captureInGeneral` (`HotAction.lendsTexts` names its
//     members, for speed; ActionFieldTableTests checks it against the table);
//   * the text of reports and the `action` object of mutations (`actionDescription`).
//
// What it does not drive: the meaning of a field. Resolving `from` and `into`
// against a feature's states, `event` against its events, checking `key` against
// the feature, and what processing does with `same` or `uninitialized` is code
// written for those fields (`Dispatcher.resolve`, Dispatcher+Processing.swift); a
// field that only carries a text for the host (like `scope`) needs none. The hot
// path (Dispatcher+HotPath.swift) reads the handful of `uf_action` members it
// serves directly, for speed, and leaves any action it does not understand to the
// general path, so a field that only carries a text needs nothing there either
// (one that changes what an action does must be refused there). The fields a
// resolved action keeps by name (`from`, `into`, `event` as indices) are its
// meaning too. docs/architecture.md ("Adding an action field")
// says what to touch to add a field.

/// A field of an action.
///
/// The order of the cases is the order in which the JSON decoder checks the
/// values (`kind` first: it chooses the rules), so that the first error of an
/// action never depends on the order of the keys in its text.
enum ActionField: Int, CaseIterable {
    case kind, feature, scope, context, id, key, payload, into, from, same, uninitialized, submit, event
    /// `uf_action` only: a via callback (JSON gets one from `uf_submit_via`).
    case via
    /// Neither JSON nor `uf_action`: the id of the timer that submitted the action.
    case timer

    /// What a field holds.
    enum Value {
        /// The action's kind (JSON string, `uf_action_kind`).
        case kind
        /// A text (JSON string, `const char *`).
        case text
        /// A flag (JSON boolean, `int`).
        case flag
        /// A JSON object (JSON object; JSON text in `uf_action`).
        case object
        /// Actions (JSON array).
        case list
        /// A host callback (`uf_action` only).
        case callback

        /// The JSON type, as errors name it.
        var jsonType: String {
            switch self {
            case .kind, .text: "string"
            case .flag: "boolean"
            case .object: "object"
            case .list, .callback: "array"
            }
        }
    }

    /// What a name is resolved against when the action is resolved
    /// (`Dispatcher.resolve` gives each its meaning).
    enum Resolution {
        /// Not resolved: carried as given.
        case none
        /// The registered features.
        case feature
        /// The states of the action's feature (kept as an index).
        case state
        /// The events of the action's feature (kept as an index, and as given).
        case event
        /// Checked against the feature: only an instance of a keyed feature has one.
        case instanceKey
    }

    /// How an action of some kind takes a field.
    enum Use {
        case refused, optional, required
    }

    /// The releases of `uf_action`. A caller compiled against an older header
    /// passes a smaller `size`; the members it does not have read as zero.
    enum StructVersion: Int, Comparable {
        /// 0.1.0: the first released struct, up to `via_payload_free`.
        case v0_1
        /// 0.2.0: `key`, `event`.
        case v0_2

        static func < (a: StructVersion, b: StructVersion) -> Bool { a.rawValue < b.rawValue }

        /// The release, as the header's "Added in" comments name it.
        var release: String {
            switch self {
            case .v0_1: "0.1.0"
            case .v0_2: "0.2.0"
            }
        }
    }

    // MARK: The table

    var value: Value {
        switch self {
        case .kind: .kind
        case .feature, .scope, .context, .id, .key, .into, .from, .event, .timer: .text
        case .same, .uninitialized: .flag
        case .payload: .object
        case .submit: .list
        case .via: .callback
        }
    }

    /// How an action of `kind` takes the field, from JSON and from `uf_action` alike.
    func use(on kind: ActionKind) -> Use {
        switch self {
        case .kind, .feature: return .required
        case .scope, .context, .id, .key: return .optional
        case .payload:
            return kind == .deinitialize || kind == .trigger ? .refused : .optional
        case .into:
            return kind == .initialize || kind == .actualize || kind == .transition ? .required : .refused
        case .from:
            return kind == .transition || kind == .deinitialize || kind == .trigger ? .optional : .refused
        case .same: return kind == .transition ? .optional : .refused
        case .uninitialized, .submit: return kind == .trigger ? .optional : .refused
        case .event: return kind == .send ? .required : .refused
        case .via: return kind == .send ? .refused : .optional
        case .timer: return .refused
        }
    }

    /// The field's JSON key on an action of `kind` (also its key in reports), or
    /// nil when JSON has none there.
    func jsonName(on kind: ActionKind) -> StaticString? {
        guard use(on: kind) != .refused else { return nil }
        switch self {
        case .kind: return "kind"
        case .feature: return "feature"
        case .scope: return "scope"
        case .context: return "context"
        case .id: return "id"
        case .key: return "key"
        case .payload: return "payload"
        case .into: return kind == .actualize ? "in" : "into"
        case .from: return kind == .trigger ? "in" : "from"
        case .same: return "same"
        case .uninitialized: return "initialized"
        case .submit: return "submit"
        case .event: return "event"
        case .via, .timer: return nil
        }
    }

    /// The field's key in reports and mutations (`actionDescription`): its JSON
    /// key, and a send's `into` once its target is chosen (a send names none).
    func reportName(on kind: ActionKind) -> StaticString? {
        switch self {
        case .into where kind == .send: "into"
        case .timer: "timer"
        default: jsonName(on: kind)
        }
    }

    /// JSON says the opposite of the flag (`initialized` for `uninitialized`).
    var jsonNegated: Bool { self == .uninitialized }

    /// The `uf_action` member that holds the field, or nil.
    var structMember: PartialKeyPath<uf_action>? {
        switch self {
        case .kind: \uf_action.kind
        case .feature: \uf_action.feature
        case .scope: \uf_action.scope
        case .context: \uf_action.context
        case .id: \uf_action.id
        case .key: \uf_action.key
        case .payload: \uf_action.payload_json
        case .into: \uf_action.into
        case .from: \uf_action.from
        case .same: \uf_action.same
        case .uninitialized: \uf_action.uninitialized
        case .event: \uf_action.event
        case .via: \uf_action.via
        case .submit, .timer: nil
        }
    }

    /// The names of the `uf_action` members of the field, as the header spells
    /// them (the first is `structMember`; a via brings its payload along).
    var structMemberNames: [String] {
        switch self {
        case .kind: ["kind"]
        case .feature: ["feature"]
        case .scope: ["scope"]
        case .context: ["context"]
        case .id: ["id"]
        case .key: ["key"]
        case .payload: ["payload_json"]
        case .into: ["into"]
        case .from: ["from"]
        case .same: ["same"]
        case .uninitialized: ["uninitialized"]
        case .event: ["event"]
        case .via: ["via", "via_payload", "via_payload_free"]
        case .submit, .timer: []
        }
    }

    /// The release of `uf_action` that added the member.
    var structVersion: StructVersion {
        switch self {
        case .key, .event: .v0_2
        default: .v0_1
        }
    }

    /// How `uf_action`'s checks name the field when refusing it.
    var structDescription: String {
        self == .via ? "a via callback" : "'\(structMemberNames.first ?? "")'"
    }

    var resolution: Resolution {
        switch self {
        case .feature: .feature
        case .into, .from: .state
        case .event: .event
        case .key: .instanceKey
        default: .none
        }
    }

    /// A text the host gives to tell actions apart: shown in reports, mutations and
    /// `uf_context_*` as given, never resolved. They come back as C strings, so
    /// JSON refuses one that holds a NUL.
    var isLabel: Bool {
        switch self {
        case .scope, .context, .id: true
        default: false
        }
    }

    /// A field that cannot be given together with this one (given: present in
    /// JSON, even as `false`; non-zero in `uf_action`).
    var excludes: ActionField? {
        switch self {
        case .same, .uninitialized: .from
        default: nil
        }
    }

    /// What `uf_action`'s check says when the field is given with the one it
    /// `excludes` (a trigger's message predates the general one).
    var structExclusionMessage: String? {
        guard let excluded = excludes else { return nil }
        switch self {
        case .uninitialized: return "uf_action: a trigger has 'from' (in) or 'uninitialized', not both"
        default: return "uf_action: \(structDescription) cannot be used with \(excluded.structDescription)"
        }
    }

    /// Where a decoded action keeps the text (`DecodedAction[slot:]`), or nil.
    var inputSlot: Int? {
        switch self {
        case .scope: 0
        case .context: 1
        case .id: 2
        case .key: 3
        case .into: 4
        case .from: 5
        case .event: 6
        default: nil
        }
    }

    /// Where a resolved action keeps the text (`ActionHeader.texts`: borrowed, or
    /// owned by its extras once queued), or nil: the names resolved to an index
    /// are not kept.
    var headerSlot: Int? {
        switch self {
        case .scope: 0
        case .context: 1
        case .id: 2
        case .key: 3
        case .event: 4
        case .timer: 5
        default: nil
        }
    }

    // MARK: Orders that are behaviour

    /// The order in which `uf_action`'s checks refuse fields (after `kind` and
    /// `feature`): the first refusal of a struct with several faults. Every member
    /// is listed (the labels, which every kind takes and nothing checks, last).
    static let structCheckOrder: [ActionField] = [.from, .into, .same, .payload, .via, .event, .uninitialized, .key,
                                                  .scope, .context, .id]

    /// The order of the keys of `actionDescription` (reports, mutations).
    static let reportOrder: [ActionField] = [.kind, .feature, .key, .from, .event, .into, .same, .uninitialized,
                                             .scope, .context, .id, .timer]

    // MARK: Derived

    /// The field's bit in a set of fields.
    @inline(__always)
    var bit: UInt16 { 1 &<< UInt16(truncatingIfNeeded: rawValue) }

    /// The member's offset in `uf_action`.
    @inline(__always)
    var structOffset: Int? {
        let offset = ActionField.structOffsets[rawValue]
        return offset >= 0 ? offset : nil
    }

    /// `structOffset` by field (-1: none), worked out once.
    private static let structOffsets: [Int] = allCases.map { field in
        field.structMember.flatMap { MemoryLayout<uf_action>.offset(of: $0) } ?? -1
    }

    /// The sizes of `uf_action` a caller may pass: that of the first release (up
    /// to the first member added later), each later one up to every member added
    /// since (a struct "ends on a field"), and this header's.
    static let structSizes: [Int] = {
        var sizes = [MemoryLayout<uf_action>.size]
        for field in allCases where field.structVersion > .v0_1 {
            if let offset = field.structOffset { sizes.append(offset) }
        }
        return Array(Set(sizes)).sorted()
    }()

    /// Text fields `uf_action` holds and a resolved action keeps: their offsets in
    /// the struct and their slots in `ActionHeader.texts`.
    static let structTexts: [(offset: Int, slot: Int)] = allCases.compactMap { field in
        guard field.value == .text, let offset = field.structOffset, let slot = field.headerSlot else { return nil }
        return (offset, slot)
    }

    /// Flags `uf_action` holds: their offsets and fields.
    static let structFlags: [(offset: Int, field: ActionField)] = allCases.compactMap { field in
        guard field.value == .flag, let offset = field.structOffset else { return nil }
        return (offset, field)
    }

    /// One field as the JSON decoder reads it on one kind.
    struct DecodeStep {
        let field: ActionField
        let key: ActionKey
        let required: Bool
        let value: Value
        /// `inputSlot`, or -1.
        let slot: Int
    }

    /// The fields each kind takes from JSON (by `ActionKind.ordinal`), in the
    /// table's order, without `kind` and `feature` (read first): worked out once,
    /// so that decoding walks only the fields of its kind.
    static let decodePlans: [[DecodeStep]] = ActionKind.allCases.map { kind in
        allCases.compactMap { field in
            guard field != .kind, field != .feature, let key = ActionKey(field, on: kind) else { return nil }
            return DecodeStep(field: field, key: key, required: field.use(on: kind) == .required, value: field.value,
                              slot: field.inputSlot ?? -1)
        }
    }

    /// Text members of `uf_action` a decoded action keeps: their offsets, input
    /// slots, and whether they are labels (`plainAction`, the struct reader).
    static let structInputTexts: [(field: ActionField, offset: Int, slot: Int, isLabel: Bool)] = allCases.compactMap { field in
        guard field.value == .text, let offset = field.structOffset, let slot = field.inputSlot else { return nil }
        return (field, offset, slot, field.isLabel)
    }

    /// Texts a resolved action keeps as given: their input and header slots.
    static let keptTexts: [(input: Int, header: Int)] = allCases.compactMap { field in
        guard field.value == .text, let input = field.inputSlot, let header = field.headerSlot else { return nil }
        return (input, header)
    }

    /// Every key an action's JSON may have, each once, in the table's order.
    static let jsonKeys: [StaticString] = {
        var keys: [StaticString] = []
        for field in allCases {
            for kind in ActionKind.allCases {
                guard let name = field.jsonName(on: kind) else { continue }
                if !keys.contains(where: { $0.utf8CodeUnitCount == name.utf8CodeUnitCount
                    && memcmp($0.utf8Start, name.utf8Start, name.utf8CodeUnitCount) == 0 }) {
                    keys.append(name)
                }
            }
        }
        precondition(keys.count <= 16, "ActionKey's sets are 16 bits")
        return keys
    }()
}



extension ActionKind {
    /// The kind's position in `allCases`.
    var ordinal: Int {
        switch self {
        case .initialize: 0
        case .actualize: 1
        case .transition: 2
        case .deinitialize: 3
        case .trigger: 4
        case .send: 5
        }
    }
}
