import CUniFlow
import Glibc
import Testing
@testable import UniFlow

// `ActionField` describes every field of an action once; these tests hold the
// table against what the code and the header really do: every field it lists is
// decoded from JSON and from `uf_action`, lent to the hot path, kept, owned and
// reported; every `uf_action` member of Include/uniflow.h is in it.

/// A value of the field's type that every check accepts.
private func sample(_ field: ActionField) -> String {
    switch field {
    case .event: "Go"
    case .key: "k1"
    default: "S"
    }
}

/// The JSON of the smallest action of `kind` (its required fields), with `extra`
/// members added (`"name": value` pairs, as JSON text).
private func actionJSON(_ kind: ActionKind, _ extra: [(String, String)] = []) -> String {
    var members: [(String, String)] = [("kind", "\"\(kind.rawValue)\""), ("feature", "\"F\"")]
    for field in ActionField.allCases where field != .kind && field != .feature && field.use(on: kind) == .required {
        members.append((field.jsonName(on: kind)!.description, "\"\(sample(field))\""))
    }
    for (name, value) in extra {
        if let i = members.firstIndex(where: { $0.0 == name }) { members[i].1 = value } else { members.append((name, value)) }
    }
    return "{" + members.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
}

/// A JSON value of the field's type, and what it decodes to.
private func jsonSample(_ field: ActionField) -> String {
    switch field.value {
    case .text, .kind: "\"\(sample(field))\""
    case .flag: "true"
    case .object: "{}"
    case .list: "[]"
    case .callback: "null"
    }
}

/// What a decoded action holds of the field, as text ("-" for nothing).
private func decoded<S: ActionSource>(_ field: ActionField, of action: DecodedAction<S>) -> String {
    switch field.value {
    case .text: action[text: field].map(\.string) ?? "-"
    case .flag: action[flag: field] ? "true" : "false"
    case .object: action.payload == nil ? "-" : "{}"
    case .list: "\(action.submit.count)"
    case .kind: action.kind.rawValue
    case .callback: "-"
    }
}

/// The `uf_action` members of Include/uniflow.h, in order, each with the release
/// that added it (the header's "Added in" comments).
private func headerMembers() throws -> [(name: String, release: String)] {
    let path = String(#filePath).split(separator: "/").dropLast(3).joined(separator: "/")
    let text = try FileReader.read("/" + path + "/Include/uniflow.h")
    let start = try #require(text.firstRange(of: "typedef struct uf_action {"))
    let end = try #require(text[start.upperBound...].firstRange(of: "} uf_action;"))
    var members: [(name: String, release: String)] = []
    var release = "0.1.0"
    var body = Substring(text[start.upperBound..<end.lowerBound])
    // Comments: note the "Added in" ones, drop all.
    while let open = body.firstRange(of: "/*") {
        let close = body[open.upperBound...].firstRange(of: "*/")!
        let comment = body[open.upperBound..<close.lowerBound]
        if let added = comment.firstRange(of: "Added in ") {
            // The declarations before this comment belong to the previous release.
            for declaration in body[..<open.lowerBound].split(separator: ";") {
                members += names(in: declaration).map { ($0, release) }
            }
            body = body[close.upperBound...]
            release = String(comment[added.upperBound...].prefix { $0.isNumber || $0 == "." })
            continue
        }
        body = body[..<open.lowerBound] + body[close.upperBound...]
    }
    for declaration in body.split(separator: ";") {
        members += names(in: declaration).map { ($0, release) }
    }
    return members
}

/// The names a C declaration declares (`const char *scope, *context, *id`,
/// `void (*via_payload_free)(void *)`).
private func names(in declaration: Substring) -> [String] {
    let text = declaration.trimmingCharacters(in: " \n\t")
    if text.isEmpty { return [] }
    if let open = text.firstRange(of: "(*") {
        return [String(text[open.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" })]
    }
    return text.split(separator: ",").map { part in
        String(part.reversed().drop { !($0.isLetter || $0.isNumber || $0 == "_") }
            .prefix { $0.isLetter || $0.isNumber || $0 == "_" }.reversed())
    }
}

private extension StringProtocol {
    func trimmingCharacters(in set: String) -> String {
        String(drop { set.contains($0) }.reversed().drop { set.contains($0) }.reversed())
    }
}

@Suite struct ActionFieldTableTests {
    @Test func everyMemberOfTheHeaderIsInTheTable() throws {
        let members = try headerMembers()
        #expect(members.first?.name == "size")
        var listed: [String: ActionField] = [:]
        for field in ActionField.allCases {
            for name in field.structMemberNames { listed[name] = field }
        }
        for member in members.dropFirst() {
            let field = try #require(listed[member.name], "uf_action.\(member.name) is not in ActionField's table")
            #expect(field.structVersion.release == member.release, "uf_action.\(member.name)")
            listed[member.name] = nil
        }
        #expect(listed.isEmpty, "the table lists members the header does not have: \(listed.keys.sorted())")
        // The members are where the table says, in the header's order.
        let offsets = members.dropFirst().compactMap { member in
            ActionField.allCases.first { $0.structMemberNames.first == member.name }?.structOffset
        }
        #expect(offsets == offsets.sorted())
    }

    /// A caller may pass the size of the first release (it ends after the via),
    /// or one that ends after any member added since, or this header's.
    @Test func theStructSizesAreTheReleasesAndEveryFieldAddedSince() throws {
        let firstRelease = MemoryLayout<uf_action>.offset(of: \.via_payload_free)! + MemoryLayout<UnsafeRawPointer>.size
        var expected = [firstRelease, MemoryLayout<uf_action>.size]
        for member in try headerMembers() where member.release != "0.1.0" {
            let field = try #require(ActionField.allCases.first { $0.structMemberNames.first == member.name })
            expected.append(field.structOffset! + MemoryLayout<UnsafeRawPointer>.size)
        }
        #expect(ActionField.structSizes == Array(Set(expected)).sorted())
        // What uf_dispatch accepted before the table.
        #expect(Array(ActionField.structSizes.prefix(3)) == [MemoryLayout<uf_action>.offset(of: \.key)!,
                                                             MemoryLayout<uf_action>.offset(of: \.event)!,
                                                             MemoryLayout<uf_action>.offset(of: \.event)! + MemoryLayout<UnsafeRawPointer>.size])
    }

    @Test func theTableIsConsistent() {
        #expect(ActionField.allCases.count <= 16)
        #expect(ActionField.jsonKeys.count <= 16)
        let inputSlots = ActionField.allCases.compactMap(\.inputSlot)
        #expect(Set(inputSlots).count == inputSlots.count)
        #expect(inputSlots.sorted() == Array(0..<inputSlots.count) && inputSlots.count <= DecodedAction<JSONValue>.textSlots)
        let headerSlots = ActionField.allCases.compactMap(\.headerSlot)
        #expect(Set(headerSlots).count == headerSlots.count)
        #expect(headerSlots.sorted() == Array(0..<headerSlots.count) && headerSlots.count <= ActionHeaderTexts.count)
        for field in ActionField.allCases {
            let given = field.structMember != nil || ActionKind.allCases.contains { field.jsonName(on: $0) != nil }
            // Every text a host gives is kept while decoded (the feature has its own place).
            if field.value == .text && given && field.resolution != .feature { #expect(field.inputSlot != nil, "\(field)") }
            // Only texts have slots; what is not resolved to an index is kept in the header.
            if field.value != .text { #expect(field.inputSlot == nil && field.headerSlot == nil, "\(field)") }
            if field.value == .text && (field.resolution == .none || field.resolution == .event || field.resolution == .instanceKey) {
                #expect(field.headerSlot != nil, "\(field)")
            }
            // The orders that are behaviour list each field once.
            let checked = ActionField.structCheckOrder.filter { $0 == field }.count
            #expect(checked == (field.structMember != nil && field != .kind && field != .feature ? 1 : 0), "\(field)")
            let reported = ActionField.reportOrder.filter { $0 == field }.count
            #expect(reported == (field.value == .object || field.value == .list || field.value == .callback ? 0 : 1), "\(field)")
        }
    }

    /// Every field JSON has is decoded, on every kind that takes it, from a
    /// `JSONValue` and from jansson's tree; and refused with its type's name.
    @Test(arguments: ActionKind.allCases)
    func everyJSONFieldIsDecoded(_ kind: ActionKind) throws {
        for field in ActionField.allCases where field != .kind {
            guard let name = field.jsonName(on: kind)?.description else { continue }
            let text = actionJSON(kind, [(name, jsonSample(field))])
            let request = try ActionRequest.decode(try JSONParser.parse(text))
            let expected = switch field.value {
            case .flag: String(!field.jsonNegated)
            case .list: "0"
            case .object: "{}"
            default: sample(field)
            }
            let got = field == .feature ? request.feature : decoded(field, of: request)
            #expect(got == expected, "\(text)")
            let borrowed = try JSONParser.withTree(text) { (root) throws(UniFlowError) -> String in
                let action = try BorrowedAction.decode(JanssonValue(root))
                return field == .feature ? action.feature.string : decoded(field, of: action)
            }
            #expect(borrowed == expected, "\(text)")

            let wrong = actionJSON(kind, [(name, "1")])
            #expect(throws: UniFlowError(.schema, "action.\(name): expected \(field.value.jsonType), got number"), "\(wrong)") {
                try ActionRequest.decode(try JSONParser.parse(wrong))
            }
        }
    }

    /// Every member of `uf_action` is read, on every kind that takes it, and
    /// refused (UF_EINVAL) on the others.
    @Test(arguments: ActionKind.allCases)
    func everyStructFieldIsRead(_ kind: ActionKind) throws {
        let strings: [String] = ["S", "Go", "k1", "{}"]
        let texts = strings.map { strdup($0)! }
        defer { texts.forEach { free($0) } }
        func pointer(_ field: ActionField) -> UnsafeMutablePointer<CChar> {
            field.value == .object ? texts[3] : field == .event ? texts[1] : field == .key ? texts[2] : texts[0]
        }
        func base() -> uf_action {
            var a = uf_action()
            a.size = UInt32(MemoryLayout<uf_action>.size)
            a.kind = kind.cKind
            a.feature = UnsafePointer(texts[0])
            for field in ActionField.allCases where field.use(on: kind) == .required && field.value == .text && field != .feature {
                set(field, on: &a)
            }
            return a
        }
        func set(_ field: ActionField, on a: inout uf_action) {
            let offset = field.structOffset!
            withUnsafeMutableBytes(of: &a) { raw in
                if field.value == .flag {
                    raw.storeBytes(of: 1, toByteOffset: offset, as: Int32.self)
                } else {
                    raw.storeBytes(of: UnsafeRawPointer(pointer(field)), toByteOffset: offset, as: UnsafeRawPointer.self)
                }
            }
        }
        for field in ActionField.allCases where field.structOffset != nil && field != .kind && field != .feature {
            var a = base()
            set(field, on: &a)
            switch field.use(on: kind) {
            case .refused:
                #expect(throws: UniFlowError(.invalidArgument, "uf_action: \(field.structDescription) is not allowed on \(kind.article) \(kind.rawValue) action"),
                        "\(field)") { try DecodedAction<CActionSource>(a) }
            case .optional, .required:
                if field == .via { continue }  // the caller's to take; not in the decoded action
                let action = try DecodedAction<CActionSource>(a)
                let expected = field.value == .flag ? "true" : field.value == .object ? "{}" : String(cString: pointer(field))
                #expect(decoded(field, of: action) == expected, "\(field) on \(kind)")
            }
        }
    }

    /// `plainAction` lends every text and flag a decoded action has to the hot
    /// path: read back from the struct, the action is the same.
    @Test(arguments: ActionKind.allCases)
    func plainActionsCarryEveryField(_ kind: ActionKind) throws {
        var extra: [(String, String)] = []
        for field in ActionField.allCases where field.structOffset != nil && field != .kind && field != .feature {
            guard field.value == .text || field.value == .flag, let name = field.jsonName(on: kind)?.description else { continue }
            // A flag that excludes a field is tried without it.
            if field.excludes != nil { continue }
            extra.append((name, jsonSample(field)))
        }
        let text = actionJSON(kind, extra)
        // (field, as decoded from JSON, as read back from the plain struct), or nil without a plain struct.
        let compared = try JSONParser.withTree(text) { (root) throws(UniFlowError) -> [(ActionField, String, String)]? in
            let action = try BorrowedAction.decode(JanssonValue(root))
            guard let plain = action.plainAction else { return nil }
            let back = try DecodedAction<CActionSource>(plain)
            return ActionField.allCases.filter { $0.inputSlot != nil || $0.value == .flag }.map { field in
                (field, decoded(field, of: action), decoded(field, of: back))
            }
        }
        let fields = try #require(compared, "\(text) has no plain struct")
        for (field, fromJSON, fromStruct) in fields {
            #expect(fromJSON == fromStruct, "\(field) of \(text)")
        }
        #expect(fields.contains { $0.1 != "-" && $0.1 != "false" } || kind == .deinitialize)
    }

    /// What the header keeps: lent by the hot path's struct, copied by `owned()`,
    /// shown by reports under the field's JSON key.
    @Test func theHeaderKeepsOwnsAndReportsEveryText() throws {
        let h = Harness(Seeds.toggle)
        let d = dispatcher(from: UnsafeMutableRawPointer(h.d))
        let texts = ActionField.allCases.map { (field) -> UnsafeMutablePointer<CChar> in
            let text = "t-\(field)"
            return strdup(text)!
        }
        defer { texts.forEach { free($0) } }
        for field in ActionField.allCases where field.headerSlot != nil {
            let text = UnsafePointer(texts[field.rawValue])
            // Lent by a caller's struct.
            if let offset = field.structOffset {
                var a = uf_action()
                withUnsafeMutableBytes(of: &a) { $0.storeBytes(of: text, toByteOffset: offset, as: UnsafePointer<CChar>.self) }
                withUnsafePointer(to: &a) { a in
                    let hot = HotAction(action: a, kind: .send, feature: 0, from: -1, into: -1, event: -1)
                    #expect(hot.lendsTexts, "\(field)")
                    #expect(hot.header[text: field] == text, "\(field)")
                }
            }
            // Owned once queued.
            var header = ActionHeader(kind: .send, feature: 0)
            header[text: field] = text
            if field == .timer { header.byTimer = true }
            #expect(header.hasTexts)
            let owned = try ResolvedAction(header: header).owned()
            let copy = try #require(owned.header[text: field])
            #expect(copy != text && String(cString: copy) == "t-\(field)", "\(field)")
            // Reported.
            let name = try #require(field.reportName(on: .send)?.description, "\(field)")
            #expect(d.actionDescription(header)[name] == .string("t-\(field)"), "\(field)")
        }
    }
}
