/// A feature, or one instance of a keyed feature: where a state lives.
struct Place: Equatable {
    var feature: Int32
    /// The instance's slot in its feature's `InstanceTable`; -1 for a single
    /// feature, or for an instance that does not live.
    var instance: Int32 = -1
}
