/// Drawing a statechart feature (`uf_graph_dot`): its compound and parallel
/// states are clusters inside the feature's (a parallel state's regions with
/// dashed borders), each compound state's initial child has a double border,
/// history states are `H` / `H*` circles, final states double circles; events,
/// `always`, `onDone` and timers' events are arrows between the states they
/// leave and enter (a targetless transition is not drawn). Node ids are
/// `Feature.path`, as a flat feature's are `Feature.State`, so bindings reach
/// them the same way.
extension DOTGraph {
    func statechartCluster(_ definition: FeatureDefinition, chart: Statechart) -> String {
        func id(_ node: Int) -> String { Self.quoted("\(definition.name).\(chart.nodes[node].path)") }
        var label = definition.name
        if definition.keyed { label += " [key]" }
        if chart.nodes[0].kind == .parallel { label += "\n(parallel)" }
        var out = "\n  subgraph cluster_\(definition.name) {\n"
        out += "    label=\(Self.quoted(label));\n"
        out += "    style=rounded; color=gray40;\n"
        if let description = definition.description { out += "    tooltip=\(Self.quoted(description));\n" }

        func draw(_ node: Int, indent: String, dashed: Bool) {
            let n = chart.nodes[node]
            let parent = n.parent >= 0 ? chart.nodes[n.parent] : nil
            let isInitial = parent.map { $0.kind == .compound && $0.initial == node } ?? false
            switch n.kind {
            case .compound, .parallel:
                out += "\(indent)subgraph \(Self.quoted("cluster_\(definition.name).\(n.path)")) {\n"
                var clusterLabel = n.name
                if n.kind == .parallel { clusterLabel += " (parallel)" }
                out += "\(indent)  label=\(Self.quoted(clusterLabel));\n"
                out += "\(indent)  style=\(dashed ? "\"rounded,dashed\"" : "rounded")\(isInitial ? "; penwidth=2" : "");\n"
                for child in n.children { draw(child, indent: indent + "  ", dashed: n.kind == .parallel) }
                out += "\(indent)}\n"
            case .history:
                out += "\(indent)\(id(node)) [shape=circle, label=\(Self.quoted(n.deepHistory ? "H*" : "H"))];\n"
            case .final:
                out += "\(indent)\(id(node)) [shape=doublecircle, label=\(Self.quoted(n.name))];\n"
            case .atomic:
                out += "\(indent)\(id(node)) [label=\(Self.quoted(n.name))\(isInitial ? ", peripheries=2" : "")];\n"
            }
        }
        for child in chart.nodes[0].children { draw(child, indent: "    ", dashed: chart.nodes[0].kind == .parallel) }

        // An arrow to or from a compound or parallel state ends at the cluster's
        // border (lhead/ltail), drawn to the leaf it starts in: Graphviz ranks
        // arrows between nodes only.
        func leaf(_ node: Int) -> Int {
            let n = chart.nodes[node]
            switch n.kind {
            case .compound: return leaf(n.initial)
            case .parallel: return leaf(chart.stateChildren(node).first ?? node)
            default: return node
            }
        }
        func clusterName(_ node: Int) -> String? {
            let kind = chart.nodes[node].kind
            return kind == .compound || kind == .parallel ? Self.quoted("cluster_\(definition.name).\(chart.nodes[node].path)") : nil
        }
        func arrow(_ source: Int, _ target: Int, _ attributes: [String]) -> String {
            var all = attributes
            if let tail = clusterName(source), !chart.isWithin(target, source) { all.append("ltail=\(tail)") }
            if let head = clusterName(target), !chart.isWithin(source, target) { all.append("lhead=\(head)") }
            return "    \(id(leaf(source))) -> \(id(leaf(target))) [\(all.joined(separator: ", "))];\n"
        }
        var lines: [String] = []
        func add(_ line: String) { if !lines.contains(line) { lines.append(line) } }
        for (n, node) in chart.nodes.enumerated() {
            // The feature's own transitions leave from its border: drawn from each top-level state.
            let sources = n == 0 ? node.children.filter { chart.nodes[$0].kind != .history } : [n]
            var labelled: [(String, [StatechartTransition])] = node.on.map { ("on \($0.event)", $0.transitions) }
            if !node.always.isEmpty { labelled.append(("always", node.always)) }
            for (text, transitions) in labelled {
                for t in transitions {
                    var attributes = ["label=\(Self.quoted(text))"]
                    if t.isGuarded { attributes.append("style=dashed") }
                    for source in sources {
                        for target in t.targets { add(arrow(source, target, attributes)) }
                    }
                }
            }
        }
        return out + lines.joined() + "  }\n"
    }
}
