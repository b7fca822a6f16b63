import CUniFlow
import Glibc

// The hot path: `uf_dispatch` of a payload-free, via-free initialize, transition or
// deinitialize whose kind no model binding of that feature watches, with no
// reporter and no journal.
// That is what a host does in a loop (a progress toggle, a state machine driven by
// events), so it runs without creating a `String`, allocating, retaining or
// building a `ResolvedAction`: names are looked up from the caller's C bytes, the
// precondition is checked on the flat `HotStorage`, and the mutation record lives
// on the stack (shared/FACTS.md measures what each of those costs).
//
// Anything unusual — a name that does not resolve, a precondition that fails, a
// payload to store or fill with defaults, bindings, reports, a journal — returns
// nil, and the caller takes the general path (resolve, process) under the same
// lock. That path decides every error message and report, so this one never has
// to: it only ever applies what the general path would have applied, the same way.

extension Dispatcher {
    /// Whether `uf_dispatch` may try the hot path: no payload, no via, not inside
    /// one of this dispatcher's callbacks (there, actions are queued).
    @inline(__always)
    func mayDispatchFast(_ a: UnsafePointer<uf_action>) -> Bool {
        if a.pointee.via != nil || a.pointee.payload_json != nil { return false }
        return !isProcessingOnCurrentThread
    }

    /// `uf_dispatch` with the dispatcher to itself: the hot path when it applies,
    /// otherwise the general one. Returns the status; a failure is recorded.
    @inline(__always)
    func dispatchLocked(_ a: UnsafePointer<uf_action>) -> Int32 {
        if dispatchFast(a) { return Status.ok.rawValue }
        do throws(UniFlowError) {
            let action = try resolve(a.pointee)
            if let failure = process(action) { return fail(failure) }
            return Status.ok.rawValue
        } catch {
            return fail(error)
        }
    }

    /// Applies the action and notifies the subscribers if it is a hot-path action
    /// whose precondition holds; returns false, having changed nothing, otherwise.
    @inline(__always)
    private func dispatchFast(_ pointer: UnsafePointer<uf_action>) -> Bool {
        // Read in place: the caller's struct stays put for the whole call.
        let a = pointer.pointee
        let kind: ActionKind
        switch a.kind {
        case UF_ACTION_TRANSITION: kind = .transition
        case UF_ACTION_INITIALIZE: kind = .initialize
        case UF_ACTION_DEINITIALIZE: kind = .deinitialize
        default: return false
        }
        guard let featureName = a.feature, a.uninitialized == 0, !hot.journaling, !reportingActive else { return false }
        let feature = hot.findFeature(featureName)
        guard feature >= 0 else { return false }
        let slot = hot.features.pointer(Int(feature))
        // Bindings that watch this kind of mutation of this feature need the general path.
        let mutationKind: uf_mutation_kind
        switch kind {
        case .initialize: mutationKind = UF_MUTATION_INITIALIZATION
        case .transition: mutationKind = UF_MUTATION_TRANSITION
        default: mutationKind = UF_MUTATION_DEINITIALIZATION
        }
        let kindBit: UInt8 = 1 << UInt8(truncatingIfNeeded: mutationKind.rawValue)
        guard (slot.pointee.bindingKinds | hot.anyBindingKinds) & kindBit == 0, !slot.pointee.hasPayload else { return false }

        var header = ActionHeader(kind: kind, feature: feature)
        if let from = a.from {
            if kind == .initialize { return false }
            header.from = hot.findState(from, of: feature)
            guard header.from >= 0 else { return false }
        }
        if let into = a.into {
            if kind == .deinitialize { return false }
            header.into = hot.findState(into, of: feature)
            guard header.into >= 0, !stateSlot(header.into, of: slot.pointee).hasFields else { return false }
        } else if kind != .deinitialize {
            return false
        }
        if a.same != 0 {
            if kind != .transition || header.from >= 0 { return false }
            header.same = true
        }

        let current = slot.pointee.state
        switch kind {
        case .initialize:
            guard current < 0, stateSlot(header.into, of: slot.pointee).isInitial else { return false }
        case .transition:
            if header.from >= 0 {
                guard current == header.from else { return false }
            } else {
                guard current >= 0, current != header.into || header.same else { return false }
            }
            guard hot.allowsTransition(slot.pointee, from: current, into: header.into) else { return false }
        default:
            guard current >= 0, header.from < 0 || current == header.from else { return false }
        }

        // The precondition holds: apply, then notify.
        header.scope = a.scope
        header.context = a.context
        header.id = a.id
        cascade.processed += 1
        let newState = kind == .deinitialize ? -1 : header.into
        slot.pointee.state = newState
        seq &+= 1
        var record = MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: seq,
                                    kind: Int32(mutationKind.rawValue), feature: feature,
                                    oldState: current, newState: newState)
        delivery.action = header
        deliver(&record)
        delivery.reset()
        return true
    }
}
