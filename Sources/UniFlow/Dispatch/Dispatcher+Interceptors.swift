import CUniFlow
import Glibc

/// An interceptor (`uf_intercept`): sees each action about to be applied.
struct InterceptorSlot {
    var id: UInt64
    var callback: HostCallback<uf_interceptor_fn>
    /// -1: every feature.
    var feature: Int32
    var alive = true
    /// Its callback is on the stack: ending it now must defer `payload_free`.
    var running = false
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
    var action: ActionHeader?
    var payload: JSONObject?
    var jsonText: UnsafeMutablePointer<CChar>?
    /// What the interceptor gave `uf_intercepted_set_reason`.
    var reason: String?

    mutating func reset() {
        action = nil
        payload = nil
        free(jsonText)
        jsonText = nil
        reason = nil
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
        updateInterceptionFlags()
        return id
    }

    /// Ends an interceptor; its `payload_free` runs now, or when its callback returns.
    func endInterceptor(_ index: Int) {
        registrations.interceptors[index].alive = false
        registrations.interceptorsEnded = true
        registrations.byID[registrations.interceptors[index].id] = nil
        if !registrations.interceptors[index].running { registrations.interceptors[index].callback.release() }
        updateInterceptionFlags()
    }

    /// Which features an interceptor sees, for the quick test on every action.
    private func updateInterceptionFlags() {
        for f in 0..<hot.features.count { hot.features.pointer(f).pointee.intercepted = false }
        hot.interceptingAll = false
        for slot in registrations.interceptors where slot.alive {
            if slot.feature < 0 { hot.interceptingAll = true } else { hot.features.pointer(Int(slot.feature)).pointee.intercepted = true }
        }
    }

    /// Calls the interceptors of the action's feature; the first veto or failure
    /// ends it. `current` is the state at the action's place.
    func intercept(_ action: ActionHeader, current: Int32, payload: JSONObject?) -> UniFlowError? {
        // Only a nested call (an interceptor of another action running) has a
        // scratch to keep: the common case copies nothing.
        var saved: InterceptScratch? = nil
        if scratch.intercepted.action != nil { saved = scratch.intercepted }
        scratch.intercepted.action = action
        scratch.intercepted.payload = payload
        defer {
            scratch.intercepted.reset()
            if let saved { scratch.intercepted = saved }
        }
        let state: Int32
        switch action.kind {
        case .initialize, .actualize, .transition, .send: state = action.into
        case .deinitialize, .trigger: state = current
        }
        var record = InterceptedRecord(dispatcher: UnsafeMutableRawPointer(handle), id: 0, kind: action.kind,
                                       feature: action.feature, state: state, key: action.key)
        // Interceptors added while this runs have higher ids and wait for the next action.
        let limit = registrations.nextID
        var i = 0
        while i < registrations.interceptors.count {
            let index = i
            i += 1
            // Fields read one by one: copying the slot would retain its callback.
            let id = registrations.interceptors[index].id
            let feature = registrations.interceptors[index].feature
            guard registrations.interceptors[index].alive, id < limit, feature < 0 || feature == action.feature else { continue }
            record.id = id
            scratch.intercepted.reason = nil
            registrations.interceptors[index].running = true
            let function = registrations.interceptors[index].callback.function
            let context = registrations.interceptors[index].callback.payload
            let result = withUnsafeMutablePointer(to: &record) { function(OpaquePointer($0), context) }
            registrations.interceptors[index].running = false
            if !registrations.interceptors[index].alive {
                // Ended from inside its own callback: release it now that it returned.
                registrations.interceptors[index].callback.release()
                registrations.interceptorsEnded = true
            }
            if result > 0 {
                return UniFlowError(.rejected, scratch.intercepted.reason ?? "intercepted by \(id)")
            }
            if result < 0 {
                return UniFlowError(.callback, "\(subject(action)): interceptor \(id) failed (returned \(result))")
            }
        }
        if registrations.interceptorsEnded { compactInterceptors() }
        return nil
    }

    /// Drops ended interceptors from the list once none of them is running.
    private func compactInterceptors() {
        guard !registrations.interceptors.contains(where: { $0.running }) else { return }
        registrations.interceptors.removeAll { !$0.alive }
        for (i, slot) in registrations.interceptors.enumerated() { registrations.byID[slot.id] = .interceptor(i) }
        registrations.interceptorsEnded = false
    }

    /// `uf_intercepted_json`: the action as JSON, made on first request.
    func interceptedText() -> UnsafePointer<CChar>? {
        if scratch.intercepted.jsonText == nil, let action = scratch.intercepted.action {
            var object = actionDescription(action)
            if let payload = scratch.intercepted.payload { object["payload"] = .object(payload) }
            scratch.intercepted.jsonText = try? Memory.copy(JSONValue.object(object).jsonText, for: "an action's text")
        }
        return scratch.intercepted.jsonText.map { UnsafePointer($0) }
    }
}
