import CUniFlow
import Glibc

/// What `const uf_context *` points to while a via callback runs: a record on the
/// processing thread's stack.
struct ViaContextRecord {
    var dispatcher: UnsafeMutableRawPointer
    var feature: Int32
    /// The feature's (instance's) state before the action, or -1.
    var state: Int32
    /// The state entered or actualized, or -1 (trigger, deinitialization).
    var target: Int32
    /// The instance's key (nil for a single feature).
    var key: UnsafePointer<CChar>?
    /// The instance's slot (-1: a single feature, or an instance not yet made).
    var instance: Int32
}

/// The via callback's side of the dispatcher: what `become` stored, and the
/// borrowed text handed out during the callback.
struct ViaScratch {
    var became: JSONObject?
    var lastBecomeFailure: UniFlowError?
    var payloadText: UnsafeMutablePointer<CChar>?

    mutating func reset() {
        became = nil
        lastBecomeFailure = nil
        free(payloadText)
        payloadText = nil
    }
}

extension Dispatcher {
    /// Runs a via callback: after the precondition held (and the interceptors let
    /// the action through), before the mutation is built. Returns the payload it
    /// `become`s, if any.
    func runVia(_ callback: HostCallback<uf_via_fn>, action: ActionHeader, place: Place, current: Int32,
                given: JSONObject?) -> Result<JSONObject?, UniFlowError> {
        let target: Int32 = action.entersState ? action.into : -1
        var record = ViaContextRecord(dispatcher: UnsafeMutableRawPointer(handle), feature: action.feature,
                                      state: current, target: target, key: action.key, instance: place.instance)
        // A via may submit (queued), but never runs inside another via of this
        // dispatcher, so one scratch suffices; keep the caller's anyway for safety.
        let saved = scratch.via
        scratch.via = ViaScratch()
        defer {
            scratch.via.reset()
            scratch.via = saved
        }
        let result = withUnsafeMutablePointer(to: &record) { callback.function(OpaquePointer($0), callback.payload) }
        let name = subject(action)
        if result > 0 { return .failure(UniFlowError(.rejected, "\(name): the via callback declined the action")) }
        if result < 0 { return .failure(UniFlowError(.callback, "\(name): the via callback failed (returned \(result))")) }
        guard target >= 0 else { return .success(nil) }
        if let failure = scratch.via.lastBecomeFailure { return .failure(failure) }
        if let became = scratch.via.became { return .success(became) }
        // A statechart's payload sets only the fields it names: its macrostep checks the rest.
        if given == nil && !(charts.any && charts[action.feature] != nil) && !stateSlot(target, of: hot.features[Int(action.feature)]).isAuto {
            return .failure(UniFlowError(.rejected, "\(featureName(action.feature)).\(stateName(target, feature: action.feature)) has required fields and the via callback did not become a payload"))
        }
        return .success(nil)
    }

    /// `uf_context_become`: checks the payload against the state being entered.
    func become(_ record: ViaContextRecord, payload text: UnsafePointer<CChar>) throws(UniFlowError) {
        guard record.target >= 0 else {
            throw UniFlowError(.misuse, "uf_context_become is not allowed on a trigger or a deinitialization")
        }
        if charts.any, let table = charts[record.feature] { return try becomeStatechart(record, table: table, payload: text) }
        do throws(UniFlowError) {
            let json = try JSONParser.parse(text)
            guard let object = json.objectValue else {
                throw UniFlowError(.schema, "\(featureName(record.feature)).\(stateName(record.target, feature: record.feature)): payload must be an object, got \(json.jsonTypeName)")
            }
            scratch.via.became = try stateDefinition(record.target, of: record.feature)
                .checkPayload(object, feature: featureName(record.feature))
            scratch.via.lastBecomeFailure = nil
        } catch {
            scratch.via.lastBecomeFailure = error.status == .invalidJSON ? UniFlowError(.schema, error.message) : error
            throw error
        }
    }

    /// `uf_context_payload_json`: the current payload's text, kept until the callback returns.
    func contextPayloadText(_ record: ViaContextRecord) -> UnsafePointer<CChar>? {
        guard record.state >= 0 else { return nil }
        if let text = scratch.via.payloadText { return UnsafePointer(text) }
        let place = Place(feature: record.feature, instance: record.instance)
        scratch.via.payloadText = try? Memory.copy(JSONValue.object(payload(at: place)).jsonText, for: "a payload's text")
        return scratch.via.payloadText.map { UnsafePointer($0) }
    }
}
