import Glibc

/// A key an action's JSON may have: its position in `ActionField.jsonKeys`
/// (`in` is one key for two fields: an actualize's `into`, a trigger's `from`).
struct ActionKey: Equatable {
    let index: Int

    private init(index: Int) { self.index = index }

    /// The key spelled by these bytes, or nil for a key no action knows. Compared
    /// as bytes: decoding `uf_submit`'s text creates no `String` per key.
    init?(bytes name: UnsafeRawBufferPointer) {
        guard let base = name.baseAddress, name.count > 0 else { return nil }
        // Length and first byte first: most keys are then told apart without a memcmp.
        let first = base.load(as: UInt8.self)
        for candidate in ActionKey.spellings where candidate.count == name.count && candidate.first == first {
            if memcmp(base, candidate.key.utf8Start, name.count) == 0 {
                self.init(index: candidate.index)
                return
            }
        }
        return nil
    }

    /// `ActionField.jsonKeys` as the matcher reads them.
    private static let spellings: [(count: Int, first: UInt8, key: StaticString, index: Int)] =
        ActionField.jsonKeys.enumerated().map { (index, key) in
            (key.utf8CodeUnitCount, key.utf8Start.pointee, key, index)
        }

    /// The key of `field` on an action of `kind`, or nil when JSON has none there.
    @inline(__always)
    init?(_ field: ActionField, on kind: ActionKind) {
        let index = ActionKey.byField[field.rawValue &* ActionKind.allCases.count &+ kind.ordinal]
        guard index >= 0 else { return nil }
        self.init(index: index)
    }

    /// The key as JSON spells it.
    var name: String { ActionField.jsonKeys[index].description }

    /// The key's bit in a set of keys.
    var bit: UInt16 { 1 << UInt16(index) }

    /// `init(_:on:)`, for every field and kind.
    private static let byField: [Int] = ActionField.allCases.flatMap { field in
        ActionKind.allCases.map { kind in
            guard let name = field.jsonName(on: kind) else { return -1 }
            return ActionField.jsonKeys.firstIndex { $0.description == name.description }!
        }
    }

    /// `allowed`, by `ActionKind.ordinal`.
    private static let allowedByKind: [UInt16] = ActionKind.allCases.map { kind in
        ActionField.allCases.reduce(0) { keys, field in keys | (ActionKey(field, on: kind)?.bit ?? 0) }
    }

    /// Every key an action of that kind may carry (`key` is checked against the
    /// feature when the names are resolved: only an instance of a keyed feature has one).
    static func allowed(_ kind: ActionKind) -> UInt16 { allowedByKind[kind.ordinal] }

    /// Why the key `name` (`key` when the action knows it) is refused on an action
    /// of that kind, or nil when it is allowed. A typo (`form`) and a real key on
    /// the wrong kind (`from` on an initialize) need different fixes, so they read
    /// differently.
    static func refusal(_ key: ActionKey?, named name: @autoclosure () -> String, kind: ActionKind) -> UniFlowError? {
        guard let key else { return UniFlowError(.schema, "action: unknown key '\(name())'") }
        if allowed(kind) & key.bit != 0 { return nil }
        return UniFlowError(.schema, "action: '\(name())' cannot be used with kind '\(kind.rawValue)'")
    }
}
