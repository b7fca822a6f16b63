import CUniFlow
import Glibc

// The one place with manual memory in the core (with UnsafeVector, NameArena and
// NameTable beside it).
//
// Every `uf_dispatch` looks a feature and a state up by their C names, checks a
// precondition, stores the new state and calls the subscribers of that feature.
// Measured on this machine kind (shared/FACTS.md), creating a `String` and seeding
// SipHash costs more than the whole rest of a dispatch, and ARC traffic and struct
// copies out of class-held arrays cost nearly as much again. So what a dispatch
// touches lives here: trivially-copyable structs in malloc'd buffers, names hashed
// straight from their C bytes. Nothing in this file retains, and nothing outside
// `Dispatcher` sees these types.

/// A list of subscription slot indices, ordered by subscription id.
typealias SlotList = UnsafeVector<Int32>

/// What a dispatch needs to know about a feature (48 bytes).
struct FeatureSlot {
    /// The current state's index within the feature, or -1 when absent.
    var state: Int32 = -1
    /// Index of the feature's first `StateSlot`.
    var stateBase: Int32
    var stateCount: Int32
    /// Where the declared transitions are in `HotStorage.transitions` (a bit
    /// matrix, row = from, or for many states sorted (from, into) pairs), or -1
    /// when any pair is allowed.
    var transitionBase: Int32
    /// Sorted pairs in `HotStorage.transitionPairs`: how many (0: a bit matrix).
    var transitionPairCount: Int32 = 0
    /// The current payload has fields (it then lives in `Dispatcher.payloads`).
    var hasPayload = false
    /// The feature has model bindings: notifying it costs a lookup beyond the subscribers.
    var hasBindings = false
    var name: CName
    /// Subscriptions whose filter names this feature.
    var subscribers = SlotList()
}

/// What a dispatch needs to know about a state (16 bytes).
struct StateSlot {
    var name: CName
    /// Can be entered without a payload.
    var isAuto: Bool
    /// Has declared fields, so entering it automatically stores defaults.
    var hasFields: Bool
    /// `initialize` may enter it.
    var isInitial: Bool
}

/// A subscription, with its filter compiled to indices.
struct SubscriptionSlot {
    var id: UInt64
    var fn: uf_subscriber_fn?
    var payload: UnsafeMutableRawPointer?
    var payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?
    /// Bit `1 << kind` for each mutation kind that matches.
    var kinds: UInt8
    /// -1: any feature (the `AnyMutation` list).
    var feature: Int32
    /// -1: any; otherwise the state index the old / new state must have.
    var oldState: Int32
    var newState: Int32
    var alive: Bool
    /// Its callback is on the stack: ending it now must defer `payloadFree`.
    var running: Bool
}

/// The flat tables of one dispatcher. Trivially copyable on purpose: a
/// member holding a reference made every call on `hot` copy the whole struct.
struct HotStorage {
    var names = NameTable()
    var features = UnsafeVector<FeatureSlot>()
    var states = UnsafeVector<StateSlot>()
    var transitionBits = UnsafeVector<UInt64>()
    var transitionPairs = UnsafeVector<UInt64>()
    var subscriptions = UnsafeVector<SubscriptionSlot>()
    /// Subscriptions to every mutation (`AnyMutation`).
    var anySubscribers = SlotList()
    /// Some model binding watches every mutation.
    var hasAnyBindings = false
    /// Mutations are written to a journal.
    var journaling = false

    /// Up to this many states are found by comparing names in order; a feature
    /// with more has its states in the name table.
    static let scannedStates = 8
    /// Up to this many states, declared transitions are a bit matrix (at most
    /// 512 bytes); beyond, a sorted list of pairs (a feature of 250,000 states
    /// would otherwise need gigabytes).
    static let matrixStates = 64

    /// Adds a feature's tables, its names stored in `arena`; returns its index.
    mutating func addFeature(_ definition: FeatureDefinition, arena: inout NameArena) -> Int32 {
        let index = Int32(features.count)
        let stateBase = Int32(states.count)
        let count = definition.states.count
        var slot = FeatureSlot(stateBase: stateBase, stateCount: Int32(count), transitionBase: -1,
                               name: arena.store(definition.name))
        if let transitions = definition.transitions {
            if count <= HotStorage.matrixStates {
                slot.transitionBase = Int32(transitionBits.count * 64)
                transitionBits.append(repeating: 0, count: (count * count + 63) / 64)
                for (from, targets) in transitions.enumerated() {
                    for into in targets {
                        let bit = Int(slot.transitionBase) + from * count + into
                        transitionBits[bit >> 6] |= 1 << UInt64(bit & 63)
                    }
                }
            } else {
                slot.transitionBase = Int32(transitionPairs.count)
                for (from, targets) in transitions.enumerated() {
                    for into in targets.sorted() { transitionPairs.append(UInt64(from) << 32 | UInt64(into)) }
                }
                slot.transitionPairCount = Int32(transitionPairs.count) - slot.transitionBase
            }
        }
        names.insert(slot.name, scope: -1, value: index)
        for (s, state) in definition.states.enumerated() {
            let stateName = arena.store(state.name)
            if count > HotStorage.scannedStates { names.insert(stateName, scope: index, value: Int32(s)) }
            states.append(StateSlot(name: stateName, isAuto: state.isAuto, hasFields: !state.fields.isEmpty,
                                    isInitial: definition.allowsInitialization(into: s)))
        }
        features.append(slot)
        return index
    }

    /// The feature with that name, or -1.
    @inline(__always)
    func findFeature(_ name: UnsafePointer<CChar>) -> Int32 {
        names.find(name, scope: -1)
    }

    /// The state of `feature` with that name, or -1.
    @inline(__always)
    func findState(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        let slot = features.pointer(Int(feature))
        let count = Int(slot.pointee.stateCount)
        guard count <= HotStorage.scannedStates else { return names.find(name, scope: feature) }
        let known = names.recall(name, scope: feature)
        if known >= 0 { return known }
        let base = Int(slot.pointee.stateBase)
        for s in 0..<count {
            let registered = states[base + s].name.pointer
            if strcmp(registered, name) == 0 {
                names.remember(name, scope: feature, value: Int32(s), registered: registered)
                return Int32(s)
            }
        }
        return -1
    }

    /// Whether the feature's declared transitions allow `from -> into`.
    @inline(__always)
    func allowsTransition(_ feature: FeatureSlot, from: Int32, into: Int32) -> Bool {
        if feature.transitionBase < 0 { return true }
        if feature.transitionPairCount == 0 {
            let bit = Int(feature.transitionBase) + Int(from) * Int(feature.stateCount) + Int(into)
            return transitionBits[bit >> 6] & (1 << UInt64(bit & 63)) != 0
        }
        // Binary search in the feature's sorted pairs.
        let wanted = UInt64(UInt32(bitPattern: from)) << 32 | UInt64(UInt32(bitPattern: into))
        var low = Int(feature.transitionBase)
        var high = low + Int(feature.transitionPairCount)
        while low < high {
            let middle = (low + high) / 2
            let pair = transitionPairs[middle]
            if pair == wanted { return true }
            if pair < wanted { low = middle + 1 } else { high = middle }
        }
        return false
    }

    mutating func deallocate() {
        for i in 0..<features.count { features.pointer(i).pointee.subscribers.deallocate() }
        features.deallocate()
        states.deallocate()
        transitionBits.deallocate()
        transitionPairs.deallocate()
        subscriptions.deallocate()
        anySubscribers.deallocate()
        names.deallocate()
    }
}
