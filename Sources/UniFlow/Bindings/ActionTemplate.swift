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
