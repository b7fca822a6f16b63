import CUniFlow

/// The four kinds of mutation, with what each is called in JSON and its bit in
/// the kind masks that filters, bindings and subscriptions keep.
enum MutationKind: Int32, CaseIterable {
    case initialization = 1, actualization, transition, deinitialization

    /// The kind of mutation an applied action makes (a trigger and a send make
    /// none of their own: a send becomes a transition or an actualization).
    init(applying kind: ActionKind) {
        switch kind {
        case .initialize: self = .initialization
        case .actualize: self = .actualization
        case .deinitialize: self = .deinitialization
        case .transition, .trigger, .send: self = .transition
        }
    }

    init?(_ value: Int32) { self.init(rawValue: value) }

    /// As JSON and `uf_mutation_json` spell it.
    var name: StaticString {
        switch self {
        case .initialization: "initialization"
        case .actualization: "actualization"
        case .transition: "transition"
        case .deinitialization: "deinitialization"
        }
    }

    var text: String { name.description }

    /// `1 << kind`: one bit per kind in a `UInt8` mask.
    @inline(__always)
    var bit: UInt8 { 1 << UInt8(truncatingIfNeeded: rawValue) }

    /// What a mutation of a raw kind does to its feature's count of instances
    /// (a single feature's: 0 or 1).
    static func instancesAdded(_ raw: Int32) -> Int {
        raw == initialization.rawValue ? 1 : raw == deinitialization.rawValue ? -1 : 0
    }

    /// The bit of a raw kind as a `MutationRecord` stores it.
    @inline(__always)
    static func bit(_ raw: Int32) -> UInt8 { 1 << UInt8(truncatingIfNeeded: raw) }

    /// Every kind's bit.
    static let all: UInt8 = MutationKind.allCases.reduce(0) { $0 | $1.bit }
    /// Actualization and transition (`AnyUpdateOf`).
    static let updates: UInt8 = MutationKind.actualization.bit | MutationKind.transition.bit
    /// Initialization, actualization and transition (`AnySettingOf`, `SettingInto`).
    static let settings: UInt8 = MutationKind.initialization.bit | updates

    var cValue: uf_mutation_kind { uf_mutation_kind(rawValue: UInt32(rawValue)) }
}
