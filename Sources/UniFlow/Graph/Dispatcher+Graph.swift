/// Graphs (`uf_graph_dot`): the registered features as Graphviz DOT.
extension Dispatcher {
    /// Every feature (`only` nil) or one, with its model bindings.
    func graphDOT(only name: String?) throws(UniFlowError) -> String {
        let only = try name.map { (name) throws(UniFlowError) in Int(try resolveFeature(name)) }
        let all = allDefinitions()
        let graph = DOTGraph(definitions: all,
                             bindings: all.indices.map { f in (bindings.byOwner[Int32(f)] ?? []).map(\.definition) })
        return graph.render(only: only)
    }
}
