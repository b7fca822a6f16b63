// Fixed inline storage for the fields of an action, indexed by the slots of the
// `ActionField` table (a decoded action keeps its texts in stored properties of
// `DecodedAction` itself). Tuples, not `InlineArray`: in generic code (`DecodedAction` of any
// source) an `InlineArray` was copied through runtime metadata lookups, which
// cost the general path about a fifth of its instructions. A field past the last
// slot needs one more element (ActionFieldTableTests says so).

/// Up to eight texts of a resolved action, by `ActionField.headerSlot`: plain
/// pointers, so that `ActionHeader` stays bitwise copyable.
struct ActionHeaderTexts {
    static var count: Int { 8 }
    private var storage: (UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?, UnsafePointer<CChar>?) = (nil, nil, nil, nil, nil, nil, nil, nil)

    init() {}

    /// The slots as an array of pointers: a tuple of one type is laid out as
    /// one, and these are plain pointers (no reference to count), so reading
    /// and writing through raw memory is exact.
    @inline(__always)
    subscript(i: Int) -> UnsafePointer<CChar>? {
        get {
            precondition(i >= 0 && i < Self.count, "slot \(i) of 8")
            return withUnsafeBytes(of: storage) { $0.load(fromByteOffset: i &* MemoryLayout<UnsafePointer<CChar>?>.stride, as: UnsafePointer<CChar>?.self) }
        }
        set {
            precondition(i >= 0 && i < Self.count, "slot \(i) of 8")
            withUnsafeMutableBytes(of: &storage) {
                $0.storeBytes(of: newValue, toByteOffset: i &* MemoryLayout<UnsafePointer<CChar>?>.stride, as: UnsafePointer<CChar>?.self)
            }
        }
    }
}

/// A value per JSON key of an action, by `ActionKey.index` (sets of keys are
/// 16 bits, so there are at most 16).
struct ActionKeySlots<Element> {
    static var count: Int { 16 }
    private var storage: (Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?, Element?) = (nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil)

    init() {}

    @inline(__always)
    subscript(i: Int) -> Element? {
        get {
            switch i {
            case 0: storage.0
            case 1: storage.1
            case 2: storage.2
            case 3: storage.3
            case 4: storage.4
            case 5: storage.5
            case 6: storage.6
            case 7: storage.7
            case 8: storage.8
            case 9: storage.9
            case 10: storage.10
            case 11: storage.11
            case 12: storage.12
            case 13: storage.13
            case 14: storage.14
            case 15: storage.15
            default: preconditionFailure("slot \(i) of 16")
            }
        }
        set {
            switch i {
            case 0: storage.0 = newValue
            case 1: storage.1 = newValue
            case 2: storage.2 = newValue
            case 3: storage.3 = newValue
            case 4: storage.4 = newValue
            case 5: storage.5 = newValue
            case 6: storage.6 = newValue
            case 7: storage.7 = newValue
            case 8: storage.8 = newValue
            case 9: storage.9 = newValue
            case 10: storage.10 = newValue
            case 11: storage.11 = newValue
            case 12: storage.12 = newValue
            case 13: storage.13 = newValue
            case 14: storage.14 = newValue
            case 15: storage.15 = newValue
            default: preconditionFailure("slot \(i) of 16")
            }
        }
    }
}
