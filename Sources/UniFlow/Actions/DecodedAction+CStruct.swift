import Glibc
import CUniFlow

extension DecodedAction where Source == CActionSource {
    /// Reads a `uf_action` (a copy that is zero beyond the caller's `size`). A
    /// field that does not fit the kind, a NULL where a name is required, or an
    /// unknown kind is `UF_EINVAL`: from C these are bad arguments, where the same
    /// faults in JSON are a document of the wrong shape.
    init(_ a: uf_action) throws(UniFlowError) {
        guard let kind = ActionKind(cKind: a.kind) else {
            throw UniFlowError(.invalidArgument, "uf_action.kind \(a.kind.rawValue) is not a uf_action_kind")
        }
        guard let feature = a.feature else { throw UniFlowError(.invalidArgument, "uf_action.feature is NULL") }
        let members = ActionStructMembers(a)
        try DecodedAction.checkFields(members, kind)
        self.init(kind: kind, feature: CText(pointer: feature), depth: 1)
        // Every member the table lists.
        for member in ActionField.structInputTexts {
            self[slot: member.slot] = members.text(member.field).map(CText.init)
        }
        for member in ActionField.structFlags where members.given(member.field) { flags |= member.field.bit }
        payload = members.text(.payload).map(CPayloadText.init)
    }

    /// Refuses a field that does not fit the kind, in `ActionField.structCheckOrder`.
    private static func checkFields(_ a: ActionStructMembers, _ kind: ActionKind) throws(UniFlowError) {
        for field in ActionField.structCheckOrder {
            switch field.use(on: kind) {
            case .refused:
                if a.given(field) {
                    throw UniFlowError(.invalidArgument, "uf_action: \(field.structDescription) is not allowed on \(kind.article) \(kind.rawValue) action")
                }
                continue
            case .required:
                if !a.given(field) {
                    throw UniFlowError(.invalidArgument, "uf_action: \(field.structDescription) is required on \(kind.article) \(kind.rawValue) action")
                }
            case .optional:
                guard a.given(field) else { continue }
            }
            if let excluded = field.excludes, a.given(excluded), let message = field.structExclusionMessage {
                throw UniFlowError(.invalidArgument, message)
            }
            guard field.value == .text, let text = a.text(field) else { continue }
            switch field.resolution {
            case .instanceKey:
                if let reason = InstanceKey.refusal(UnsafeRawBufferPointer(start: text, count: strlen(text))) {
                    throw UniFlowError(.invalidArgument, "uf_action.\(field.structMemberNames[0]): \(reason)")
                }
            case .event:
                let name = String(cString: text)
                if let refusal = StatechartParser.outerEventRefusal(name) {
                    // A reserved name is well formed: its refusal is the definition
                    // language's rule (UF_ESCHEMA), whichever way the action came.
                    let status: Status = StatechartParser.isLibraryEventName(name) ? .schema : .invalidArgument
                    throw UniFlowError(status, "uf_action.\(field.structMemberNames[0]): \(refusal)")
                }
            case .none, .feature, .state:
                break
            }
        }
        if a.given(.payload) && a.given(.via) {
            throw UniFlowError(.invalidArgument, "action has both a JSON payload and a via callback")
        }
    }
}

/// The members of a `uf_action` by field, read once at the table's offsets: a
/// pointer's bits (a text, JSON text, a callback), or an `int` flag.
struct ActionStructMembers {
    private var words: (UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt, UInt)
        = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    init(_ a: uf_action) {
        withUnsafeBytes(of: a) { raw in
            withUnsafeMutableBytes(of: &words) { words in
                for field in ActionField.allCases {
                    guard let offset = field.structOffset else { continue }
                    let word: UInt = switch field.value {
                    case .flag, .kind: UInt(truncatingIfNeeded: raw.load(fromByteOffset: offset, as: Int32.self))
                    case .text, .object, .callback, .list: raw.load(fromByteOffset: offset, as: UInt.self)
                    }
                    words.storeBytes(of: word, toByteOffset: field.rawValue &* MemoryLayout<UInt>.stride, as: UInt.self)
                }
            }
        }
    }

    @inline(__always)
    private func word(_ field: ActionField) -> UInt {
        withUnsafeBytes(of: words) { $0.load(fromByteOffset: field.rawValue &* MemoryLayout<UInt>.stride, as: UInt.self) }
    }

    /// Whether the member is set (not NULL, not 0).
    @inline(__always)
    func given(_ field: ActionField) -> Bool { word(field) != 0 }

    /// A text member.
    @inline(__always)
    func text(_ field: ActionField) -> UnsafePointer<CChar>? { UnsafePointer(bitPattern: word(field)) }
}
