/// A model binding as declared in a feature's definition (`docs/bindings.md`):
/// `when` a mutation matches, `given` clauses hold, `then` call and/or submit.
struct BindingDefinition {
    /// One `given` clause, evaluated in order.
    enum Given {
        /// Stops the binding unless the rule is truthy.
        case when(rule: JSONValue, spec: String?)
        /// The rule's value becomes the next clause's `given`.
        case map(rule: JSONValue, spec: String?)
        /// Asks a host handler: above 0 holds, 0 stops, below 0 fails.
        case call(handler: String, spec: String?)
    }

    var scenario: String?
    var when: FilterExpression
    var given: [Given]
    var thenSpec: String?
    /// Runs before `submit`.
    var thenCall: String?
    /// Action templates; `{"$": rule}` objects are replaced before queueing.
    var thenSubmit: [JSONValue]
    /// The same templates, compiled (see `CompiledTemplate`).
    var compiledSubmit: [CompiledTemplate] = []
    /// The `given` clauses' rules, compiled, by clause (nil for a `call`).
    var compiledGiven: [JsonLogic.CompiledRule?] = []

    /// The name reports and graphs use: the scenario, or one derived from the clauses.
    var name: String {
        if let scenario { return scenario }
        var text = "WHEN \(when.text)"
        if !given.isEmpty { text += ", GIVEN " + given.map(\.label).joined(separator: ", ") }
        return text + ", THEN \(thenLabel)"
    }

    /// The binding as a BDD sentence (`[scenario] WHEN ..., GIVEN ..., THEN ...`), for the verbose reporter.
    var sentence: String {
        var text = scenario.map { "[\($0)] " } ?? ""
        text += "WHEN \(when.text)"
        if !given.isEmpty { text += ", GIVEN " + given.map(\.label).joined(separator: ", ") }
        return text + ", THEN \(thenLabel)."
    }

    private var thenLabel: String {
        if let thenSpec { return thenSpec }
        var parts: [String] = []
        if let thenCall { parts.append("call \(thenCall)") }
        parts += thenSubmit.map { template in
            let object = template.objectValue
            let kind = object?["kind"]?.stringValue ?? "action"
            let feature = object?["feature"]?.stringValue ?? "?"
            return "\(kind) \(feature)"
        }
        return parts.isEmpty ? "nothing" : parts.joined(separator: " and ")
    }
}

extension BindingDefinition.Given {
    var label: String {
        switch self {
        case .when(let rule, let spec): spec ?? rule.jsonText
        case .map(let rule, let spec): spec ?? "map \(rule.jsonText)"
        case .call(let handler, let spec): spec ?? "call \(handler)"
        }
    }

    var handler: String? {
        if case .call(let handler, _) = self { return handler }
        return nil
    }

    /// The clause's JsonLogic rule, if it has one.
    var rule: JSONValue? {
        switch self {
        case .when(let rule, _), .map(let rule, _): rule
        case .call: nil
        }
    }
}

extension BindingDefinition {
    /// Checks a binding's shape, rules included (names are checked later, at
    /// registration). Errors are `UF_ESCHEMA` naming `path` and below.
    /// `isStatechart` says whether a feature's states may be named by paths.
    static func parse(_ json: JSONValue, path: String,
                      isStatechart: (String) -> Bool = { _ in false }) throws(UniFlowError) -> BindingDefinition {
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "\(path): a binding must be an object, got \(json.jsonTypeName)")
        }
        for key in object.keys where !["scenario", "when", "given", "then"].contains(key) {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
        let scenario = try optionalString(object["scenario"], path: "\(path).scenario")
        guard let whenValue = object["when"] else { throw UniFlowError(.schema, "\(path): missing key 'when'") }
        guard let whenText = whenValue.stringValue else {
            throw UniFlowError(.schema, "\(path).when: expected string, got \(whenValue.jsonTypeName)")
        }
        let when: FilterExpression
        do throws(UniFlowError) {
            var pathRefusal: String?
            when = try FilterExpression.parse(whenText, pathRefusal: &pathRefusal)
            if let pathRefusal, let feature = when.feature, !isStatechart(feature) { throw UniFlowError(.schema, pathRefusal) }
        } catch {
            throw error.prefixed("\(path).when")
        }

        var given: [Given] = []
        if let givenValue = object["given"] {
            guard let clauses = givenValue.arrayValue else {
                throw UniFlowError(.schema, "\(path).given: expected array, got \(givenValue.jsonTypeName)")
            }
            for (i, clause) in clauses.enumerated() {
                given.append(try parseGiven(clause, path: "\(path).given[\(i)]"))
            }
        }

        guard let thenValue = object["then"] else { throw UniFlowError(.schema, "\(path): missing key 'then'") }
        guard let then = thenValue.objectValue else {
            throw UniFlowError(.schema, "\(path).then: expected object, got \(thenValue.jsonTypeName)")
        }
        for key in then.keys where !["spec", "submit", "call"].contains(key) {
            throw UniFlowError(.schema, "\(path).then: unknown key '\(key)'")
        }
        let thenSpec = try optionalString(then["spec"], path: "\(path).then.spec")
        let thenCall = try optionalString(then["call"], path: "\(path).then.call")
        var templates: [JSONValue] = []
        if let submit = then["submit"] {
            guard let items = submit.arrayValue else {
                throw UniFlowError(.schema, "\(path).then.submit: expected array, got \(submit.jsonTypeName)")
            }
            for (i, item) in items.enumerated() {
                guard item.objectValue != nil else {
                    throw UniFlowError(.schema, "\(path).then.submit[\(i)]: expected object, got \(item.jsonTypeName)")
                }
                try ActionTemplate.validateRules(in: item, path: "\(path).then.submit[\(i)]")
                templates.append(item)
            }
        }
        if thenCall == nil && then["submit"] == nil {
            throw UniFlowError(.schema, "\(path).then: needs 'submit' and/or 'call'")
        }
        var binding = BindingDefinition(scenario: scenario, when: when, given: given, thenSpec: thenSpec,
                                        thenCall: thenCall, thenSubmit: templates)
        binding.compiledSubmit = templates.map(CompiledTemplate.init)
        binding.compiledGiven = given.map { $0.rule.map(JsonLogic.CompiledRule.init) }
        return binding
    }

    private static func parseGiven(_ json: JSONValue, path: String) throws(UniFlowError) -> Given {
        guard let object = json.objectValue else {
            throw UniFlowError(.schema, "\(path): a given clause must be an object, got \(json.jsonTypeName)")
        }
        for key in object.keys where !["spec", "if", "map", "call"].contains(key) {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
        let spec = try optionalString(object["spec"], path: "\(path).spec")
        let kinds = ["if", "map", "call"].filter { object[$0] != nil }
        guard kinds.count == 1 else {
            throw UniFlowError(.schema, "\(path): needs exactly one of 'if', 'map', 'call'")
        }
        switch kinds[0] {
        case "if":
            let rule = object["if"]!
            do throws(UniFlowError) { try JsonLogic.validate(rule) } catch { throw error.prefixed("\(path).if") }
            return .when(rule: rule, spec: spec)
        case "map":
            let rule = object["map"]!
            do throws(UniFlowError) { try JsonLogic.validate(rule) } catch { throw error.prefixed("\(path).map") }
            return .map(rule: rule, spec: spec)
        default:
            guard let handler = object["call"]!.stringValue else {
                throw UniFlowError(.schema, "\(path).call: expected string, got \(object["call"]!.jsonTypeName)")
            }
            return .call(handler: handler, spec: spec)
        }
    }

    private static func optionalString(_ value: JSONValue?, path: String) throws(UniFlowError) -> String? {
        guard let value else { return nil }
        guard let text = value.stringValue else { throw UniFlowError(.schema, "\(path): expected string, got \(value.jsonTypeName)") }
        return text
    }
}
