import CUniFlow
import Glibc

// The one place with manual memory in the core (with UnsafeVector, NameArena and
// NameTable beside it).
//
// Every `uf_dispatch` looks a feature and a state up by their C names, checks a
// precondition, stores the new state and calls the subscribers of that feature.
// Measured on the machines this was written on (bench/README.md), creating a `String` and seeding
// SipHash costs more than the whole rest of a dispatch, and ARC traffic and struct
// copies out of class-held arrays cost nearly as much again. So what a dispatch
// touches lives here: trivially-copyable structs in malloc'd buffers, names hashed
// straight from their C bytes. Nothing in this file retains, and nothing outside
// `Dispatcher` sees these types.

/// What a dispatch needs to know about a feature (48 bytes).
struct FeatureSlot {
    /// The current state's index within the feature, or -1 when absent (single
    /// features; a keyed feature's instances keep theirs in its `InstanceTable`).
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
    /// A keyed feature's `InstanceTable` in `HotStorage.instanceTables`; -1: single.
    var instances: Int32 = -1
    /// The feature's own `on` in `HotStorage.eventLists` (ended by an entry whose
    /// event is -1), or -1.
    var events: Int32 = -1
    /// A single feature's first armed state timer (`TimerStore`), or -1.
    var timers: Int32 = -1
    /// The current payload has fields (it then lives in the model's payloads).
    var hasPayload = false
    /// Bit `1 << kind` for each mutation kind some model binding's filter watches
    /// on this feature: a mutation of another kind costs no binding lookup (and
    /// stays on the hot path).
    var bindingKinds: UInt8 = 0
    /// Some interceptor sees this feature's actions.
    var intercepted = false
    /// Some watch's selector may read this feature: its changes are noted.
    var watched = false
    /// Where its states' entries start in `HotStorage.timerSpecStarts`; -1 when
    /// no state has a timer (most features: they keep no entries).
    var timerSpecStarts: Int32 = -1
    var name: CName
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
    /// How many state timers (`after`) it has, armed while the feature is in it;
    /// where their specs start is kept beside the slot, in
    /// `HotStorage.timerSpecStarts` (a count, not an index, keeps it at 16 bytes).
    var timerCount: UInt8
    var hasTimers: Bool { timerCount > 0 }
    /// Its `on` in `HotStorage.eventLists`, or -1.
    var events: Int32
}

/// What arming a state timer needs, kept flat: arming and disarming on every
/// transition must not copy (and retain) the state's definition.
struct TimerSpec {
    var ms: UInt64
    var resetOnUpdate: Bool
    var onRestore: RestorePolicy
}

/// One event a state or feature takes: its targets in `HotStorage.eventTargets`.
struct EventEntry {
    /// The event's number within its feature; -1 ends a list.
    var event: Int32
    var targetBase: Int32
    var targetCount: Int32
    /// The target a send of the event takes on the hot path from the list's
    /// state, decided at registration (`HotStorage.walkHotTarget`): its index in
    /// `eventTargets`, `HotStorage.noHotTarget`, or, in a feature's own list
    /// when it declares transitions, `HotStorage.walkedHotTarget`. Everything
    /// the choice reads is fixed once the feature is registered, so a send
    /// reads one entry instead of walking two lists and testing each target.
    var hot: Int32 = HotStorage.noHotTarget
}

/// One target of an event, as the hot path needs it (its rule, handler and
/// template stay with the definition).
struct EventTargetSlot {
    var into: Int32
    var actualize: Bool
    /// Has an `if` or a `call`: the general path evaluates it.
    var guarded: Bool
    /// What the guard answers on the hot path, where the event and the feature
    /// carry no payload: 1 true, 0 false, -1 only the evaluator (or a handler) knows.
    var guardWithoutPayloads: Int8
    /// Has a payload template.
    var templated: Bool
    /// The declaring state, or -1 for the feature's own `on`.
    var declaredIn: Int32
    /// Position of the target in its declaration (`EventTarget`): the state's or
    /// the feature's `events[list].targets[item]`.
    var list: Int32
    var item: Int32
}

/// The flat tables of one dispatcher. Trivially copyable on purpose: a
/// member holding a reference made every call on `hot` copy the whole struct.
struct HotStorage {
    var names = NameTable()
    var features = UnsafeVector<FeatureSlot>()
    var states = UnsafeVector<StateSlot>()
    var transitionBits = UnsafeVector<UInt64>()
    var transitionPairs = UnsafeVector<UInt64>()
    /// The live instances of each keyed feature.
    var instanceTables = UnsafeVector<InstanceTable>()
    var eventLists = UnsafeVector<EventEntry>()
    var eventTargets = UnsafeVector<EventTargetSlot>()
    var timerSpecs = UnsafeVector<TimerSpec>()
    /// For each state of a feature with timers, from the feature's
    /// `timerSpecStarts`: where the state's specs start in `timerSpecs`.
    var timerSpecStarts = UnsafeVector<Int32>()
    /// Bit `1 << kind` for each mutation kind a binding watches on every feature.
    var anyBindingKinds: UInt8 = 0
    /// Mutations are written to a journal.
    var journaling = false
    /// A partitioned dispatcher: the hot path steps aside, since owning the
    /// action's partition is a step of the general path.
    var partitioned = false
    /// Some interceptor sees every feature's actions.
    var interceptingAll = false
    /// Some watch's selector may read any feature (a computed path).
    var watchingAll = false
    /// Plain sends to statechart features, and which paths recent mutations had.
    var chartSteps = StatechartStepCache()

    /// Up to this many states are found by comparing names in order; a feature
    /// with more has its states in the name table.
    static let scannedStates = 8
    /// Up to this many states, declared transitions are a bit matrix (at most
    /// 512 bytes); beyond, a sorted list of pairs (a feature of 250,000 states
    /// would otherwise need gigabytes).
    static let matrixStates = 64

    /// Makes room for the tables of `definitions`, so that adding them cannot
    /// fail half-way: registration is all or nothing, out of memory included.
    mutating func reserve(for definitions: [FeatureDefinition], arena: inout NameArena) throws(UniFlowError) {
        var states = 0, names = 0, nameBytes = 0, bits = 0, pairs = 0, lists = 0, targets = 0, keyed = 0, timers = 0
        var timedStates = 0
        func count(_ events: [EventTargets]) {
            guard !events.isEmpty else { return }
            lists += events.count + 1
            for entry in events {
                targets += entry.targets.count
                names += 1
                nameBytes += entry.event.utf8.count + 1
            }
        }
        for definition in definitions {
            let n = definition.states.count
            states += n
            names += 1 + (n > HotStorage.scannedStates ? n : 0)
            nameBytes += definition.name.utf8.count + 1
            for state in definition.states {
                nameBytes += state.name.utf8.count + 1
                timers += state.timers.count
                count(state.events)
            }
            count(definition.events)
            if let transitions = definition.transitions {
                if n <= HotStorage.matrixStates { bits += (n * n + 63) / 64 } else { pairs += transitions.reduce(0) { $0 + $1.count } }
            }
            if definition.keyed { keyed += 1 }
            if definition.hasTimers { timedStates += n }
        }
        try features.reserve(definitions.count)
        try self.states.reserve(states)
        try transitionBits.reserve(bits)
        try transitionPairs.reserve(pairs)
        try eventLists.reserve(lists)
        try eventTargets.reserve(targets)
        try timerSpecs.reserve(timers)
        try timerSpecStarts.reserve(timedStates)
        try instanceTables.reserve(keyed)
        try self.names.reserve(names)
        try arena.reserve(nameBytes)
    }

    /// Adds a feature's tables, its names stored in `arena`; returns its index.
    mutating func addFeature(_ definition: FeatureDefinition, arena: inout NameArena) throws(UniFlowError) -> Int32 {
        let index = Int32(features.count)
        let stateBase = Int32(states.count)
        let count = definition.states.count
        var slot = FeatureSlot(stateBase: stateBase, stateCount: Int32(count), transitionBase: -1,
                               name: try arena.store(definition.name))
        if let transitions = definition.transitions {
            if count <= HotStorage.matrixStates {
                slot.transitionBase = Int32(transitionBits.count * 64)
                try transitionBits.append(repeating: 0, count: (count * count + 63) / 64)
                for (from, targets) in transitions.enumerated() {
                    for into in targets {
                        let bit = Int(slot.transitionBase) + from * count + into
                        transitionBits[bit >> 6] |= 1 << UInt64(bit & 63)
                    }
                }
            } else {
                slot.transitionBase = Int32(transitionPairs.count)
                for (from, targets) in transitions.enumerated() {
                    for into in targets.sorted() { try transitionPairs.append(UInt64(from) << 32 | UInt64(into)) }
                }
                slot.transitionPairCount = Int32(transitionPairs.count) - slot.transitionBase
            }
        }
        if definition.keyed {
            slot.instances = Int32(instanceTables.count)
            try instanceTables.append(InstanceTable())
        }
        try names.insert(slot.name, scope: -1, value: index)
        // Events are numbered per feature, in order of first declaration.
        var eventNumbers: [String: Int32] = [:]
        func number(_ event: String) throws(UniFlowError) -> Int32 {
            if let known = eventNumbers[event] { return known }
            let n = Int32(eventNumbers.count)
            eventNumbers[event] = n
            try names.insert(try arena.store(event), scope: HotStorage.eventScope(index), value: n)
            return n
        }
        func eventList(_ events: [EventTargets], declaredIn state: Int32) throws(UniFlowError) -> Int32 {
            guard !events.isEmpty else { return -1 }
            let base = Int32(eventLists.count)
            for (list, entry) in events.enumerated() {
                let targetBase = Int32(eventTargets.count)
                for (item, target) in entry.targets.enumerated() {
                    var decided: Int8 = -1
                    if target.call == nil, let answer = target.shortcut?.decide(eventPayload: nil, featurePayload: nil) {
                        decided = answer ? 1 : 0
                    }
                    try eventTargets.append(EventTargetSlot(into: Int32(target.into), actualize: target.actualize,
                                                            guarded: target.isGuarded, guardWithoutPayloads: decided,
                                                            templated: target.payload != nil,
                                                            declaredIn: state, list: Int32(list), item: Int32(item)))
                }
                try eventLists.append(EventEntry(event: try number(entry.event), targetBase: targetBase,
                                                 targetCount: Int32(entry.targets.count)))
            }
            try eventLists.append(EventEntry(event: -1, targetBase: 0, targetCount: 0))
            return base
        }
        if definition.hasTimers { slot.timerSpecStarts = Int32(timerSpecStarts.count) }
        for (s, state) in definition.states.enumerated() {
            let stateName = try arena.store(state.name)
            if count > HotStorage.scannedStates { try names.insert(stateName, scope: index, value: Int32(s)) }
            if slot.timerSpecStarts >= 0 { try timerSpecStarts.append(Int32(timerSpecs.count)) }
            for timer in state.timers {
                try timerSpecs.append(TimerSpec(ms: timer.ms, resetOnUpdate: timer.resetOnUpdate, onRestore: timer.onRestore))
            }
            try states.append(StateSlot(name: stateName, isAuto: state.isAuto, hasFields: !state.fields.isEmpty,
                                        isInitial: definition.allowsInitialization(into: s),
                                        timerCount: UInt8(state.timers.count),
                                        events: try eventList(state.events, declaredIn: Int32(s))))
        }
        slot.events = try eventList(definition.events, declaredIn: -1)
        // What a send takes on the hot path, now that both levels' lists exist.
        for s in 0..<count {
            let list = states[Int(stateBase) + s].events
            var i = Int(list)
            while list >= 0 && eventLists[i].event >= 0 {
                eventLists[i].hot = walkHotTarget(eventLists[i].event, stateList: list, feature: slot, current: Int32(s))
                i += 1
            }
        }
        var i = Int(slot.events)
        while slot.events >= 0 && eventLists[i].event >= 0 {
            // Reached only from a state whose list does not name the event; which
            // state it is matters only to declared transitions (any state will do
            // otherwise: a feature-level target is then never passed over).
            eventLists[i].hot = slot.transitionBase >= 0 ? HotStorage.walkedHotTarget
                : walkHotTarget(eventLists[i].event, stateList: -1, feature: slot, current: 0)
            i += 1
        }
        try features.append(slot)
        return index
    }

    /// The `NameTable` scope of a feature's event names.
    static func eventScope(_ feature: Int32) -> Int32 { -2 - feature }

    /// The feature's event with that name, or -1 (no state takes it).
    @inline(__always)
    func findEvent(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        names.find(name, scope: HotStorage.eventScope(feature))
    }

    /// Where `event` is in an event list (`FeatureSlot.events`, `StateSlot.events`):
    /// its entry's index in `eventLists`, or -1 when the list does not name it.
    @inline(__always)
    func entry(of event: Int32, in list: Int32) -> Int {
        guard list >= 0, event >= 0 else { return -1 }
        var i = Int(list)
        while true {
            let found = eventLists[i].event
            if found < 0 { return -1 }
            if found == event { return i }
            i += 1
        }
    }

    /// The targets of `event` in an event list: their range in `eventTargets`,
    /// empty when the list does not name the event.
    @inline(__always)
    func targets(of event: Int32, in list: Int32) -> Range<Int> {
        let i = entry(of: event, in: list)
        guard i >= 0 else { return 0..<0 }
        let entry = eventLists[i]
        return Int(entry.targetBase)..<Int(entry.targetBase + entry.targetCount)
    }

    /// `EventEntry.hot`: no target the hot path can take.
    static let noHotTarget: Int32 = -1
    /// `EventEntry.hot` of a feature-level event of a feature that declares
    /// transitions: which target is taken depends on the current state.
    static let walkedHotTarget: Int32 = -2

    /// The target a send of `event` (without payload) takes from state `current`,
    /// as `Dispatcher.chooseTarget` would choose it: the first one of the state's
    /// list, then of the feature's, that `transitions` allows (feature-level
    /// targets) and whose guard, if any, holds where neither the event nor the
    /// feature has a payload. Its index in `eventTargets`, or `noHotTarget` when
    /// that is for the general path to decide: no target taken (a rejection), a
    /// guard only the evaluator or a handler answers, a payload template, or a
    /// new state with fields (its defaults to store).
    func walkHotTarget(_ event: Int32, stateList: Int32, feature: FeatureSlot, current: Int32) -> Int32 {
        // Two passes rather than an array of the two lists: no allocation.
        for pass in 0..<2 {
            for t in targets(of: event, in: pass == 0 ? stateList : feature.events) {
                let target = eventTargets[t]
                if target.declaredIn < 0 && !(target.actualize && target.into == current)
                    && !allowsTransition(feature, from: current, into: target.into) {
                    continue
                }
                if target.guarded {
                    guard target.guardWithoutPayloads >= 0 else { return HotStorage.noHotTarget }
                    if target.guardWithoutPayloads == 0 { continue }
                }
                if target.templated || states[Int(feature.stateBase) + Int(target.into)].hasFields {
                    return HotStorage.noHotTarget
                }
                return Int32(t)
            }
        }
        return HotStorage.noHotTarget
    }

    /// The target a send of `event` takes on the hot path from state `current`
    /// (`walkHotTarget`, as decided at registration), or -1 (`noHotTarget`), or
    /// `walkedHotTarget` when it is the current state's to decide.
    @inline(__always)
    func hotTarget(of event: Int32, stateList: Int32, featureList: Int32) -> Int32 {
        // The state's entry answers for both levels; the feature's, only for
        // events the state's list does not name.
        var i = entry(of: event, in: stateList)
        if i < 0 {
            i = entry(of: event, in: featureList)
            if i < 0 { return HotStorage.noHotTarget }
        }
        return eventLists[i].hot
    }

    /// The feature with that name, or -1.
    @inline(__always)
    func findFeature(_ name: UnsafePointer<CChar>) -> Int32 {
        names.find(name, scope: -1)
    }

    /// The state of `feature` with that name, or -1. `mutating` although it only
    /// fills the pointer cache (through its pointer): the miss path, out of line,
    /// then gets the storage by address, where a non-mutating call copied the
    /// whole struct, or loaded the fields it passed (and spilled them) on every
    /// dispatch, hit or not.
    @inline(__always)
    mutating func findState(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        // The pointer cache first: it answers for a feature of any size (both kinds
        // remember in the feature's scope), so a hit reads nothing of the feature.
        let known = names.recall(name, scope: feature)
        if known >= 0 { return known }
        return findStateUncached(name, of: feature)
    }

    /// `findState` when the pointer cache does not know the name.
    @inline(never)
    private mutating func findStateUncached(_ name: UnsafePointer<CChar>, of feature: Int32) -> Int32 {
        let slot = features.pointer(Int(feature))
        let count = Int(slot.pointee.stateCount)
        guard count <= HotStorage.scannedStates else { return names.find(name, scope: feature) }
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
        for i in 0..<instanceTables.count { instanceTables.pointer(i).pointee.deallocate() }
        instanceTables.deallocate()
        eventLists.deallocate()
        eventTargets.deallocate()
        timerSpecs.deallocate()
        timerSpecStarts.deallocate()
        features.deallocate()
        states.deallocate()
        transitionBits.deallocate()
        transitionPairs.deallocate()
        names.deallocate()
        chartSteps.deallocate()
    }
}
