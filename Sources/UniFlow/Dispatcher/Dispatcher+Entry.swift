import CUniFlow

/// The one way in for actions: every submit of the C API comes here, and these
/// choose between the hot path and the general one.
extension Dispatcher {
    /// `uf_dispatch` and `uf_dispatch_try`. `action` is a whole struct of this
    /// library's size (the C layer widens an older caller's). Returns the status;
    /// a failure is recorded.
    @inline(__always)
    func dispatch(_ action: UnsafePointer<uf_action>, waiting: Bool) -> Int32 {
        // Most calls: no via to release, not queued. See Dispatcher+HotPath.swift.
        // `mayDispatchFast` found this thread outside the dispatcher's callbacks, so
        // the lock is taken without asking `exclusive`'s question again.
        if mayDispatchFast(action) {
            return exclusiveFromOutside(waiting: waiting) {
                dispatchLocked(action) { () throws(UniFlowError) in try resolve(try DecodedAction(action.pointee), hasVia: false) }
            } ?? Status.busy.rawValue
        }
        return submit(action, waiting: waiting)
    }

    /// `dispatch`'s other calls: a via, a payload, or from inside a callback.
    /// Out of line, so that its frame and registers are not the hot path's.
    @inline(never)
    private func submit(_ action: UnsafePointer<uf_action>, waiting: Bool) -> Int32 {
        // Copied once: what is queued outlives the caller's struct.
        let a = action.pointee
        let via = a.via.map { HostCallback($0, payload: a.via_payload, payloadFree: a.via_payload_free) }
        do throws(UniFlowError) {
            return try submit(via: via, waiting: waiting) { () throws(UniFlowError) in
                try resolve(try DecodedAction(a), hasVia: via != nil)
            }.rawValue
        } catch {
            return fail(error)
        }
    }

    /// `uf_submit` and `uf_submit_via`: an action as JSON text. The action is read
    /// straight from jansson's tree, which lives until the action is processed or
    /// queued; one without payload, via or submit list takes `uf_dispatch`'s path.
    func submit(json text: UnsafePointer<CChar>, via: HostCallback<uf_via_fn>?) -> Int32 {
        var submitted = false
        do throws(UniFlowError) {
            return try JSONParser.withTree(text) { (root) throws(UniFlowError) -> Int32 in
                let request = try BorrowedAction.decode(JanssonValue(root))
                submitted = true
                if via == nil, var a = request.plainAction, withUnsafePointer(to: &a, mayDispatchFast) {
                    return withUnsafePointer(to: &a) { (a) -> Int32 in
                        exclusive { dispatchLocked(a) { () throws(UniFlowError) in try resolve(request, hasVia: false) } }
                    }
                }
                return try submit(via: via) { () throws(UniFlowError) in
                    try resolve(request, hasVia: via != nil)
                }.rawValue
            }
        } catch {
            // Once submitted, `submit` has released the via whatever happened.
            if !submitted, var via { via.release() }
            return fail(error)
        }
    }
}

extension DecodedAction where Source == JanssonValue {
    /// The same action as a `uf_action` with borrowed strings, when it is one that
    /// needs nothing else: no payload and no `submit` list, and strings without
    /// NUL (a C string would end there).
    var plainAction: uf_action? {
        guard payload == nil, submit.isEmpty, let feature = feature.cName else { return nil }
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = kind.cKind
        a.feature = feature
        var plain = true
        withUnsafeMutableBytes(of: &a) { raw in
            for member in ActionField.structInputTexts {
                guard let text = self[slot: member.slot] else { continue }
                if member.isLabel {
                    // Labels keep what C sees of them: a NUL ends them, as it did before.
                    raw.storeBytes(of: text.pointer, toByteOffset: member.offset, as: UnsafePointer<CChar>.self)
                } else if let name = text.cName {
                    raw.storeBytes(of: name, toByteOffset: member.offset, as: UnsafePointer<CChar>.self)
                } else {
                    plain = false
                }
            }
            for member in ActionField.structFlags where flags & member.field.bit != 0 {
                raw.storeBytes(of: 1, toByteOffset: member.offset, as: Int32.self)
            }
        }
        return plain ? a : nil
    }
}
