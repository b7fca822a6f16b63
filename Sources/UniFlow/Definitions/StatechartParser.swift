/// Reads statechart features (`docs/statecharts.md`): nested, parallel, final
/// and history states, `entry`/`exit`/`always`/`onDone`, targets with several
/// states, `reenter` and `actions`. A feature is a statechart when it uses any
/// of these keys; every other definition is left to `DefinitionParser` as before.
///
/// Errors are `UF_ESCHEMA` with the element's path, as everywhere in definitions.
enum StatechartParser {
    static let maxLevels = 32
    static let maxStates = 4096

    static let chartFeatureKeys = ["entry", "exit", "always", "invoke", "after", "type", "fields"]
    static let chartStateKeys = ["states", "initial", "type", "history", "default", "entry", "exit", "always",
                                 "onDone", "invoke", "output"]
    private static let featureKeys = ["$schema", "feature", "description", "instances", "states", "initial",
                                      "transitions", "on", "bindings", "entry", "exit", "always", "invoke",
                                      "after", "type", "fields"]
    private static let stateKeys = ["description", "fields", "after", "on", "states", "initial", "type", "history",
                                    "default", "entry", "exit", "always", "onDone", "invoke", "output"]
    private static let targetKeys = ["into", "if", "call", "payload", "spec", "actions", "reenter"]

    /// Event names the library alone sends, which definitions may still name.
    static let reservedEventPrefixes = ["xstate.done.state.", "xstate.done.actor.", "xstate.error.actor.", "xstate.after."]

    /// Whether a name is one of the events only the library sends (`xstate.init`
    /// and the reserved prefixes), which no action may send from outside.
    static func isLibraryEventName(_ name: String) -> Bool {
        name == "xstate.init" || reservedEventPrefixes.contains { name.hasPrefix($0) && name.count > $0.count }
    }

    /// Why an action may not send this event (the text after the member's
    /// name), or nil when it may.
    static func outerEventRefusal(_ name: String) -> String? {
        if isLibraryEventName(name) { return "'\(name)' is reserved: only the library sends it" }
        if !DefinitionParser.isValidName(name) { return "'\(name)' is not a valid event name" }
        return nil
    }

    /// Whether an event name may appear in a statechart's `on`.
    static func isChartEventName(_ name: String) -> Bool {
        DefinitionParser.isValidName(name) || reservedEventPrefixes.contains { name.hasPrefix($0) && name.count > $0.count }
    }

    /// Whether the definition uses any key statecharts add.
    static func isStatechart(_ feature: JSONObject) -> Bool {
        if chartFeatureKeys.contains(where: { feature[$0] != nil }) { return true }
        if let on = feature["on"]?.objectValue, on.contains(where: { usesChartTargets($0.value) }) { return true }
        guard let states = feature["states"]?.objectValue else { return false }
        for (_, state) in states {
            guard let object = state.objectValue else { continue }
            if chartStateKeys.contains(where: { object[$0] != nil }) { return true }
            if let on = object["on"]?.objectValue,
               on.contains(where: { usesChartTargets($0.value) || isReservedEventName($0.key) }) { return true }
            // A timer that sends an event rather than submitting actions.
            if case .array(let timers)? = object["after"], timers.contains(where: { $0.objectValue?["send"] != nil }) { return true }
        }
        if let on = feature["on"]?.objectValue, on.contains(where: { isReservedEventName($0.key) }) { return true }
        return false
    }

    /// `xstate.done.state.*` and the other names only the library sends.
    private static func isReservedEventName(_ name: String) -> Bool {
        reservedEventPrefixes.contains { name.hasPrefix($0) }
    }

    private static func usesChartTargets(_ value: JSONValue) -> Bool {
        func one(_ target: JSONValue) -> Bool {
            switch target {
            case .string(let name): return name.contains(".")
            case .object(let object):
                // A target without `into` stays a flat feature's error ("missing key
                // 'into'"): a targetless transition makes a statechart only next to
                // another key of section 16.
                if object["actions"] != nil || object["reenter"] != nil { return true }
                // A guard tree (`{"and": [...]}`, `{"call": g, "params": p}`): a flat
                // feature's `call` is one handler's name.
                if case .object? = object["call"] { return true }
                if case .array? = object["into"] { return true }
                if case .string(let name)? = object["into"] { return name.contains(".") }
                return false
            default: return false
            }
        }
        if case .array(let items) = value { return items.contains(where: one) }
        return one(value)
    }

    // MARK: Feature

    /// One statechart feature. `base` is what `DefinitionParser` read of the
    /// parts all features share (name, description, instances, bindings).
    static func parseFeature(_ object: JSONObject, path: String) throws(UniFlowError) -> (Statechart, [StateDefinition]) {
        for (key, _) in object where !featureKeys.contains(key) {
            throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
        }
        let name = object["feature"]?.stringValue ?? ""
        var builder = Builder()
        // The root: the feature itself.
        builder.nodes.append(Statechart.Node(name: name, path: "", parent: -1, depth: 0))
        if let type = object["type"] {
            guard case .string("parallel") = type else {
                throw UniFlowError(.schema, "\(path).type: a feature's type is \"parallel\", got \(type.jsonText)")
            }
            builder.nodes[0].kind = .parallel
        }
        if let fields = object["fields"] { builder.nodes[0].fields = try parseFields(fields, at: "\(path).fields") }
        guard let statesJSON = object["states"] else { throw UniFlowError(.schema, "\(path): missing key 'states'") }
        try builder.addChildren(statesJSON, of: 0, at: "\(path).states")
        if builder.nodes[0].kind != .parallel { builder.nodes[0].kind = .compound }
        builder.finishTree()

        // Second pass: everything that names states.
        try builder.readBehaviour(of: 0, object, at: path)
        for (i, (json, nodePath)) in builder.sources.enumerated() where i > 0 {
            try builder.readBehaviour(of: i, json, at: nodePath)
        }
        var allowed: [Set<Int>]?
        if let value = object["transitions"] {
            allowed = try builder.parseAllowed(value, at: "\(path).transitions")
        }
        let chart = Statechart(name: name, nodes: builder.nodes, transitionCount: builder.transitionCount, allowed: allowed)
        try checkFieldsAlongConfigurations(chart, at: path)
        try checkDeclaredTransitions(chart, builder: builder)

        // The flat view the rest of the core keeps: one state per node, named by its path.
        let states = builder.nodes.dropFirst().map { StateDefinition(name: $0.path, description: nil, fields: []) }
        return (chart, Array(states))
    }

    /// `initial` of a statechart feature: the states `initialize` may enter
    /// (with their descendants); nil: any.
    static func parseInitial(_ json: JSONValue?, chart: Statechart, at path: String) throws(UniFlowError) -> Set<Int>? {
        guard let json else { return nil }
        guard case .array(let items) = json else { throw expected("array", got: json, at: path) }
        guard !items.isEmpty else { throw UniFlowError(.schema, "\(path): must not be empty") }
        var set = Set<Int>()
        for (i, item) in items.enumerated() {
            guard case .string(let text) = item else { throw expected("string", got: item, at: "\(path)[\(i)]") }
            switch chart.node(named: text) {
            case .success(let node):
                guard set.insert(node).inserted else { throw UniFlowError(.schema, "\(path)[\(i)]: duplicate state '\(text)'") }
            case .failure(let reason): throw UniFlowError(.schema, "\(path)[\(i)]: \(reason)")
            }
        }
        return set
    }


    // MARK: Fields

    private static func parseFields(_ json: JSONValue, at path: String) throws(UniFlowError) -> [FieldDefinition] {
        guard case .object(let object) = json else { throw expected("object", got: json, at: path) }
        var fields: [FieldDefinition] = []
        for (fieldName, field) in object {
            guard DefinitionParser.isValidName(fieldName) else {
                throw UniFlowError(.schema, "\(path): '\(fieldName)' is not a valid name")
            }
            fields.append(try DefinitionParser.parseField(field, name: fieldName, at: "\(path).\(fieldName)"))
        }
        return fields
    }

    /// A field declared by two states that can be active together (one inside
    /// the other, the feature and a state, or two regions of a parallel state).
    private static func checkFieldsAlongConfigurations(_ chart: Statechart, at path: String) throws(UniFlowError) {
        var declared: [String: [Int]] = [:]
        for (i, node) in chart.nodes.enumerated() {
            for field in node.fields { declared[field.name, default: []].append(i) }
        }
        for (i, node) in chart.nodes.enumerated() {
            for field in node.fields {
                for other in declared[field.name]! where other < i && canBeActiveTogether(chart, other, i) {
                    let first = other == 0 ? "the feature" : chart.nodes[other].path
                    throw UniFlowError(.schema, "\(path).\(statePath(chart, i)).fields.\(field.name): field '\(field.name)' is declared twice along one configuration (in \(first) and \(node.path))")
                }
            }
        }
    }

    /// The element path of a node's declaration (`states.A.states.B`).
    static func statePath(_ chart: Statechart, _ node: Int) -> String {
        var parts: [String] = []
        var n = node
        while n > 0 {
            parts.append("states.\(chart.nodes[n].name)")
            n = chart.nodes[n].parent
        }
        return parts.reversed().joined(separator: ".")
    }

    private static func canBeActiveTogether(_ chart: Statechart, _ a: Int, _ b: Int) -> Bool {
        if chart.isWithin(b, a) || chart.isWithin(a, b) { return true }
        // The innermost common ancestor decides: parallel keeps both.
        var p = chart.nodes[a].parent
        while p >= 0 && !chart.isWithin(b, p) { p = chart.nodes[p].parent }
        return p >= 0 && chart.nodes[p].kind == .parallel
    }

    /// State-level targets must be transitions `transitions` allows.
    private static func checkDeclaredTransitions(_ chart: Statechart, builder: Builder) throws(UniFlowError) {
        guard let allowed = chart.allowed else { return }
        for (transition, path) in builder.targetPaths where transition.source > 0 {
            for target in transition.targets {
                var s = transition.source
                var ok = false
                while s > 0 && !ok {
                    ok = allowed[s].contains(target)
                    s = chart.nodes[s].parent
                }
                if !ok {
                    throw UniFlowError(.schema, "\(path): \(chart.nodes[transition.source].path) -> \(chart.nodes[target].path) is not a declared transition")
                }
            }
        }
    }

    // MARK: Building the tree

    private struct Builder {
        var nodes: [Statechart.Node] = []
        /// Each node's JSON object and element path (the root's is empty).
        var sources: [(JSONObject, String)] = [(JSONObject(), "")]
        var transitionCount = 0
        var byName: [String: [Int]] = [:]
        var byPath: [String: Int] = [:]
        /// Every transition read, with the path of its `into`, for the `transitions` check.
        var targetPaths: [(StatechartTransition, String)] = []

        mutating func addChildren(_ json: JSONValue, of parent: Int, at path: String) throws(UniFlowError) {
            guard case .object(let object) = json else { throw expected("object", got: json, at: path) }
            guard !object.isEmpty else { throw UniFlowError(.schema, "\(path): must not be empty") }
            let depth = nodes[parent].depth + 1
            if depth > StatechartParser.maxLevels {
                throw UniFlowError(.schema, "\(path): states nest at most \(StatechartParser.maxLevels) levels deep")
            }
            for (name, value) in object {
                guard DefinitionParser.isValidName(name) else {
                    if name.utf8.count > DefinitionParser.maxNameLength {
                        throw UniFlowError(.schema, "\(path): a name is at most \(DefinitionParser.maxNameLength) bytes, got \(name.utf8.count)")
                    }
                    throw UniFlowError(.schema, "\(path): '\(name)' is not a valid name")
                }
                let statePath = "\(path).\(name)"
                guard case .object(let state) = value else { throw expected("object", got: value, at: statePath) }
                for (key, _) in state where !StatechartParser.stateKeys.contains(key) {
                    throw UniFlowError(.schema, "\(statePath): unknown key '\(key)'")
                }
                if nodes.count >= StatechartParser.maxStates + 1 {
                    throw UniFlowError(.schema, "\(statePath): a statechart has at most \(StatechartParser.maxStates) states")
                }
                let index = nodes.count
                let nodePath = parent == 0 ? name : "\(nodes[parent].path).\(name)"
                var node = Statechart.Node(name: name, path: nodePath, parent: parent, depth: depth)
                if let type = state["type"] {
                    switch type {
                    case .string("parallel"): node.kind = .parallel
                    case .string("final"): node.kind = .final
                    case .string("history"): node.kind = .history
                    case .string("atomic"), .string("compound"): break
                    default:
                        throw UniFlowError(.schema, "\(statePath).type: expected \"parallel\", \"final\" or \"history\", got \(type.jsonText)")
                    }
                }
                if let fields = state["fields"] { node.fields = try StatechartParser.parseFields(fields, at: "\(statePath).fields") }
                nodes[parent].children.append(index)
                nodes.append(node)
                sources.append((state, statePath))
                byName[name, default: []].append(index)
                byPath[nodePath] = index
                if let children = state["states"] {
                    if node.kind == .final || node.kind == .history {
                        throw UniFlowError(.schema, "\(statePath).states: a \(node.kind == .final ? "final" : "history") state has no child states")
                    }
                    try addChildren(children, of: index, at: "\(statePath).states")
                    if nodes[index].kind == .atomic { nodes[index].kind = .compound }
                }
            }
        }

        /// Each node's `end` (its last descendant), once every node exists.
        mutating func finishTree() {
            for i in stride(from: nodes.count - 1, through: 0, by: -1) {
                nodes[i].end = nodes[i].children.last.map { nodes[$0].end } ?? i
            }
        }

        func resolve(_ text: String, at path: String) throws(UniFlowError) -> Int {
            let nodes = self.nodes
            switch Statechart.resolve(text, byPath: byPath, byName: byName, paths: { nodes[$0].path }) {
            case .success(let node): return node
            case .failure(let reason): throw UniFlowError(.schema, "\(path): \(reason)")
            }
        }

        /// Keys that name states or hold behaviour, for one node.
        mutating func readBehaviour(of index: Int, _ object: JSONObject, at path: String) throws(UniFlowError) {
            let kind = nodes[index].kind
            let isRoot = index == 0
            if !isRoot {
                if let value = object["history"] {
                    guard kind == .history else { throw UniFlowError(.schema, "\(path).history: only a history state has 'history'") }
                    switch value {
                    case .string("shallow"): nodes[index].deepHistory = false
                    case .string("deep"): nodes[index].deepHistory = true
                    default: throw UniFlowError(.schema, "\(path).history: expected \"shallow\" or \"deep\", got \(value.jsonText)")
                    }
                }
                if let value = object["default"] {
                    guard kind == .history else { throw UniFlowError(.schema, "\(path).default: only a history state has 'default'") }
                    let defaults = try targets(value, at: "\(path).default")
                    // Inside the parent and not another history state: entering a
                    // default can then never come back to this history state.
                    let parent = nodes[index].parent
                    for d in defaults where !(d > parent && d <= nodes[parent].end) || nodes[d].kind == .history {
                        throw UniFlowError(.schema, "\(path).default: \(nodes[d].path) is not a state inside \(parent == 0 ? "the feature" : nodes[parent].path)")
                    }
                    nodes[index].historyDefault = defaults
                }
                if kind == .history {
                    for key in ["on", "after", "always", "invoke", "entry", "exit", "fields", "onDone", "output", "initial"] where object[key] != nil {
                        throw UniFlowError(.schema, "\(path).\(key): a history state has no '\(key)'")
                    }
                    if nodes[index].parent == 0 && nodes[0].kind != .compound && nodes[0].kind != .parallel {
                        throw UniFlowError(.schema, "\(path): a history state needs a parent state")
                    }
                    return
                }
                if kind == .final {
                    for key in ["on", "after", "always", "invoke"] where object[key] != nil {
                        throw UniFlowError(.schema, "\(path).\(key): a final state has no '\(key)'")
                    }
                }
                if let output = object["output"] {
                    guard kind == .final else { throw UniFlowError(.schema, "\(path).output: only a final state has an output") }
                    try ActionTemplate.validateRules(in: output, path: "\(path).output")
                    nodes[index].output = output
                }
                if kind == .compound {
                    guard let initial = object["initial"] else { throw UniFlowError(.schema, "\(path): missing key 'initial' (a state with child states names its initial child)") }
                    guard case .string(let text) = initial else { throw expected("string", got: initial, at: "\(path).initial") }
                    let child = nodes[index].children.first { nodes[$0].name == text }
                        ?? resolvedChild(text, of: index)
                    guard let child else { throw UniFlowError(.schema, "\(path).initial: '\(text)' is not a child state of \(nodes[index].path)") }
                    nodes[index].initial = child
                } else if object["initial"] != nil {
                    throw UniFlowError(.schema, "\(path).initial: only a state with child states (not parallel) has 'initial'")
                }
                if let onDone = object["onDone"] {
                    guard kind == .compound || kind == .parallel else {
                        throw UniFlowError(.schema, "\(path).onDone: only a compound or parallel state has 'onDone'")
                    }
                    let list = try transitionList(onDone, from: index, at: "\(path).onDone")
                    nodes[index].on.append((event: "xstate.done.state.\(nodes[index].path)", transitions: list))
                }
            }
            if isRoot, nodes[0].kind == .compound {
                // The feature has no `initial` child: `initialize` names where it starts.
            }
            if let after = object["after"] { nodes[index].timers = try timers(after, at: "\(path).after") }
            var invokeTransitions: [(event: String, transitions: [StatechartTransition])] = []
            if let invoke = object["invoke"] {
                let items: [JSONValue]
                if case .array(let list) = invoke { items = list } else { items = [invoke] }
                for (i, item) in items.enumerated() {
                    let itemPath = invoke.arrayValue != nil ? "\(path).invoke[\(i)]" : "\(path).invoke"
                    guard case .object(let config) = item else { throw expected("object", got: item, at: itemPath) }
                    for (key, _) in config where !["src", "id", "input", "onDone", "onError"].contains(key) {
                        throw UniFlowError(.schema, "\(itemPath): unknown key '\(key)'")
                    }
                    guard case .string(let src)? = config["src"] else {
                        throw UniFlowError(.schema, "\(itemPath).src: expected a service name")
                    }
                    var id = "\(i).\(nodes[index].path)"
                    if let value = config["id"] {
                        guard case .string(let text) = value, !text.isEmpty else { throw expected("a non-empty string", got: value, at: "\(itemPath).id") }
                        id = text
                    }
                    if let input = config["input"] { try ActionTemplate.validateRules(in: input, path: "\(itemPath).input") }
                    nodes[index].invokes.append(StatechartInvoke(src: src, id: id, input: config["input"]))
                    if let onDone = config["onDone"] {
                        invokeTransitions.append((event: "xstate.done.actor.\(id)", transitions: try transitionList(onDone, from: index, at: "\(itemPath).onDone")))
                    }
                    if let onError = config["onError"] {
                        invokeTransitions.append((event: "xstate.error.actor.\(id)", transitions: try transitionList(onError, from: index, at: "\(itemPath).onError")))
                    }
                }
            }
            if let entry = object["entry"] { nodes[index].entry = try effects(entry, at: "\(path).entry") }
            if let exit = object["exit"] { nodes[index].exit = try effects(exit, at: "\(path).exit") }
            if let always = object["always"] { nodes[index].always = try transitionList(always, from: index, at: "\(path).always") }
            if let on = object["on"] {
                guard case .object(let events) = on else { throw expected("object", got: on, at: "\(path).on") }
                var list: [(event: String, transitions: [StatechartTransition])] = []
                for (event, value) in events {
                    guard StatechartParser.isChartEventName(event) else {
                        throw UniFlowError(.schema, "\(path).on: '\(event)' is not a valid event name")
                    }
                    list.append((event: event, transitions: try transitionList(value, from: index, at: "\(path).on.\(event)")))
                }
                // `onDone` read first stays after `on`, as XState orders them.
                nodes[index].on = list + nodes[index].on.filter { done in !list.contains { $0.event == done.event } }
            }
            // An invoke's onDone/onError replace an `on` of the same name, as in XState.
            for entry in invokeTransitions {
                nodes[index].on.removeAll { $0.event == entry.event }
                nodes[index].on.append(entry)
            }
        }

        /// A name that resolves to a child of `parent`, if it does.
        func resolvedChild(_ text: String, of parent: Int) -> Int? {
            let nodes = self.nodes
            guard case .success(let node) = Statechart.resolve(text, byPath: byPath, byName: byName, paths: { nodes[$0].path }),
                  nodes[node].parent == parent else { return nil }
            return node
        }

        func targets(_ json: JSONValue, at path: String) throws(UniFlowError) -> [Int] {
            switch json {
            case .string(let text): return [try resolve(text, at: path)]
            case .array(let items):
                guard !items.isEmpty else { throw UniFlowError(.schema, "\(path): a list of states must not be empty") }
                var result: [Int] = []
                for (i, item) in items.enumerated() {
                    guard case .string(let text) = item else { throw expected("string", got: item, at: "\(path)[\(i)]") }
                    result.append(try resolve(text, at: "\(path)[\(i)]"))
                }
                return result
            default:
                throw expected("a state path or a list of them", got: json, at: path)
            }
        }

        mutating func transitionList(_ json: JSONValue, from source: Int, at path: String) throws(UniFlowError) -> [StatechartTransition] {
            if case .array(let items) = json {
                guard !items.isEmpty else { throw UniFlowError(.schema, "\(path): a list of targets must not be empty") }
                var list: [StatechartTransition] = []
                for (i, item) in items.enumerated() { list.append(try transition(item, from: source, at: "\(path)[\(i)]")) }
                return list
            }
            return [try transition(json, from: source, at: path)]
        }

        mutating func transition(_ json: JSONValue, from source: Int, at path: String) throws(UniFlowError) -> StatechartTransition {
            var t = StatechartTransition(id: transitionCount, source: source, targets: [])
            transitionCount += 1
            var intoPath = path
            switch json {
            case .string:
                t.targets = try targets(json, at: path)
            case .object(let object):
                for (key, _) in object where !StatechartParser.targetKeys.contains(key) {
                    if key == "actualize" {
                        throw UniFlowError(.schema, "\(path): 'actualize' is not a key of statechart targets (a target without 'into' stays)")
                    }
                    throw UniFlowError(.schema, "\(path): unknown key '\(key)'")
                }
                if let into = object["into"] {
                    intoPath = "\(path).into"
                    t.targets = try targets(into, at: intoPath)
                }
                if let rule = object["if"] {
                    do throws(UniFlowError) { try JsonLogic.validate(rule) } catch { throw error.prefixed("\(path).if") }
                    t.guardRule = rule
                }
                if let call = object["call"] { t.guardCall = try guardCall(call, at: "\(path).call") }
                if let payload = object["payload"] {
                    guard case .object = payload else { throw expected("object", got: payload, at: "\(path).payload") }
                    try ActionTemplate.validateRules(in: payload, path: "\(path).payload")
                    t.payload = payload
                }
                if let spec = object["spec"] {
                    guard case .string(let text) = spec else { throw expected("string", got: spec, at: "\(path).spec") }
                    t.spec = text
                }
                if let reenter = object["reenter"] {
                    guard case .bool(let flag) = reenter else { throw expected("boolean", got: reenter, at: "\(path).reenter") }
                    t.reenter = flag
                }
                if let actions = object["actions"] { t.actions = try effects(actions, at: "\(path).actions") }
            default:
                throw UniFlowError(.schema, "\(path): expected a state path or an object, got \(json.jsonTypeName)")
            }
            // Several targets: at most one per region, all inside one state.
            for (i, a) in t.targets.enumerated() {
                for b in t.targets[..<i] where a == b || isAncestorOrSelf(a, b) || isAncestorOrSelf(b, a) || !inDifferentRegions(a, b) {
                    throw UniFlowError(.schema, "\(intoPath): \(nodes[b].path) and \(nodes[a].path) cannot be entered together")
                }
            }
            targetPaths.append((t, intoPath))
            return t
        }

        private func isAncestorOrSelf(_ a: Int, _ b: Int) -> Bool {
            var n = b
            while n >= 0 {
                if n == a { return true }
                n = nodes[n].parent
            }
            return false
        }

        private func inDifferentRegions(_ a: Int, _ b: Int) -> Bool {
            var p = nodes[a].parent
            while p >= 0 && !isAncestorOrSelf(p, b) { p = nodes[p].parent }
            return p >= 0 && nodes[p].kind == .parallel
        }

        func guardCall(_ json: JSONValue, at path: String) throws(UniFlowError) -> GuardCall {
            switch json {
            case .string(let name): return .call(name, params: nil)
            case .object(let object):
                guard let (key, value) = object.entries.first, object.count == 1 || (object.count == 2 && object["call"] != nil && object["params"] != nil) else {
                    throw UniFlowError(.schema, "\(path): expected one of 'and', 'or', 'not', 'in', 'call'")
                }
                switch object["call"] != nil ? "call" : key {
                case "and", "or":
                    guard case .array(let items) = value, !items.isEmpty else { throw expected("a non-empty array", got: value, at: "\(path).\(key)") }
                    var list: [GuardCall] = []
                    for (i, item) in items.enumerated() { list.append(try guardCall(item, at: "\(path).\(key)[\(i)]")) }
                    return key == "and" ? .and(list) : .or(list)
                case "not": return .not(try guardCall(value, at: "\(path).not"))
                case "in":
                    guard case .string(let text) = value else { throw expected("string", got: value, at: "\(path).in") }
                    return .active(try resolve(text, at: "\(path).in"))
                case "call":
                    guard case .string(let name) = object["call"]! else { throw expected("string", got: object["call"]!, at: "\(path).call") }
                    if let params = object["params"] { try ActionTemplate.validateRules(in: params, path: "\(path).params") }
                    return .call(name, params: object["params"])
                default:
                    throw UniFlowError(.schema, "\(path): unknown key '\(key)' (expected 'and', 'or', 'not', 'in' or 'call')")
                }
            default:
                throw expected("a handler name or an object", got: json, at: path)
            }
        }

        /// A statechart's `after`: `[{"ms": N, "send": "EVENT"}]`, each timer
        /// armed when its state is entered and disarmed when it is left.
        func timers(_ json: JSONValue, at path: String) throws(UniFlowError) -> [(ms: UInt64, event: String)] {
            guard case .array(let items) = json else { throw expected("array", got: json, at: path) }
            guard items.count <= DefinitionParser.maxTimersPerState else {
                throw UniFlowError(.schema, "\(path): at most \(DefinitionParser.maxTimersPerState) timers per state, got \(items.count)")
            }
            var list: [(ms: UInt64, event: String)] = []
            for (i, item) in items.enumerated() {
                let itemPath = "\(path)[\(i)]"
                guard case .object(let object) = item else { throw expected("object", got: item, at: itemPath) }
                for (key, _) in object where key != "ms" && key != "send" {
                    if key == "submit" { throw UniFlowError(.schema, "\(itemPath): a statechart's timer sends an event ('send'), it does not submit") }
                    throw UniFlowError(.schema, "\(itemPath): unknown key '\(key)'")
                }
                let ms: UInt64
                switch object["ms"] {
                case .int(let n)? where n >= 0 && UInt64(n) <= DefinitionParser.maxTimerMilliseconds: ms = UInt64(n)
                case let other?: throw UniFlowError(.schema, "\(itemPath).ms: expected an integer from 0 to 2^53, got \(other.jsonText)")
                case nil: throw UniFlowError(.schema, "\(itemPath): missing key 'ms'")
                }
                guard let send = object["send"] else { throw UniFlowError(.schema, "\(itemPath): missing key 'send'") }
                guard case .string(let event) = send, StatechartParser.isChartEventName(event) else {
                    throw UniFlowError(.schema, "\(itemPath).send: expected an event name, got \(send.jsonText)")
                }
                list.append((ms: ms, event: event))
            }
            return list
        }

        func effects(_ json: JSONValue, at path: String) throws(UniFlowError) -> [StatechartEffect] {
            guard case .array(let items) = json else { throw expected("array", got: json, at: path) }
            var list: [StatechartEffect] = []
            for (i, item) in items.enumerated() {
                let itemPath = "\(path)[\(i)]"
                guard case .object(let object) = item else { throw expected("object", got: item, at: itemPath) }
                func only(_ allowed: [String]) throws(UniFlowError) {
                    for (key, _) in object where !allowed.contains(key) { throw UniFlowError(.schema, "\(itemPath): unknown key '\(key)'") }
                }
                if let assign = object["assign"] {
                    try only(["assign"])
                    guard case .object(let fields) = assign else { throw expected("object", got: assign, at: "\(itemPath).assign") }
                    try ActionTemplate.validateRules(in: assign, path: "\(itemPath).assign")
                    list.append(.assign(fields.map { (field: $0.key, value: $0.value) }))
                } else if let call = object["call"] {
                    try only(["call", "params"])
                    guard case .string(let name) = call else { throw expected("string", got: call, at: "\(itemPath).call") }
                    if let params = object["params"] { try ActionTemplate.validateRules(in: params, path: "\(itemPath).params") }
                    list.append(.call(name, params: object["params"]))
                } else if let send = object["send"] {
                    try only(["send", "payload", "delay", "id"])
                    guard case .string(let event) = send else { throw expected("string", got: send, at: "\(itemPath).send") }
                    guard DefinitionParser.isValidName(event) else { throw UniFlowError(.schema, "\(itemPath).send: '\(event)' is not a valid event name") }
                    var delay: UInt64?
                    if let value = object["delay"] {
                        guard case .int(let n) = value, n >= 0, UInt64(n) <= DefinitionParser.maxTimerMilliseconds else {
                            throw UniFlowError(.schema, "\(itemPath).delay: expected an integer from 0 to 2^53, got \(value.jsonText)")
                        }
                        delay = UInt64(n)
                    }
                    var id: String?
                    if let value = object["id"] {
                        guard case .string(let text) = value, !text.isEmpty else { throw expected("a non-empty string", got: value, at: "\(itemPath).id") }
                        guard delay != nil else { throw UniFlowError(.schema, "\(itemPath).id: only a delayed send has an id") }
                        id = text
                    }
                    if let payload = object["payload"] {
                        guard case .object = payload else { throw expected("object", got: payload, at: "\(itemPath).payload") }
                        try ActionTemplate.validateRules(in: payload, path: "\(itemPath).payload")
                    }
                    list.append(.send(event, payload: object["payload"], delay: delay, id: id))
                } else if let cancel = object["cancel"] {
                    try only(["cancel"])
                    guard case .string(let id) = cancel, !id.isEmpty else { throw expected("a non-empty string", got: cancel, at: "\(itemPath).cancel") }
                    list.append(.cancel(id))
                } else if let submit = object["submit"] {
                    try only(["submit"])
                    guard case .array(let templates) = submit else { throw expected("array", got: submit, at: "\(itemPath).submit") }
                    for (j, template) in templates.enumerated() {
                        guard case .object = template else { throw expected("object", got: template, at: "\(itemPath).submit[\(j)]") }
                        try ActionTemplate.validateRules(in: template, path: "\(itemPath).submit[\(j)]")
                    }
                    list.append(.submit(templates))
                } else {
                    throw UniFlowError(.schema, "\(itemPath): expected one of 'assign', 'call', 'send', 'cancel', 'submit'")
                }
            }
            return list
        }

        /// `transitions` with paths: each source's allowed targets.
        func parseAllowed(_ json: JSONValue, at path: String) throws(UniFlowError) -> [Set<Int>] {
            guard case .object(let object) = json else { throw expected("object", got: json, at: path) }
            var allowed = Array(repeating: Set<Int>(), count: nodes.count)
            for (from, list) in object {
                let source = try resolve(from, at: path)
                let listPath = "\(path).\(from)"
                guard case .array(let items) = list else { throw expected("array", got: list, at: listPath) }
                for (i, item) in items.enumerated() {
                    guard case .string(let text) = item else { throw expected("string", got: item, at: "\(listPath)[\(i)]") }
                    let target = try resolve(text, at: "\(listPath)[\(i)]")
                    // A target allows its descendants too.
                    for n in target...nodes[target].end { allowed[source].insert(n) }
                }
            }
            return allowed
        }
    }

    private static func expected(_ kind: String, got json: JSONValue, at path: String) -> UniFlowError {
        UniFlowError(.schema, "\(path): expected \(kind), got \(json.jsonTypeName)")
    }
}
