/// Draws registered features as Graphviz DOT (`docs/cli.md`, FlowKit's graphs): one
/// cluster per feature, its states as nodes, its declared transitions and event
/// targets as edges, its state timers as dotted edges, and its model bindings as
/// dashed edges labelled with their scenario.
///
/// Pure: it reads definitions and bindings and returns text; the same input always
/// gives the same bytes (registration order, declaration order, sorted indices).
///
/// What is drawn, and why:
/// * A feature is `subgraph cluster_<Feature>`; a state is the node `"Feature.State"`
///   labelled with the state's name. Names are identifiers (`docs/definitions.md`), so
///   `cluster_<Feature>` is a valid bare DOT id and `"Feature.State"` never
///   collides with the helper nodes, whose ids hold a `#`. A keyed feature's label
///   ends in ` [key]`: one cluster stands for all its instances.
/// * `initial` states have a double border and an edge from the feature's entry
///   point (a dot). Without `initial` every state may be entered first: no entry
///   point, and the cluster label says "any initial state".
/// * Without `transitions` every pair is allowed: drawing the complete graph would
///   bury the bindings, so no edges are drawn and the label says "any transition".
/// * Each event target is an edge labelled `on E` (` [spec]` added when it has
///   one), as FlowKit's DOTBuilder draws its steps. A state's own target starts at
///   the state; a declared transition that such a target takes is not drawn a
///   second time, unlabelled (registration made every state-level target a
///   declared transition, so nothing is lost). The feature's own `on` starts at
///   the feature's border: Graphviz cannot clip an edge at the cluster that also
///   holds its head, so the border is a small dot just outside the cluster, tied
///   to it by a line (the `border` endpoint).
/// * A state timer is a dotted edge labelled `after <delay>` (`delayText`) from its
///   state to what each submitted template acts on, found as for bindings: the
///   literal `into` (`in` for an actualize); else the feature's border (its own
///   feature's border dot, another feature's cluster).
/// * A binding's edge starts at the state its `when` filter names (the state entered
///   for `TransitionBetween<F.A,F.B>`, the state left for `…From` forms), or at the
///   feature's cluster when the filter names none, or at an "any mutation" node for
///   `AnyMutation`. It ends at each feature its `then.submit` templates act on: the
///   literal `into` state (`in` for an actualize), else the feature's cluster; at a
///   "computed feature" node when the feature is a `{"$": rule}`; and at a node for
///   the host handler when the binding has `then.call`. A feature's cluster at one
///   end of an edge whose other end is inside it is its border dot instead.
/// * When only one feature is drawn, its own bindings and timers are drawn, and
///   states of other features they touch appear as dashed nodes named
///   `Feature.State`.
struct DOTGraph {
    /// In registration order.
    var definitions: [FeatureDefinition]
    /// `bindings[i]` are the model bindings `definitions[i]` declares, in order.
    var bindings: [[BindingDefinition]]

    /// Binding labels are wrapped at about this many characters per line.
    static let labelWidth = 28

    /// Where a binding edge starts or ends.
    enum Endpoint: Hashable {
        case state(feature: Int, state: Int)
        /// The feature as a whole (its cluster).
        case feature(Int)
        /// `AnyMutation`.
        case anyMutation
        /// A template whose feature is computed by a rule.
        case computedFeature
        /// A template naming a feature that is not registered.
        case unknownFeature(String)
        /// A host handler called by `then.call`.
        case handler(String)
        /// A drawn feature's border, for edges that start or end at the feature
        /// as a whole inside its own cluster (its own `on`; its timers and
        /// bindings acting on itself): a dot outside the cluster, tied to it.
        case border(Int)
    }

    /// The DOT text for every feature (`only` nil) or for one.
    func render(only: Int? = nil) -> String {
        let drawn = only.map { [$0] } ?? Array(definitions.indices)
        var out = "digraph uniflow {\n"
        // Nested clusters (statecharts) need Graphviz's newer ranking; flat drawings stay as they were.
        let nested = drawn.contains { definitions[$0].chart != nil } ? " newrank=true," : ""
        out += "  graph [rankdir=LR, compound=true,\(nested) fontname=\"Helvetica\", fontsize=12, nodesep=0.3, ranksep=0.45];\n"
        out += "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];\n"
        out += "  edge [fontname=\"Helvetica\", fontsize=9];\n"
        for f in drawn { out += cluster(f) }

        // Edges outside the clusters, with the helper and foreign nodes they need
        // declared first: the features' own `on`, timers that leave their
        // cluster, then bindings.
        var declared = Set<Endpoint>()
        var nodes = ""
        var edges = ""
        let inDrawing = Set(drawn)
        func declare(_ endpoint: Endpoint) {
            guard !declared.contains(endpoint) else { return }
            declared.insert(endpoint)
            nodes += declaration(of: endpoint, inDrawing: inDrawing)
        }
        for f in drawn {
            var fromBorder: [String] = []
            for entry in definitions[f].events {
                for target in entry.targets {
                    declare(.border(f))
                    let line = "  \(Self.quoted(node(of: .border(f), inDrawing: inDrawing).id)) -> \(Self.quoted(nodeID(f, target.into))) [\(eventAttributes(entry.event, target))];\n"
                    if !fromBorder.contains(line) { fromBorder.append(line) }
                }
            }
            edges += fromBorder.joined()
            for (s, state) in definitions[f].states.enumerated() {
                for timer in state.timers {
                    var pairs: [(tail: Endpoint, head: Endpoint)] = []
                    for target in targets(of: timer.submit) {
                        let pair = ends(from: .state(feature: f, state: s), to: target, inDrawing: inDrawing)
                        // States of its own feature are drawn inside the cluster.
                        if case .state(f, _) = pair.head { continue }
                        if !pairs.contains(where: { $0.head == pair.head }) { pairs.append(pair) }
                    }
                    for (tail, head) in pairs {
                        declare(head)
                        edges += edge(from: tail, to: head, attributes: timerAttributes(timer), inDrawing: inDrawing)
                    }
                }
            }
        }
        for owner in drawn {
            for binding in bindings[owner] {
                let source = source(of: binding.when)
                var heads: [Endpoint] = []
                for target in targets(of: binding) where !heads.contains(target) { heads.append(target) }
                if heads.isEmpty { continue }  // `"submit": []` and no call: acts on nothing
                let pairs = heads.map { ends(from: source, to: $0, inDrawing: inDrawing) }
                for (tail, head) in pairs {
                    declare(tail)
                    declare(head)
                }
                // Two targets can draw the same edge (a state, and its feature anchored there).
                var drawnEdges: [String] = []
                for (tail, head) in pairs {
                    let line = edge(from: tail, to: head, attributes: bindingAttributes(binding), inDrawing: inDrawing)
                    if !drawnEdges.contains(line) { drawnEdges.append(line) }
                }
                edges += drawnEdges.joined()
            }
        }
        if !edges.isEmpty { out += "\n" + nodes + edges }
        return out + "}\n"
    }

    // MARK: Features

    private func cluster(_ f: Int) -> String {
        let definition = definitions[f]
        if let chart = definition.chart { return statechartCluster(definition, chart: chart) }
        var notes: [String] = []
        if definition.initial == nil { notes.append("any initial state") }
        if definition.transitions == nil { notes.append("any transition") }
        var label = definition.name
        if definition.keyed { label += " [key]" }
        if !notes.isEmpty { label += "\n(" + notes.joined(separator: ", ") + ")" }

        var out = "\n  subgraph cluster_\(definition.name) {\n"
        out += "    label=\(Self.quoted(label));\n"
        out += "    style=rounded; color=gray40;\n"
        if let description = definition.description { out += "    tooltip=\(Self.quoted(description));\n" }
        let initial = definition.initial.map { $0.sorted() } ?? []
        if !initial.isEmpty {
            out += "    \(Self.quoted(entryID(f))) [shape=point, width=0.1, label=\"\"];\n"
        }
        for (s, state) in definition.states.enumerated() {
            var attributes = ["label=\(Self.quoted(state.name))"]
            if definition.initial?.contains(s) == true { attributes.append("peripheries=2") }
            if let tooltip = tooltip(for: state) { attributes.append("tooltip=\(Self.quoted(tooltip))") }
            out += "    \(Self.quoted(nodeID(f, s))) [\(attributes.joined(separator: ", "))];\n"
        }
        for s in initial {
            out += "    \(Self.quoted(entryID(f))) -> \(Self.quoted(nodeID(f, s)));\n"
        }
        if let transitions = definition.transitions {
            for (from, targets) in transitions.enumerated() {
                // A transition an event of this state takes is drawn as that event.
                let taken = Set(definition.states[from].events.flatMap(\.targets)
                    .filter { !($0.actualize && $0.into == from) }.map(\.into))
                for into in targets.sorted() where !taken.contains(into) {
                    out += "    \(Self.quoted(nodeID(f, from))) -> \(Self.quoted(nodeID(f, into)));\n"
                }
            }
        }
        var lines: [String] = []
        func add(_ line: String) { if !lines.contains(line) { lines.append(line) } }
        for (s, state) in definition.states.enumerated() {
            for entry in state.events {
                for target in entry.targets {
                    add("    \(Self.quoted(nodeID(f, s))) -> \(Self.quoted(nodeID(f, target.into))) [\(eventAttributes(entry.event, target))];\n")
                }
            }
        }
        // Timers whose actions enter a state of this feature; the others leave the
        // cluster and are drawn with the bindings.
        for (s, state) in definition.states.enumerated() {
            for timer in state.timers {
                for case .state(let g, let into) in targets(of: timer.submit) where g == f {
                    add("    \(Self.quoted(nodeID(f, s))) -> \(Self.quoted(nodeID(f, into))) [\(timerAttributes(timer).joined(separator: ", "))];\n")
                }
            }
        }
        return out + lines.joined() + "  }\n"
    }

    // MARK: Events and timers

    /// `label="on next [below 100]"`, and the guards as a tooltip.
    private func eventAttributes(_ event: String, _ target: EventTarget) -> String {
        var label = "on \(event)"
        if let spec = target.spec { label += " [\(spec)]" }
        var attributes = ["label=\(Self.quoted(label))"]
        var guards: [String] = []
        if let rule = target.rule { guards.append("if \(rule.jsonText)") }
        if let call = target.call { guards.append("call \(call)") }
        if !guards.isEmpty { attributes.append("tooltip=\(Self.quoted(guards.joined(separator: "\n")))") }
        return attributes.joined(separator: ", ")
    }

    private func timerAttributes(_ timer: StateTimer) -> [String] {
        var attributes = ["style=dotted", "label=\(Self.quoted("after " + Self.delayText(timer.ms)))"]
        if let scenario = timer.scenario { attributes.append("tooltip=\(Self.quoted(scenario))") }
        return attributes
    }

    /// A delay in the largest unit that holds it whole — `h`, `min`, `s`, else
    /// `ms` — so that the label is exact: 250 → `250 ms`, 1500 → `1500 ms`,
    /// 30000 → `30 s`, 90000 → `90 s`, 300000 → `5 min`, 5400000 → `90 min`,
    /// 7200000 → `2 h`, 0 → `0 ms`.
    static func delayText(_ ms: UInt64) -> String {
        guard ms > 0, ms % 1000 == 0 else { return "\(ms) ms" }
        let seconds = ms / 1000
        guard seconds % 60 == 0 else { return "\(seconds) s" }
        let minutes = seconds / 60
        guard minutes % 60 == 0 else { return "\(minutes) min" }
        return "\(minutes / 60) h"
    }

    /// The state's description and fields, shown on hover in SVG output.
    private func tooltip(for state: StateDefinition) -> String? {
        var lines: [String] = []
        if let description = state.description { lines.append(description) }
        for field in state.fields {
            var line = "\(field.name): \(field.type.rawValue)"
            if field.optional { line += "?" }
            if let value = field.defaultValue { line += " = \(value.jsonText)" }
            if let description = field.description { line += " (\(description))" }
            lines.append(line)
        }
        return lines.isEmpty ? nil : lines.joined(separator: "\n")
    }

    private func nodeID(_ f: Int, _ s: Int) -> String {
        "\(definitions[f].name).\(definitions[f].states[s].name)"
    }

    private func entryID(_ f: Int) -> String { "\(definitions[f].name)#entry" }

    // MARK: Bindings

    private func featureIndex(_ name: String?) -> Int? {
        guard let name else { return nil }
        return definitions.firstIndex { $0.name == name }
    }

    private func state(_ name: String?, of f: Int) -> Endpoint {
        guard let name, let s = definitions[f].stateIndex(named: name) else { return .feature(f) }
        return .state(feature: f, state: s)
    }

    /// The mutation a filter waits for, as a place in the drawing.
    func source(of filter: FilterExpression) -> Endpoint {
        // Registration resolved every name of a filter; a miss would be a core bug,
        // drawn as the "any mutation" node rather than trapping.
        guard let f = featureIndex(filter.feature) else { return .anyMutation }
        switch filter.form {
        case .anyMutation:
            return .anyMutation
        case .anyMutationOf, .anyUpdateOf, .anySettingOf, .initialization, .actualization, .transition,
             .deinitialization:
            return .feature(f)
        case .settingInto, .initializationInto, .actualizationIn, .transitionInto, .transitionFrom,
             .deinitializationFrom:
            return state(filter.state, of: f)
        case .transitionBetween:
            return state(filter.secondState, of: f)
        }
    }

    /// What a binding acts on: its templates' features (and states), then its handler.
    func targets(of binding: BindingDefinition) -> [Endpoint] {
        var result: [Endpoint] = []
        if let handler = binding.thenCall { result.append(.handler(handler)) }
        return result + targets(of: binding.thenSubmit)
    }

    /// What action templates (a binding's or a timer's) act on.
    func targets(of templates: [JSONValue]) -> [Endpoint] {
        var result: [Endpoint] = []
        for template in templates {
            guard let object = template.objectValue else { continue }
            guard let name = object["feature"]?.stringValue else {
                result.append(.computedFeature)
                continue
            }
            guard let f = featureIndex(name) else {
                result.append(.unknownFeature(name))
                continue
            }
            switch object["kind"]?.stringValue {
            case "initialize", "transition": result.append(state(object["into"]?.stringValue, of: f))
            case "actualize": result.append(state(object["in"]?.stringValue, of: f))
            default: result.append(.feature(f))
            }
        }
        return result
    }

    /// The node an endpoint is drawn as, and the cluster whose border the edge
    /// should be clipped at (feature-level endpoints of drawn features).
    private func node(of endpoint: Endpoint, inDrawing: Set<Int>) -> (id: String, cluster: String?) {
        switch endpoint {
        case .state(let f, let s):
            return (nodeID(f, s), nil)
        case .feature(let f):
            if inDrawing.contains(f) { return (nodeID(f, 0), "cluster_\(definitions[f].name)") }
            return ("\(definitions[f].name)#feature", nil)
        case .anyMutation:
            return ("#any-mutation", nil)
        case .computedFeature:
            return ("#computed-feature", nil)
        case .unknownFeature(let name):
            return ("#unknown:\(name)", nil)
        case .handler(let name):
            return ("#handler:\(name)", nil)
        case .border(let f):
            return ("\(definitions[f].name)#border", nil)
        }
    }

    /// Declares the nodes a binding edge needs outside the drawn clusters.
    private func declaration(of endpoint: Endpoint, inDrawing: Set<Int>) -> String {
        let id = Self.quoted(node(of: endpoint, inDrawing: inDrawing).id)
        switch endpoint {
        case .state(let f, let s):
            guard !inDrawing.contains(f) else { return "" }
            return "  \(id) [label=\(Self.quoted(nodeID(f, s))), style=\"rounded,dashed\"];\n"
        case .feature(let f):
            guard !inDrawing.contains(f) else { return "" }
            return "  \(id) [label=\(Self.quoted(definitions[f].name)), style=dashed];\n"
        case .anyMutation:
            return "  \(id) [label=\"any mutation\", shape=plaintext];\n"
        case .computedFeature:
            return "  \(id) [label=\"computed feature\", shape=plaintext];\n"
        case .unknownFeature(let name):
            return "  \(id) [label=\(Self.quoted(name + "?")), shape=plaintext];\n"
        case .handler(let name):
            return "  \(id) [label=\(Self.quoted(name + "()")), shape=cds];\n"
        case .border(let f):
            // The dot, and the line that ties it to the cluster's border.
            let name = definitions[f].name
            return "  \(id) [shape=point, width=0.08, color=gray40, label=\"\", tooltip=\(Self.quoted("\(name): any state"))];\n"
                + "  \(Self.quoted(nodeID(f, 0))) -> \(id) [ltail=cluster_\(name), arrowhead=none, color=gray40];\n"
        }
    }

    /// An edge's ends (a binding's or a timer's). A drawn feature as a whole, at
    /// the other end of an edge that stays inside its cluster (a feature acting
    /// on itself), is its border dot: the cluster cannot clip such an edge, which
    /// would otherwise seem to start or end at the feature's first state.
    private func ends(from source: Endpoint, to target: Endpoint,
                             inDrawing: Set<Int>) -> (tail: Endpoint, head: Endpoint) {
        var (tail, head) = (source, target)
        if case .feature(let f) = head, inDrawing.contains(f), endpoint(tail, isInside: head) {
            head = .border(f)
        }
        if case .feature(let f) = tail, inDrawing.contains(f), endpoint(head, isInside: tail) || head == .border(f) {
            tail = .border(f)
        }
        return (tail, head)
    }

    private func bindingAttributes(_ binding: BindingDefinition) -> [String] {
        ["style=dashed", "color=royalblue4", "fontcolor=royalblue4",
         "label=\(Self.quoted(Self.wrapped(binding.name, width: Self.labelWidth)))",
         "tooltip=\(Self.quoted(binding.scenario == nil ? binding.name + "." : binding.sentence))"]
    }

    private func edge(from source: Endpoint, to target: Endpoint, attributes given: [String],
                      inDrawing: Set<Int>) -> String {
        let tail = node(of: source, inDrawing: inDrawing)
        let head = node(of: target, inDrawing: inDrawing)
        var attributes = given
        // Clip at a cluster's border only when the other end is outside it: Graphviz
        // ignores (and warns about) a tail or head inside the cluster it is clipped at.
        if let cluster = tail.cluster, !endpoint(target, isInside: source) {
            attributes.append("ltail=\(cluster)")
        }
        if let cluster = head.cluster, !endpoint(source, isInside: target) {
            attributes.append("lhead=\(cluster)")
        }
        return "  \(Self.quoted(tail.id)) -> \(Self.quoted(head.id)) [\(attributes.joined(separator: ", "))];\n"
    }

    /// Whether `endpoint` is drawn inside the cluster of the feature-level `cluster`.
    private func endpoint(_ endpoint: Endpoint, isInside cluster: Endpoint) -> Bool {
        guard case .feature(let f) = cluster else { return false }
        switch endpoint {
        case .state(let g, _), .feature(let g): return f == g
        default: return false
        }
    }

    // MARK: Text

    /// A DOT quoted string. Quotes and backslashes are escaped (a label's `\\` is
    /// one backslash, so scenario text never turns into `\N`-style escapes),
    /// newlines become `\n`, other control characters blanks.
    static func quoted(_ text: String) -> String {
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            default:
                if scalar.value < 0x20 || scalar.value == 0x7F {
                    out += " "
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out + "\""
    }

    /// Breaks text into lines of about `width` characters at blanks; a longer word
    /// keeps its own line.
    static func wrapped(_ text: String, width: Int) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if !line.isEmpty && line.count + 1 + word.count > width {
                lines.append(line)
                line = ""
            }
            line += line.isEmpty ? String(word) : " " + word
        }
        if !line.isEmpty || lines.isEmpty { lines.append(line) }
        return lines.joined(separator: "\n")
    }
}
