import CUniFlow

// Graphs (SPEC 10): the registered features as Graphviz DOT.

@c @implementation
public func uf_graph_dot(_ d: OpaquePointer?, _ feature: UnsafePointer<CChar>?,
                         _ out_dot: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    withDispatcher(d, "uf_graph_dot") { (dispatcher) throws(UniFlowError) in
        guard let out_dot else { throw UniFlowError(.invalidArgument, "uf_graph_dot: out_dot is NULL") }
        out_dot.pointee = nil
        let name = feature.map { String(cString: $0) }
        let text = try dispatcher.exclusive { () throws(UniFlowError) -> String in
            let only = try name.map { (name) throws(UniFlowError) in Int(try dispatcher.resolveFeature(name)) }
            let definitions = dispatcher.allDefinitions()
            let graph = DOTGraph(definitions: definitions,
                                 bindings: definitions.indices.map { f in
                                     (dispatcher.modelBindings[Int32(f)] ?? []).map(\.definition)
                                 })
            return graph.render(only: only)
        }
        guard let copy = mallocString(text) else { throw UniFlowError(.noMemory, "uf_graph_dot: out of memory") }
        out_dot.pointee = copy
        return .ok
    }
}
