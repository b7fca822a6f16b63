/// The payloads of the GlobalModel (states live in `HotStorage`) and the count
/// of applied mutations.
struct ModelStore {
    /// Each single feature's payload, when its `FeatureSlot.hasPayload` is set.
    var payloads: [JSONObject?] = []
    /// Each keyed feature's instance payloads, by `InstanceTable` and slot.
    var instancePayloads: [[JSONObject?]] = []
    /// Applied mutations so far (the `seq` of the last one).
    var seq: UInt64 = 0
}
