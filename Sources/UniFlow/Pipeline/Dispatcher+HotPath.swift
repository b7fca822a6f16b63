import CUniFlow
import Glibc

// The hot path: `uf_dispatch` of a payload-free, via-free transition, send (to an
// unguarded target), or initialize or deinitialize of a single feature, whose
// kind no model binding of that feature watches, with no reporter and no journal.
// That is what a host does in a loop (a progress toggle, a state machine driven by
// events), so it runs without creating a `String`, allocating, retaining or
// building a `ResolvedAction`: names and keys are looked up from the caller's C
// bytes, the precondition is checked on the flat `HotStorage`, and the mutation
// record lives on the stack. (bench/README.md measures what each of those costs.)
//
// Anything unusual — a name that does not resolve, a precondition that fails, a
// payload to store or fill with defaults, a guard to evaluate, bindings, reports, a
// journal — returns nil before anything happened, and the caller takes the general
// path (resolve, process) under the same lock. That path decides every error
// message and report, so this one never has to: it only ever applies what the
// general path would have applied, the same way (HotPathTests compares the two).
// Interceptors, state timers and watches are served here as the general path
// serves them.

extension Dispatcher {
    /// Whether `uf_dispatch` may try the hot path: no payload, no via, not inside
    /// one of this dispatcher's callbacks (there, actions are queued).
    @inline(__always)
    func mayDispatchFast(_ a: UnsafePointer<uf_action>) -> Bool {
        // This order lets the compiler test each field in memory (one instruction
        // fewer than loading `via` first, which it did the other way round).
        if a.pointee.payload_json != nil || a.pointee.via != nil { return false }
        return !isProcessingOnCurrentThread
    }

    /// An action with the dispatcher to itself: the hot path when it applies,
    /// otherwise `general`, which resolves the action from its source and
    /// processes it. Returns the status; a failure is recorded.
    @inline(__always)
    func dispatchLocked(_ a: UnsafePointer<uf_action>, otherwise general: () throws(UniFlowError) -> ResolvedAction) -> Int32 {
        if let status = dispatchFast(a) { return status }
        // A statechart's plain sends (Statecharts/Dispatcher+StatechartFastPath.swift).
        if charts.any, let status = dispatchStatechartFast(a) { return status }
        do throws(UniFlowError) {
            if let failure = process(try general()) { return fail(failure) }
            return Status.ok.rawValue
        } catch {
            return fail(error)
        }
    }

    /// Applies the action and notifies the subscribers if it is a hot-path action
    /// whose precondition holds, and returns its status (an interceptor may veto
    /// it); returns nil, having changed nothing, otherwise.
    @inline(__always)
    private func dispatchFast(_ pointer: UnsafePointer<uf_action>) -> Int32? {
        // Transitions and sends are what a loop dispatches: their copies are laid
        // out inline, the other kinds' are a call away.
        switch pointer.pointee.kind {
        case UF_ACTION_TRANSITION: return dispatchFast(pointer, as: HotTransition.self)
        case UF_ACTION_SEND: return dispatchFast(pointer, as: HotSend.self)
        default: return dispatchFastOtherKind(pointer)
        }
    }

    @inline(never)
    private func dispatchFastOtherKind(_ pointer: UnsafePointer<uf_action>) -> Int32? {
        switch pointer.pointee.kind {
        case UF_ACTION_INITIALIZE: return dispatchFast(pointer, as: HotInitialize.self)
        case UF_ACTION_DEINITIALIZE: return dispatchFast(pointer, as: HotDeinitialize.self)
        default: return nil
        }
    }

    /// The body, one specialized copy per kind of action (`Kind` is a type so that
    /// the compiler makes the copies): each folds the tests of its kind away,
    /// which takes about 60 instructions out of a transition.
    @inline(__always)
    private func dispatchFast<Kind: HotPathKind>(_ pointer: UnsafePointer<uf_action>, as _: Kind.Type) -> Int32? {
        // Read in place, field by field (a copy of the whole struct costs more than
        // the fields a toggle reads): the caller's struct stays put for the whole
        // call. Only scalars are kept on the way; an `ActionHeader` is made only
        // for an interceptor, and the delivery points at the caller's struct.
        // Not driven by `ActionField`'s table, on purpose: a loop over the table
        // here would cost every call. The members read are the few this path
        // serves; any other field is carried along (`HotAction.header` follows
        // the table; `lendsTexts` is checked against it by ActionFieldTableTests),
        // and a field that changes what an action does must be refused here
        // (then the general path takes it).
        let a = pointer
        let kind = Kind.kind
        guard let featureName = a.pointee.feature, a.pointee.uninitialized == 0, !hot.journaling, !hot.partitioned, !reportingActive else { return nil }
        let feature = hotFeature(featureName)
        guard feature >= 0 else { return nil }
        let slot = hot.features.pointer(Int(feature))

        // Where it acts: the feature, or the live instance its key names.
        let table = slot.pointee.instances
        let current: Int32
        var instanceList: Int32 = -1
        var key: UnsafePointer<CChar>? = nil
        var timers: Int32
        // The instance's slot, read field by field and written once the
        // precondition holds: nothing that could move it runs before, unless an
        // interceptor runs. Its index is only worked out when needed.
        var instanceSlot: UnsafeMutablePointer<InstanceSlot>? = nil
        if table >= 0 {
            guard let given = a.pointee.key, kind == .transition || kind == .send else { return nil }
            let instances = hot.instanceTables.pointer(Int(table))
            guard let found = instances.pointee.findRemembering(given), !found.pointee.hasPayload else { return nil }
            instanceSlot = found
            current = found.pointee.state
            instanceList = found.pointee.subscribers
            key = UnsafePointer(found.pointee.key)
            timers = found.pointee.timers
        } else {
            guard a.pointee.key == nil, !slot.pointee.hasPayload else { return nil }
            current = slot.pointee.state
            timers = slot.pointee.timers
        }

        var from: Int32 = -1
        var into: Int32 = -1
        var event: Int32 = -1
        var actualizes = false
        if kind == .send {
            guard let name = a.pointee.event, a.pointee.from == nil, a.pointee.into == nil, a.pointee.same == 0, current >= 0 else { return nil }
            event = hotEvent(name, of: feature)
            let taken = sendTarget(event, feature: feature, slot: slot, current: current)
            guard taken >= 0 else { return nil }
            let target = hot.eventTargets[Int(taken)]
            into = target.into
            actualizes = target.actualize && target.into == current
        } else {
            guard a.pointee.event == nil else { return nil }
            if let name = a.pointee.from {
                if kind == .initialize { return nil }
                from = hotState(name, of: feature)
                guard from >= 0 else { return nil }
            }
            if let name = a.pointee.into {
                if kind == .deinitialize { return nil }
                into = hotState(name, of: feature)
                guard into >= 0 else { return nil }
            } else if kind != .deinitialize {
                return nil
            }
            if a.pointee.same != 0 && (kind != .transition || from >= 0) { return nil }
        }
        // (A send's target was checked for fields at registration.)
        if kind != .send && into >= 0 && stateSlot(into, of: slot.pointee).hasFields { return nil }

        let mutationKind: MutationKind
        switch kind {
        case .initialize:
            guard current < 0, stateSlot(into, of: slot.pointee).isInitial else { return nil }
            mutationKind = .initialization
        case .transition:
            if from >= 0 {
                guard current == from else { return nil }
            } else {
                guard current >= 0, current != into || a.pointee.same != 0 else { return nil }
            }
            guard hot.allowsTransition(slot.pointee, from: current, into: into) else { return nil }
            mutationKind = .transition
        case .send:
            mutationKind = actualizes ? .actualization : .transition
        default:
            guard current >= 0, from < 0 || current == from else { return nil }
            mutationKind = .deinitialization
        }
        // Bindings that watch this kind of mutation of this feature need the general path.
        guard (slot.pointee.bindingKinds | hot.anyBindingKinds) & mutationKind.bit == 0 else { return nil }

        // The precondition holds: interceptors, then apply, then notify.
        cascade.processed &+= 1
        let action = HotAction(action: pointer, kind: kind, feature: feature, from: from, into: into, event: event)
        if slot.pointee.intercepted || hot.interceptingAll {
            let instance = instanceSlot.map { hot.instanceTables[Int(table)].index(of: $0) }
            if let failure = intercept(hot: action, current: current) { return fail(failure) }
            // It may have ended the instance's F[key] list (which another key may
            // then have taken) or made one: read again, as the general path does.
            if let instance {
                instanceSlot = hot.instanceTables[Int(table)].slots.pointer(Int(instance))
                instanceList = instanceSlot.unsafelyUnwrapped.pointee.subscribers
            }
        }
        // An interceptor may have registered or subscribed, which can move the tables.
        let applied = hot.features.pointer(Int(feature))
        let newState = mutationKind == .deinitialization ? -1 : into
        if let instanceSlot {
            instanceSlot.pointee.state = newState
        } else {
            applied.pointee.state = newState
        }
        model.seq &+= 1
        var record = MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: model.seq, kind: mutationKind,
                                    feature: feature, oldState: current, newState: newState, key: key)
        if applied.pointee.watched || hot.watchingAll {
            // Payload-free before and after: unless it began or ended, only its state changed.
            noteChange(of: feature, stateOnly: current >= 0 && newState >= 0)
        }
        // Timers armed or parked here, or the new state's to arm.
        if timers != -1 || (newState >= 0 && stateSlot(newState, of: applied.pointee).hasTimers) {
            let instance = instanceSlot.map { hot.instanceTables[Int(table)].index(of: $0) } ?? -1
            stateChanged(at: Place(feature: feature, instance: instance), kind: mutationKind, into: newState, field: timers)
        }
        scratch.delivery.hotAction = action
        deliver(&record, instanceList: instanceList, subscribedBefore: registrationIDs.next, charts: false)
        scratch.delivery.resetHot()
        return Status.ok.rawValue
    }

    // Names the caller passed before are recalled inline; the rest is a call to
    // a method of the dispatcher, not of the name table: a method's receiver
    // travels in one register, and a call with another receiver (even on a
    // branch never taken) made the compiler keep the dispatcher on the stack
    // for the whole hot path.
    @inline(__always)
    private func hotFeature(_ name: UnsafePointer<CChar>) -> Int32 {
        let known = hot.names.recall(name, scope: -1)
        return known >= 0 ? known : featureNotRecalled(name)
    }

    @inline(never)
    private func featureNotRecalled(_ name: UnsafePointer<CChar>) -> Int32 {
        hot.findFeature(name)
    }

    @inline(__always)
    private func hotState(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        // Both ways of finding a state remember it in the feature's scope.
        let known = hot.names.recall(name, scope: feature)
        return known >= 0 ? known : stateNotRecalled(name, of: feature)
    }

    @inline(never)
    private func stateNotRecalled(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        hot.findState(name, of: feature)
    }

    @inline(__always)
    private func hotEvent(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        let known = hot.names.recall(name, scope: HotStorage.eventScope(feature))
        return known >= 0 ? known : eventNotRecalled(name, of: feature)
    }

    @inline(never)
    private func eventNotRecalled(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        hot.findEvent(name, of: feature)
    }

    /// The index in `eventTargets` of the target a send takes, when the hot path
    /// can take it (`HotStorage.walkHotTarget`), or -1: read from the state's or
    /// the feature's event list, where registration put it.
    /// (The slot is read through its pointer: passed by value, the whole slot was
    /// copied to the stack.)
    @inline(__always)
    private func sendTarget(_ event: Int32, feature: Int32, slot: UnsafeMutablePointer<FeatureSlot>, current: Int32) -> Int32 {
        let stateList = hot.states[Int(slot.pointee.stateBase) &+ Int(current)].events
        let taken = hot.hotTarget(of: event, stateList: stateList, featureList: slot.pointee.events)
        return taken != HotStorage.walkedHotTarget ? taken : sendTargetWalked(event, feature: feature, current: current)
    }

    /// A feature-level event of a feature that declares transitions: the targets
    /// walked for the current state.
    @inline(never)
    private func sendTargetWalked(_ event: Int32, feature: Int32, current: Int32) -> Int32 {
        let slot = hot.features[Int(feature)]
        return hot.walkHotTarget(event, stateList: stateSlot(current, of: slot).events, feature: slot, current: current)
    }
}

/// An action kind the hot path serves, as a type (see `dispatchFast(_:as:)`).
protocol HotPathKind { static var kind: ActionKind { get } }
enum HotTransition: HotPathKind { static var kind: ActionKind { .transition } }
enum HotSend: HotPathKind { static var kind: ActionKind { .send } }
enum HotInitialize: HotPathKind { static var kind: ActionKind { .initialize } }
enum HotDeinitialize: HotPathKind { static var kind: ActionKind { .deinitialize } }
