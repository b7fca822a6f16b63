import CUniFlow

/// Model bindings and the host handlers they name.
struct BindingRegistry {
    /// Host handlers by name (`uf_register_handler`).
    var handlers: [String: HostCallback<uf_handler_fn>] = [:]
    /// Model bindings by owner feature, in declaration order (features without
    /// bindings have no entry: most have none).
    var byOwner: [Int32: [ActiveBinding]] = [:]
    /// For each watched feature, the bindings whose filter names it (owner order).
    var watchers: [Int32: [BindingReference]] = [:]
    /// Bindings whose filter is `AnyMutation`.
    var anyWatchers: [BindingReference] = []
    /// While a batch announces its mutations (after committing them all): how
    /// many instances (a single feature: 0 or 1) each feature it began or ended
    /// has at the mutation being announced, which decides whether its bindings
    /// are active there, as one action after another would have.
    var aliveInBatch: [Int32: Int]? = nil

    /// Handlers are released in name order, so that it does not depend on hashing.
    mutating func releaseHandlers() {
        for name in handlers.keys.sorted() { handlers[name]!.release() }
        handlers.removeAll()
    }
}
