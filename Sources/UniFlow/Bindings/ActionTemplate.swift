/// Action templates in a binding's `then.submit`: any object whose only key is
/// `$` is replaced by its rule's value before the action is queued (`docs/bindings.md`).
enum ActionTemplate {
    /// Refuses, at registration, rules inside the template that could never run.
    static func validateRules(in template: JSONValue, path: String) throws(UniFlowError) {
        switch template {
        case .object(let object):
            if object.count == 1, let rule = object["$"] {
                do throws(UniFlowError) { try JsonLogic.validate(rule) } catch { throw error.prefixed("\(path).$") }
                return
            }
            for (key, value) in object { try validateRules(in: value, path: "\(path).\(key)") }
        case .array(let items):
            for (i, item) in items.enumerated() { try validateRules(in: item, path: "\(path)[\(i)]") }
        default:
            return
        }
    }

    /// Every `{"$": rule}` rule in the template.
    static func rules(in template: JSONValue) -> [JSONValue] {
        switch template {
        case .object(let object):
            if object.count == 1, let rule = object["$"] { return [rule] }
            return object.flatMap { rules(in: $0.value) }
        case .array(let items):
            return items.flatMap(rules(in:))
        default:
            return []
        }
    }

    /// The template with every `{"$": rule}` replaced by the rule's value over `data`.
    static func substitute(_ template: JSONValue, data: JSONValue) throws(UniFlowError) -> JSONValue {
        switch template {
        case .object(let object):
            if object.count == 1, let rule = object["$"] { return try JsonLogic.apply(rule, data: data) }
            var result = JSONObject()
            for (key, value) in object { result[key] = try substitute(value, data: data) }
            return .object(result)
        case .array(let items):
            var result: [JSONValue] = []
            for item in items { result.append(try substitute(item, data: data)) }
            return .array(result)
        default:
            return template
        }
    }
}

/// An action template with its `{"$": rule}` holes found once, when its definition
/// is registered: substituting it evaluates only the holes, and a template whose
/// rules all sit in its payload keeps the rest of the action decoded.
final class CompiledTemplate {
    /// A part of the template: what stays as written, a hole, or a container of parts.
    /// Not `indirect`: the arrays already give the recursion its indirection, and an
    /// indirect enum keeps its case in the spare bits of the box pointer, which leak
    /// checkers (LeakSanitizer) cannot follow: a live dispatcher's templates were
    /// reported as leaked.
    enum Part {
        case literal(JSONValue)
        case rule(JsonLogic.CompiledRule)
        case object([(key: String, part: Part)])
        case array([Part])
    }

    let json: JSONValue
    let part: Part
    /// Decoded once, without its payload, when no rule lies outside the payload
    /// and the rest decodes: then only the payload is substituted.
    let request: ActionRequest?
    /// The payload's part, with `request`.
    let payload: Part?

    init(_ template: JSONValue) {
        json = template
        part = CompiledTemplate.compile(template)
        if case .object(let object) = template, !object.contains(where: { $0.key != "payload" && CompiledTemplate.hasRule($0.value) }) {
            var rest = object
            rest["payload"] = nil
            let decoded = try? ActionRequest.decode(.object(rest))
            // A payload on a kind that takes none must fail as the whole template would.
            if let decoded, object["payload"] == nil || ActionField.payload.use(on: decoded.kind) != .refused {
                request = decoded
                payload = object["payload"].map(CompiledTemplate.compile)
            } else {
                request = nil
                payload = nil
            }
        } else {
            request = nil
            payload = nil
        }
    }

    private static func compile(_ template: JSONValue) -> Part {
        guard hasRule(template) else { return .literal(template) }
        switch template {
        case .object(let object):
            if object.count == 1, let rule = object["$"] { return .rule(JsonLogic.CompiledRule(rule)) }
            return .object(object.map { (key: $0.key, part: compile($0.value)) })
        case .array(let items):
            return .array(items.map(compile))
        default:
            return .literal(template)
        }
    }

    private static func hasRule(_ template: JSONValue) -> Bool {
        switch template {
        case .object(let object): object.count == 1 && object["$"] != nil || object.contains { hasRule($0.value) }
        case .array(let items): items.contains(where: hasRule)
        default: false
        }
    }

    /// The template's value over `data`.
    func substitute(data: JsonLogic.JSValue) throws(UniFlowError) -> JSONValue {
        try CompiledTemplate.substitute(part, data: data)
    }

    static func substitute(_ part: Part, data: JsonLogic.JSValue) throws(UniFlowError) -> JSONValue {
        switch part {
        case .literal(let value): return value
        case .rule(let rule): return try rule.apply(data: data)
        case .object(let members):
            var entries: [(key: String, value: JSONValue)] = []
            entries.reserveCapacity(members.count)
            for member in members { entries.append((member.key, try substitute(member.part, data: data))) }
            return .object(JSONObject(entries))
        case .array(let items):
            var values: [JSONValue] = []
            values.reserveCapacity(items.count)
            for item in items { values.append(try substitute(item, data: data)) }
            return .array(values)
        }
    }
}
