import CUniFlow
import Glibc

/// What `uf_intercepted *` points to: a record on the processing thread's stack.
struct InterceptedRecord {
    var dispatcher: UnsafeMutableRawPointer
    /// The interceptor being called.
    var id: UInt64
    var kind: ActionKind
    var feature: Int32
    /// The state entered or acted in, or -1.
    var state: Int32
    var key: UnsafePointer<CChar>?
}

/// The intercepted action's other parts, and text handed out (valid until the
/// interceptor returns).
struct InterceptScratch {
    /// An interceptor is running (a nested call must keep this scratch).
    var active = false
    /// The action: its header and payload, or the hot path's action, whose header
    /// is made only if an interceptor asks for the JSON or the action fails (most
    /// read the kind, feature and key alone).
    var action: ActionHeader?
    var payload: JSONObject?
    var hot: HotAction?
    var jsonText: UnsafeMutablePointer<CChar>?
    /// What the interceptor gave `uf_intercepted_set_reason`.
    var reason: String?
    /// The id of the interceptor whose callback is on the stack (0: none), and
    /// those of the interceptions this one is nested in: ending one of them must
    /// defer its `payload_free`. Kept here, not as a flag in its slot, because
    /// writing the slot costs the array's uniqueness check twice per call.
    var running: UInt64 = 0
    var outerRunning: [UInt64] = []

    func isRunning(_ id: UInt64) -> Bool { id == running || outerRunning.contains(id) }

    var header: ActionHeader? { action ?? hot?.header }

    /// `uf_intercepted_json`: the action as JSON (`describe` gives its fields,
    /// the payload is added when it carried one), made on first request.
    mutating func text(_ describe: (ActionHeader) -> JSONObject) -> UnsafePointer<CChar>? {
        if jsonText == nil, let action = header {
            var object = describe(action)
            if let payload { object["payload"] = .object(payload) }
            jsonText = try? Memory.copy(JSONValue.object(object).jsonText, for: "an action's text")
        }
        return jsonText.map { UnsafePointer($0) }
    }

    mutating func reset() {
        active = false
        if action != nil { action = nil }
        if payload != nil { payload = nil }
        hot = nil
        if let text = jsonText {
            free(text)
            jsonText = nil
        }
        if reason != nil { reason = nil }
    }

    /// `reset()` after the hot path's interception, which set no header or payload.
    @inline(__always)
    mutating func resetHot() {
        active = false
        hot = nil
        if let text = jsonText {
            free(text)
            jsonText = nil
        }
        if reason != nil { reason = nil }
    }
}

extension Dispatcher: InterceptorContext {
    func setInterceptionFlag(of feature: Int32, _ on: Bool) {
        if feature < 0 { hot.interceptingAll = on } else { hot.features.pointer(Int(feature)).pointee.intercepted = on }
    }
}

/// The dispatcher's side of the interceptors (`InterceptorChain`,
/// `docs/watches-and-interceptors.md`): called, in registration order, for each
/// action whose precondition holds (and, for a send, once its target is
/// chosen), before its via; wherever it came from. A veto rejects the action.
///
/// The calls are here, not in the chain: an interceptor's callback and
/// `payload_free` are the host's code, which may end interceptors (its own
/// included) or add some, modifying the chain again. So no call runs inside a
/// modifying access to `interceptors`: the walk goes by index, reads a slot's
/// fields one by one before each call and its `alive` again after it, and the
/// chain's changes are short accesses between calls.
extension Dispatcher {
    @inline(__always)
    func interceptorsApply(to feature: Int32) -> Bool {
        hot.interceptingAll || hot.features[Int(feature)].intercepted
    }

    func addInterceptor(feature: Int32, _ callback: HostCallback<uf_interceptor_fn>) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing("uf_intercept")
        return interceptors.add(feature: feature, callback, ids: &registrationIDs, self)
    }

    /// Ends an interceptor; its `payload_free` runs now, or when its callback returns.
    func endInterceptor(_ index: Int) {
        let id = interceptors.markEnded(index, ids: &registrationIDs, self)
        if !scratch.intercepted.isRunning(id) { interceptors.takeRelease(index).run() }
        interceptors.compactIfHalfEnded(ids: &registrationIDs)
    }

    /// `uf_dispatcher_free`: every interceptor's `payload_free`, each run outside the chain.
    func releaseInterceptors() {
        interceptors.walks += 1
        for i in interceptors.slots.indices where interceptors.slots[i].alive { interceptors.close(i).run() }
        interceptors.walks -= 1
    }

    /// Calls the interceptors of the action's feature; the first veto or failure
    /// ends it. `current` is the state at the action's place.
    func intercept(_ action: ActionHeader, current: Int32, payload: JSONObject?) -> UniFlowError? {
        if scratch.intercepted.active { return nested { intercept(action, current: current, payload: payload) } }
        scratch.intercepted.active = true
        scratch.intercepted.action = action
        // Shown only when the action carried one, not when only defaults fill it.
        scratch.intercepted.payload = action.carriesPayload ? payload : nil
        let failure = runInterceptors(kind: action.kind, feature: action.feature, into: action.into, key: action.key,
                                      current: current)
        scratch.intercepted.reset()
        return failure
    }

    /// The hot path's action, intercepted without making its header.
    func intercept(hot action: HotAction, current: Int32) -> UniFlowError? {
        if scratch.intercepted.active { return nested { intercept(hot: action, current: current) } }
        scratch.intercepted.active = true
        scratch.intercepted.hot = action
        let failure = runInterceptors(kind: action.kind, feature: action.feature, into: action.into,
                                      key: action.action.pointee.key, current: current)
        scratch.intercepted.resetHot()
        return failure
    }

    /// Interception inside an interceptor's call (none of the API's calls leads
    /// there today: what a callback submits is queued): the outer scratch is kept
    /// aside, out of the common path.
    @inline(never)
    private func nested(_ body: () -> UniFlowError?) -> UniFlowError? {
        let saved = scratch.intercepted
        scratch.intercepted = InterceptScratch()
        scratch.intercepted.outerRunning = saved.outerRunning + [saved.running]
        let failure = body()
        scratch.intercepted = saved
        return failure
    }

    private func runInterceptors(kind: ActionKind, feature: Int32, into: Int32, key: UnsafePointer<CChar>?,
                                 current: Int32) -> UniFlowError? {
        let state: Int32
        switch kind {
        case .initialize, .actualize, .transition, .send: state = into
        case .deinitialize, .trigger: state = current
        }
        var record = InterceptedRecord(dispatcher: UnsafeMutableRawPointer(handle), id: 0, kind: kind,
                                       feature: feature, state: state, key: key)
        // Interceptors added while this runs have higher ids and wait for the next action.
        let limit = registrationIDs.next
        var failure: UniFlowError? = nil
        interceptors.walks &+= 1
        var i = 0
        while i < interceptors.slots.count {
            let index = i
            i += 1
            // Fields read one by one: copying the slot would retain its callback.
            let id = interceptors.slots[index].id
            let slotFeature = interceptors.slots[index].feature
            guard interceptors.slots[index].alive, id < limit, slotFeature < 0 || slotFeature == feature else { continue }
            record.id = id
            // Cleared only when an interceptor before it set one and let the action pass.
            if scratch.intercepted.reason != nil { scratch.intercepted.reason = nil }
            let function = interceptors.slots[index].callback.function
            let context = interceptors.slots[index].callback.payload
            scratch.intercepted.running = id
            let result = withUnsafeMutablePointer(to: &record) { function(OpaquePointer($0), context) }
            scratch.intercepted.running = 0
            if !interceptors.slots[index].alive {
                // Ended from inside its own callback: release it now that it returned.
                releaseEnded(interceptor: index)
            }
            if result != 0 {
                failure = interceptorFailure(result, of: id)
                break
            }
        }
        interceptors.walks &-= 1
        // The walk cost as much as compacting: any ended slot goes now.
        if interceptors.ended > 0 { compactInterceptors() }
        return failure
    }

    // Out of line, as the other changes to the chain the walk may make: inlined,
    // they made it keep the chain's address on every interception.

    /// Runs the `payload_free` of an interceptor ended while its callback ran.
    @inline(never)
    private func releaseEnded(interceptor index: Int) {
        interceptors.takeRelease(index).run()
    }

    @inline(never)
    private func compactInterceptors() {
        interceptors.compact(ids: &registrationIDs)
    }

    /// A veto (`result` > 0) or a failure (< 0): out of line, so that the walk
    /// keeps its values in registers instead of a frame sized for the messages.
    @inline(never)
    private func interceptorFailure(_ result: Int32, of id: UInt64) -> UniFlowError {
        if result > 0 { return UniFlowError(.rejected, scratch.intercepted.reason ?? "intercepted by \(id)") }
        return UniFlowError(.callback, "\(subject(scratch.intercepted.header!)): interceptor \(id) failed (returned \(result))")
    }
}
