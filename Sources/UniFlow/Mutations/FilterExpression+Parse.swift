extension FilterExpression {
    /// Parses a filter (`docs/filters.md`): `AnyMutation`,
    /// `Transition<F>`, `SettingInto<F.S>`, `TransitionBetween<F.A, F.B>`. Blanks
    /// (spaces and tabs) may surround `<`, `>`, `,`, `.` and the whole filter.
    /// A state may be a path (`F.Active.Playing`, for statecharts). Names are
    /// checked for their pattern only; the registry resolves them later.
    ///
    /// Errors are `UF_ESCHEMA`: `cannot parse filter 'Foo<': ...` for anything that
    /// does not parse (the empty string included), and `TransitionBetween must name
    /// one feature` when its two states belong to different features.
    static func parse(_ text: String) throws(UniFlowError) -> FilterExpression {
        var pathRefusal: String?
        return try parse(text, pathRefusal: &pathRefusal)
    }

    /// `parse`, giving in `pathRefusal` the parse error a state path (`F.A.B`)
    /// gave before statecharts, which a flat (or unknown) feature's filter still
    /// gets (`Dispatcher.refusePath`). Kept apart from the expression, which
    /// bindings copy as they run.
    static func parse(_ text: String, pathRefusal: inout String?) throws(UniFlowError) -> FilterExpression {
        do throws(UniFlowError) {
            return try parseAllowingPaths(text, pathRefusal: &pathRefusal)
        } catch {
            // Before paths, the first dot inside a state's name ended the parse
            // with this error: whatever follows it still does.
            if let pathRefusal { throw UniFlowError(.schema, pathRefusal) }
            throw error
        }
    }

    /// `parse`, noting in `pathRefusal` the error the first path gave before paths.
    private static func parseAllowingPaths(_ text: String, pathRefusal: inout String?) throws(UniFlowError) -> FilterExpression {
        var scanner = FilterScanner(text)
        // Only a NULL filter means AnyMutation: an empty one is a mistake.
        guard !scanner.atEnd else { throw scanner.failure("empty filter") }
        let formName = try scanner.name(what: "a filter name")
        guard let form = Form(rawValue: formName) else {
            throw scanner.failure("unknown filter '\(formName)'")
        }
        var references: [(feature: String, key: String?, state: String?)] = []
        if scanner.skip("<") {
            repeat {
                let feature = try scanner.name(what: "a feature name")
                let key = scanner.skip("[") ? try scanner.key() : nil
                var state = scanner.skip(".") ? try scanner.name(what: "a state name") : nil
                // A statechart's states are named by paths (`Active.Playing`); a
                // flat feature's never contain a dot, and refuse one as they did
                // before paths (`pathRefusal`), once the feature is known.
                while state != nil, let dot = scanner.dot() {
                    let refusal = scanner.failure("expected '>' \(scanner.found(at: dot))").message
                    guard let next = scanner.nameIfAny() else { throw UniFlowError(.schema, refusal) }
                    if pathRefusal == nil { pathRefusal = refusal }
                    state! += "." + next
                }
                references.append((feature, key, state))
            } while scanner.skip(",")
            try scanner.expect(">")
        }
        try scanner.expectEnd()

        switch (form.argument, references.count) {
        case (.none, 0):
            return FilterExpression(form: form)
        case (.feature, 1) where references[0].state == nil:
            return FilterExpression(form: form, feature: references[0].feature, key: references[0].key)
        case (.state, 1) where references[0].state != nil:
            return FilterExpression(form: form, feature: references[0].feature, state: references[0].state, key: references[0].key)
        case (.twoStates, 2) where references[0].state != nil && references[1].state != nil:
            guard references[0].feature == references[1].feature else {
                throw UniFlowError(.schema, "filter '\(text)': TransitionBetween must name one feature, "
                    + "not \(references[0].feature) and \(references[1].feature)")
            }
            guard references[0].key == references[1].key else {
                throw UniFlowError(.schema, "filter '\(text)': TransitionBetween must name one instance")
            }
            return FilterExpression(form: form, feature: references[0].feature,
                                    state: references[0].state, secondState: references[1].state, key: references[0].key)
        default:
            throw scanner.failure("\(form.rawValue) \(form.argument.usage)")
        }
    }
}

extension FilterExpression.Form {
    /// What goes between a form's angle brackets.
    fileprivate enum Argument {
        case none, feature, state, twoStates

        var usage: String {
            switch self {
            case .none: "takes no argument"
            case .feature: "takes <Feature>"
            case .state: "takes <Feature.State>"
            case .twoStates: "takes <Feature.From, Feature.Into>"
            }
        }
    }

    fileprivate var argument: Argument {
        switch self {
        case .anyMutation: .none
        case .anyMutationOf, .anyUpdateOf, .anySettingOf,
             .initialization, .actualization, .transition, .deinitialization: .feature
        case .settingInto, .initializationInto, .actualizationIn,
             .transitionInto, .transitionFrom, .deinitializationFrom: .state
        case .transitionBetween: .twoStates
        }
    }
}

/// A cursor over a filter's bytes. Every token skips the blanks after it, and
/// the scanner skips leading ones, so blanks may appear between any two tokens.
private struct FilterScanner {
    let text: String
    let bytes: [UInt8]
    var position = 0

    init(_ text: String) {
        self.text = text
        bytes = Array(text.utf8)
        skipBlanks()
    }

    func failure(_ reason: String) -> UniFlowError {
        UniFlowError(.schema, "cannot parse filter '\(text)': \(reason)")
    }

    /// `[A-Za-z_][A-Za-z0-9_]*`, at most `DefinitionParser.maxNameLength` bytes.
    mutating func name(what: String) throws(UniFlowError) -> String {
        let start = position
        while position < bytes.count, bytes[position].isNameByte,
              position > start || !bytes[position].isDigit {
            position += 1
        }
        guard position > start else { throw failure("expected \(what) \(found(at: start))") }
        let name = String(decoding: bytes[start..<position], as: UTF8.self)
        guard name.utf8.count <= DefinitionParser.maxNameLength else {
            throw failure("a name is at most \(DefinitionParser.maxNameLength) bytes, got \(name.utf8.count)")
        }
        skipBlanks()
        return name
    }

    /// Consumes a `.` that comes next, returning its offset.
    mutating func dot() -> Int? {
        let at = position
        return skip(".") ? at : nil
    }

    /// A name if one comes next (and the blanks after it), else nil with nothing consumed.
    mutating func nameIfAny() -> String? {
        let start = position
        guard let name = try? name(what: "a state name") else {
            position = start
            return nil
        }
        return name
    }

    /// An instance's key up to the closing `]`, which it consumes.
    mutating func key() throws(UniFlowError) -> String {
        let start = position
        while position < bytes.count, bytes[position] != UInt8(ascii: "]"), bytes[position] != UInt8(ascii: " "),
              bytes[position] != UInt8(ascii: "\t") {
            position += 1
        }
        let key = String(decoding: bytes[start..<position], as: UTF8.self)
        if position == start, position < bytes.count, bytes[position] != UInt8(ascii: "]") {
            throw failure("expected a key \(found(at: position))")
        }
        if let reason = InstanceKey.refusal(key) { throw failure("key: \(reason)") }
        skipBlanks()
        try expect("]")
        return key
    }

    /// Consumes `token` (and the blanks after it) if it comes next.
    mutating func skip(_ token: Unicode.Scalar) -> Bool {
        guard position < bytes.count, bytes[position] == UInt8(ascii: token) else { return false }
        position += 1
        skipBlanks()
        return true
    }

    mutating func expect(_ token: Unicode.Scalar) throws(UniFlowError) {
        guard skip(token) else { throw failure("expected '\(token)' \(found(at: position))") }
    }

    var atEnd: Bool { position == bytes.count }

    func expectEnd() throws(UniFlowError) {
        guard atEnd else { throw failure("expected the end \(found(at: position))") }
    }

    mutating func skipBlanks() {
        while position < bytes.count, bytes[position] == UInt8(ascii: " ") || bytes[position] == UInt8(ascii: "\t") {
            position += 1
        }
    }

    /// `at column 7, found '-'` or `at the end`, for messages (columns count bytes from 1).
    func found(at offset: Int) -> String {
        guard offset < bytes.count else { return "at the end" }
        // Decode the whole scalar so a non-ASCII character is quoted intact.
        var rest = bytes[offset...].makeIterator()
        var decoder = UTF8()
        let character = if case .scalarValue(let scalar) = decoder.decode(&rest) { String(Character(scalar)) } else { "?" }
        return "at column \(offset + 1), found '\(character)'"
    }
}

extension UInt8 {
    fileprivate var isDigit: Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(self) }

    /// `[A-Za-z0-9_]`.
    fileprivate var isNameByte: Bool {
        isDigit || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(self)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(self) || self == UInt8(ascii: "_")
    }
}
