import CUniFlow
import Glibc

/// An interceptor (`uf_intercept`): sees each action about to be applied.
struct InterceptorSlot {
    var id: UInt64
    var callback: HostCallback<uf_interceptor_fn>
    /// -1: every feature.
    var feature: Int32
    var alive = true
}

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

/// Interceptors (`docs/watches-and-interceptors.md`): called, in registration order,
/// for each action whose precondition holds (and, for a send, once its target is
/// chosen), before its via; wherever it came from. A veto rejects the action.
extension Dispatcher {
    @inline(__always)
    func interceptorsApply(to feature: Int32) -> Bool {
        hot.interceptingAll || hot.features[Int(feature)].intercepted
    }

    func addInterceptor(feature: Int32, _ callback: HostCallback<uf_interceptor_fn>) throws(UniFlowError) -> UInt64 {
        try refuseWhileClosing("uf_intercept")
        let id = registrations.makeID()
        registrations.byID[id] = .interceptor(registrations.interceptors.count)
        registrations.interceptors.append(InterceptorSlot(id: id, callback: callback, feature: feature))
        registrations.interceptorCounts[feature, default: 0] += 1
        setInterceptionFlag(of: feature, true)
        return id
    }

    /// Ends an interceptor; its `payload_free` runs now, or when its callback returns.
    func endInterceptor(_ index: Int) {
        let feature = registrations.interceptors[index].feature
        registrations.interceptors[index].alive = false
        registrations.interceptorsEnded += 1
        registrations.byID[registrations.interceptors[index].id] = nil
        registrations.interceptorCounts[feature]! -= 1
        if registrations.interceptorCounts[feature] == 0 {
            registrations.interceptorCounts[feature] = nil
            setInterceptionFlag(of: feature, false)
        }
        if !scratch.intercepted.isRunning(registrations.interceptors[index].id) {
            let release = registrations.interceptors[index].callback.takeRelease()
            release.run()
        }
        // Without waiting for the next action, which a host that adds and ends
        // them without acting would grow the list for; once the ended are half
        // of it, so that each end pays a constant share of the compaction.
        if registrations.interceptorsEnded * 2 >= registrations.interceptors.count {
            compactInterceptors()
        }
    }

    /// Whether any interceptor sees the feature (or, for -1, every feature): the
    /// quick test on every action.
    private func setInterceptionFlag(of feature: Int32, _ on: Bool) {
        if feature < 0 { hot.interceptingAll = on } else { hot.features.pointer(Int(feature)).pointee.intercepted = on }
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
        let limit = registrations.nextID
        var failure: UniFlowError? = nil
        registrations.interceptorWalks &+= 1
        var i = 0
        while i < registrations.interceptors.count {
            let index = i
            i += 1
            // Fields read one by one: copying the slot would retain its callback.
            let id = registrations.interceptors[index].id
            let slotFeature = registrations.interceptors[index].feature
            guard registrations.interceptors[index].alive, id < limit, slotFeature < 0 || slotFeature == feature else { continue }
            record.id = id
            // Cleared only when an interceptor before it set one and let the action pass.
            if scratch.intercepted.reason != nil { scratch.intercepted.reason = nil }
            let function = registrations.interceptors[index].callback.function
            let context = registrations.interceptors[index].callback.payload
            scratch.intercepted.running = id
            let result = withUnsafeMutablePointer(to: &record) { function(OpaquePointer($0), context) }
            scratch.intercepted.running = 0
            if !registrations.interceptors[index].alive {
                // Ended from inside its own callback: release it now that it returned.
                let release = registrations.interceptors[index].callback.takeRelease()
                release.run()
            }
            if result != 0 {
                failure = interceptorFailure(result, of: id)
                break
            }
        }
        registrations.interceptorWalks &-= 1
        // The walk cost as much as compacting: any ended slot goes now.
        if registrations.interceptorsEnded > 0 { compactInterceptors() }
        return failure
    }

    /// A veto (`result` > 0) or a failure (< 0): out of line, so that the walk
    /// keeps its values in registers instead of a frame sized for the messages.
    @inline(never)
    private func interceptorFailure(_ result: Int32, of id: UInt64) -> UniFlowError {
        if result > 0 { return UniFlowError(.rejected, scratch.intercepted.reason ?? "intercepted by \(id)") }
        return UniFlowError(.callback, "\(subject(scratch.intercepted.header!)): interceptor \(id) failed (returned \(result))")
    }

    /// Drops ended interceptors from the list, unless a loop walks it (an
    /// interceptor's callback or `payload_free` may end others; a running
    /// interceptor's callback is always inside such a loop).
    private func compactInterceptors() {
        guard registrations.interceptorWalks == 0 else { return }
        registrations.interceptors.removeAll { !$0.alive }
        for (i, slot) in registrations.interceptors.enumerated() { registrations.byID[slot.id] = .interceptor(i) }
        registrations.interceptorsEnded = 0
    }

    /// `uf_intercepted_json`: the action as JSON, made on first request.
    func interceptedText() -> UnsafePointer<CChar>? {
        if scratch.intercepted.jsonText == nil, let action = scratch.intercepted.header {
            var object = actionDescription(action)
            if let payload = scratch.intercepted.payload { object["payload"] = .object(payload) }
            scratch.intercepted.jsonText = try? Memory.copy(JSONValue.object(object).jsonText, for: "an action's text")
        }
        return scratch.intercepted.jsonText.map { UnsafePointer($0) }
    }
}
