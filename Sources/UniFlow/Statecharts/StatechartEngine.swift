/// What one instance of a statechart feature is, apart from its payload: the
/// active states in the order they were entered (XState keeps them so, and
/// `always` is tried in that order), what each history state remembers, and
/// whether the instance is done or failed. A value: the dispatcher interns these
/// (`StatechartValues`), so that the model stores one number per instance.
struct StatechartInstance: Hashable {
    enum Status: UInt8 {
        case active, done, failed

        var text: String {
            switch self {
            case .active: "active"
            case .done: "done"
            case .failed: "failed"
            }
        }
    }

    /// Active nodes in the order they were entered; the root (0) first.
    var active: [Int]
    /// History node to the nodes it restores.
    var history: [Int: [Int]] = [:]
    var status: Status = .active
}

/// An event as the engine sees it.
struct StatechartEvent {
    var name: String
    var payload: JSONObject = JSONObject()
}

/// What an effect asks for beyond the macrostep itself.
enum StatechartDeferred {
    /// A delayed send: the event, its payload, the delay, the timer's id.
    case send(String, payload: JSONObject, delay: UInt64, id: String?)
    case cancel(String)
    /// Actions to queue, resolved and checked.
    case submit([ResolvedAction])
}

/// One microstep: what it exited and entered, and the instance after it.
struct StatechartMicrostep {
    /// The internal event it took; nil for `always`, the outer event's name for the first.
    var event: String?
    var isAlways = false
    /// Reverse document order, as exit effects ran.
    var exited: [Int]
    /// Document order, as entry effects ran.
    var entered: [Int]
    var instance: StatechartInstance
    var payload: JSONObject
    /// Timers to disarm (`arm` false) and arm, in the order their states were
    /// left and entered: `(node, index in its after list)`.
    var timers: [(node: Int, index: Int, arm: Bool)] = []
    /// Invocations started (`start` true) and stopped, in the same order.
    var services: [(node: Int, index: Int, start: Bool)] = []
}

/// What the engine asks of whoever runs it: guards and effects, which may need
/// the host's handlers and the model.
protocol StatechartHost {
    /// Whether a transition's guards hold (its `if`, then its `call` tree).
    mutating func guardHolds(_ transition: StatechartTransition, event: StatechartEvent,
                             run: StatechartRun) throws(UniFlowError) -> Bool
    /// Runs one effect; may assign to `run.payload` or raise with `run.raise`.
    mutating func perform(_ effect: StatechartEffect, event: StatechartEvent,
                          run: inout StatechartRun) throws(UniFlowError)
}

/// One macrostep of one instance, computed without touching the model: the
/// algorithm of XState v5 (which follows SCXML's), step by step. The dispatcher
/// applies the result (`Dispatcher+Statecharts.swift`), or nothing when it fails.
struct StatechartRun {
    let chart: Statechart
    private(set) var instance: StatechartInstance
    /// Membership of `instance.active`, by node.
    private(set) var isActive: [Bool]
    var payload: JSONObject
    /// Internal events waiting (`send` effects, done events).
    private(set) var internalQueue: [StatechartEvent] = []
    private(set) var microsteps: [StatechartMicrostep] = []
    /// More microsteps than this in one macrostep is `UF_ELOOP`.
    let maxMicrosteps: Int
    /// Set by the effects of the current microstep when they assign.
    private var assigned = false
    /// What effects asked for that only happens if the macrostep is applied:
    /// delayed sends, their cancellations, and submitted actions, in order.
    var deferred: [StatechartDeferred] = []

    init(chart: Statechart, instance: StatechartInstance, payload: JSONObject, maxMicrosteps: Int) {
        self.chart = chart
        self.instance = instance
        self.payload = payload
        self.maxMicrosteps = maxMicrosteps
        isActive = Array(repeating: false, count: chart.nodes.count)
        for n in instance.active { isActive[n] = true }
    }

    /// An instance before `initialize`: nothing active.
    static func absent(_ chart: Statechart) -> StatechartInstance { StatechartInstance(active: []) }

    /// Whether a node is active.
    func active(_ node: Int) -> Bool { isActive[node] }

    /// The active nodes' paths in document order (what guards see as `feature.active`).
    var activePaths: [String] {
        isActive.indices.filter { $0 > 0 && isActive[$0] }.map { chart.nodes[$0].path }
    }

    var configurationText: String { chart.configurationText(instance.active) }

    /// Raises an internal event (a `send` effect).
    mutating func raise(_ event: StatechartEvent) { internalQueue.append(event) }

    /// Notes that an effect changed the payload (the microstep then changed something).
    mutating func noteAssigned() { assigned = true }

    // MARK: Macrosteps

    /// `initialize into T`: enters the targets with their defaults (and
    /// ancestors), then runs the macrostep with the event `xstate.init`.
    mutating func initialize(into targets: [Int], host: inout some StatechartHost) throws(UniFlowError) {
        let event = StatechartEvent(name: "xstate.init")
        isActive = Array(repeating: false, count: chart.nodes.count)
        instance = StatechartInstance(active: [])
        let t = StatechartTransition(id: -1, source: 0, targets: targets, reenter: true)
        try microstep([t], event: event, initial: true, host: &host)
        try finishMacrostep(after: event, host: &host)
    }

    /// An event from outside: selects and runs its transitions, then the rest
    /// of the macrostep. Returns whether some transition took it.
    mutating func send(_ event: StatechartEvent, host: inout some StatechartHost) throws(UniFlowError) -> Bool {
        let transitions = try select(event, host: &host)
        if transitions.isEmpty && event.name.hasPrefix("xstate.error.actor.") {
            // A service failed and nothing handles it: the instance fails, as a done one ends.
            instance.status = .failed
            var timers: [(node: Int, index: Int, arm: Bool)] = []
            var services: [(node: Int, index: Int, start: Bool)] = []
            for s in instance.active.sorted(by: >) {
                for effect in chart.nodes[s].exit { try host.perform(effect, event: event, run: &self) }
                for i in chart.nodes[s].timers.indices { timers.append((s, i, false)) }
                for i in chart.nodes[s].invokes.indices { services.append((s, i, false)) }
            }
            microsteps.append(StatechartMicrostep(event: event.name, exited: [], entered: [], instance: instance,
                                                  payload: payload, timers: timers, services: services))
            internalQueue.removeAll()
            return true
        }
        try microstep(transitions, event: event, initial: false, host: &host)
        try finishMacrostep(after: event, host: &host)
        return !transitions.isEmpty
    }

    /// An explicit transition (a `transition` action): from `source` into the
    /// targets, as one microstep, then the rest of the macrostep.
    mutating func transition(from source: Int, into targets: [Int], reenter: Bool, event: StatechartEvent,
                             host: inout some StatechartHost) throws(UniFlowError) {
        let t = StatechartTransition(id: -2, source: source, targets: targets, reenter: reenter)
        try microstep([t], event: event, initial: false, host: &host, forced: true)
        try finishMacrostep(after: event, host: &host)
    }

    /// An actualization (an `actualize` action): the payload's fields set, as
    /// one microstep that exits and enters nothing, then the rest of the macrostep.
    mutating func update(_ fields: JSONObject, event: StatechartEvent, host: inout some StatechartHost) throws(UniFlowError) {
        for (key, value) in fields { payload[key] = value }
        try checkPayload()
        microsteps.append(StatechartMicrostep(event: event.name, exited: [], entered: [], instance: instance, payload: payload))
        try finishMacrostep(after: event, host: &host)
    }

    /// `always`, then internal events, until neither takes anything.
    private mutating func finishMacrostep(after event: StatechartEvent, host: inout some StatechartHost) throws(UniFlowError) {
        var current = event
        var lookEventless = true
        while instance.status == .active {
            var enabled = lookEventless ? try selectEventless(current, host: &host) : []
            let viaAlways = !enabled.isEmpty
            if enabled.isEmpty {
                guard !internalQueue.isEmpty else { break }
                current = internalQueue.removeFirst()
                enabled = try select(current, host: &host)
            }
            let changed = try microstep(enabled, event: current, initial: false, host: &host, always: viaAlways)
            // XState stops looking for eventless transitions once one changes nothing.
            lookEventless = !viaAlways || changed
        }
        if instance.status != .active { internalQueue.removeAll() }
    }

    // MARK: Selection

    /// The transitions an event selects (XState's `transitionNode` over the
    /// configuration, then conflict resolution).
    mutating func select(_ event: StatechartEvent, host: inout some StatechartHost) throws(UniFlowError) -> [StatechartTransition] {
        guard instance.status == .active, !instance.active.isEmpty else { return [] }
        let found = try selectBelow(0, event, host: &host)
        return removeConflicts(found)
    }

    private mutating func selectBelow(_ node: Int, _ event: StatechartEvent,
                                      host: inout some StatechartHost) throws(UniFlowError) -> [StatechartTransition] {
        let n = chart.nodes[node]
        var inner: [StatechartTransition] = []
        switch n.kind {
        case .compound:
            if let child = n.children.first(where: { isActive[$0] }) { inner = try selectBelow(child, event, host: &host) }
        case .parallel:
            for child in n.children where isActive[child] { inner += try selectBelow(child, event, host: &host) }
        default:
            break
        }
        if !inner.isEmpty { return inner }
        return try next(node, event, host: &host)
    }

    /// The first transition of the node's for the event whose guards hold.
    private mutating func next(_ node: Int, _ event: StatechartEvent,
                               host: inout some StatechartHost) throws(UniFlowError) -> [StatechartTransition] {
        guard let entry = chart.nodes[node].on.first(where: { $0.event == event.name }) else { return [] }
        for t in entry.transitions {
            if node == 0 && !t.targets.allSatisfy({ chart.allows(from: 0, into: $0, active: isActive) }) { continue }
            if !t.isGuarded { return [t] }
            if try host.guardHolds(t, event: event, run: self) { return [t] }
        }
        return []
    }

    /// `always`: for each active leaf in the order entered, itself then its
    /// ancestors, the first transition whose guard holds.
    private mutating func selectEventless(_ event: StatechartEvent,
                                          host: inout some StatechartHost) throws(UniFlowError) -> [StatechartTransition] {
        var enabled: [StatechartTransition] = []
        for leaf in instance.active where chart.nodes[leaf].isLeaf {
            var s = leaf
            search: while s >= 0 {
                for t in chart.nodes[s].always {
                    var holds = !t.isGuarded
                    if !holds { holds = try host.guardHolds(t, event: event, run: self) }
                    if holds {
                        if !enabled.contains(where: { $0.id == t.id }) { enabled.append(t) }
                        break search
                    }
                }
                s = chart.nodes[s].parent
            }
        }
        return removeConflicts(enabled)
    }

    /// SCXML's `removeConflictingTransitions`: of two transitions whose exit
    /// sets meet, the one from the inner source wins, else the earlier.
    private func removeConflicts(_ transitions: [StatechartTransition]) -> [StatechartTransition] {
        guard transitions.count > 1 else { return transitions }
        var kept: [StatechartTransition] = []
        for t1 in transitions {
            var preempted = false
            var removed: Set<Int> = []
            let exit1 = Set(exitSet([t1], history: instance.history))
            for t2 in kept where !exit1.isDisjoint(with: exitSet([t2], history: instance.history)) {
                if chart.isDescendant(t1.source, of: t2.source) {
                    removed.insert(t2.id)
                } else {
                    preempted = true
                    break
                }
            }
            if !preempted {
                kept.removeAll { removed.contains($0.id) }
                kept.append(t1)
            }
        }
        return kept
    }

    // MARK: Domains, exit and entry sets

    /// The targets a transition stands for, history states resolved.
    private func effectiveTargets(_ targets: [Int], history: [Int: [Int]]) -> [Int] {
        var result: [Int] = []
        for target in targets {
            if chart.nodes[target].kind == .history {
                let resolved = history[target] ?? effectiveTargets(historyDefault(target), history: history)
                for n in resolved where !result.contains(n) { result.append(n) }
            } else if !result.contains(target) {
                result.append(target)
            }
        }
        return result
    }

    /// A history state's default: its `default`, else its parent's initial
    /// child, or, in a parallel state, the parent itself.
    private func historyDefault(_ node: Int) -> [Int] {
        if let targets = chart.nodes[node].historyDefault { return targets }
        let parent = chart.nodes[node].parent
        // In a parallel state, the parent itself (every region with its defaults).
        if chart.nodes[parent].kind == .parallel { return [parent] }
        // A parent whose initial child is this history state has no default beyond it.
        let initial = chart.nodes[parent].initial
        return initial >= 0 && initial != node ? [initial] : []
    }

    /// XState's `getTransitionDomain`; nil only for a re-entering transition
    /// from the feature itself.
    private func domain(_ t: StatechartTransition, history: [Int: [Int]]) -> Int? {
        let targets = effectiveTargets(t.targets, history: history)
        if !t.reenter && targets.allSatisfy({ chart.isWithin($0, t.source) }) { return t.source }
        for ancestor in chart.properAncestors(t.source) where targets.allSatisfy({ chart.isDescendant($0, of: ancestor) }) {
            return ancestor
        }
        return t.reenter ? nil : 0
    }

    private func exitSet(_ transitions: [StatechartTransition], history: [Int: [Int]]) -> [Int] {
        var exit: [Int] = []
        for t in transitions where !t.targets.isEmpty {
            let d = domain(t, history: history)
            if let d, t.reenter && t.source == d, !exit.contains(d) { exit.append(d) }
            for n in instance.active where (d.map { chart.isDescendant(n, of: $0) } ?? true) && !exit.contains(n) {
                exit.append(n)
            }
        }
        return exit
    }

    private func entrySet(_ transitions: [StatechartTransition], history: [Int: [Int]]) -> Set<Int> {
        var enter = Set<Int>()
        for t in transitions {
            let d = domain(t, history: history)
            for s in t.targets {
                if chart.nodes[s].kind != .history && (t.source != s || t.source != d || t.reenter) { enter.insert(s) }
                addDescendants(s, history: history, into: &enter)
            }
            for s in effectiveTargets(t.targets, history: history) {
                var ancestors = chart.properAncestors(s, upTo: d ?? -1)
                if let d, chart.nodes[d].kind == .parallel { ancestors.append(d) }
                let reentrancy: Int? = (t.source == 0 && t.reenter) ? nil : d
                addAncestors(ancestors, reentrancy: reentrancy, history: history, into: &enter)
            }
        }
        return enter
    }

    private func addDescendants(_ node: Int, history: [Int: [Int]], into enter: inout Set<Int>) {
        let n = chart.nodes[node]
        switch n.kind {
        case .history:
            let restored = history[node] ?? historyDefault(node)
            for s in restored {
                enter.insert(s)
                addDescendants(s, history: history, into: &enter)
            }
            for s in restored {
                addAncestors(chart.properAncestors(s, upTo: n.parent), reentrancy: nil, history: history, into: &enter)
            }
        case .compound:
            // The initial child may be a history state (XState allows it): it stands for what it restores.
            let initial = n.initial
            if chart.nodes[initial].kind != .history { enter.insert(initial) }
            addDescendants(initial, history: history, into: &enter)
            addAncestors(chart.properAncestors(initial, upTo: node), reentrancy: nil, history: history, into: &enter)
        case .parallel:
            for region in chart.stateChildren(node) where !enter.contains(where: { chart.isWithin($0, region) }) {
                enter.insert(region)
                addDescendants(region, history: history, into: &enter)
            }
        default:
            break
        }
    }

    private func addAncestors(_ ancestors: [Int], reentrancy: Int?, history: [Int: [Int]], into enter: inout Set<Int>) {
        for a in ancestors {
            if reentrancy.map({ chart.isDescendant(a, of: $0) }) ?? true { enter.insert(a) }
            if chart.nodes[a].kind == .parallel {
                for region in chart.stateChildren(a) where !enter.contains(where: { chart.isWithin($0, region) }) {
                    enter.insert(region)
                    addDescendants(region, history: history, into: &enter)
                }
            }
        }
    }

    // MARK: The microstep

    /// Exits, the transitions' actions, entries; records the microstep.
    /// Returns whether it changed anything (configuration, history or payload).
    @discardableResult
    private mutating func microstep(_ selected: [StatechartTransition], event: StatechartEvent, initial: Bool,
                                    host: inout some StatechartHost, always: Bool = false,
                                    forced: Bool = false) throws(UniFlowError) -> Bool {
        guard !selected.isEmpty else { return false }
        if microsteps.count >= maxMicrosteps {
            throw UniFlowError(.loop, "more than \(maxMicrosteps) microsteps in one macrostep (max_cascade)")
        }
        let transitions = forced ? selected : removeConflicts(selected)
        let before = Set(instance.active)
        assigned = false
        var history = instance.history
        var historyChanged = false
        var exited: [Int] = []
        var timers: [(node: Int, index: Int, arm: Bool)] = []
        var services: [(node: Int, index: Int, start: Bool)] = []
        if !initial {
            exited = exitSet(transitions, history: history).sorted(by: >)
            for s in exited {
                for h in chart.nodes[s].children where chart.nodes[h].kind == .history {
                    let deep = chart.nodes[h].deepHistory
                    history[h] = instance.active.filter { n in
                        deep ? (chart.nodes[n].isLeaf && chart.isDescendant(n, of: s)) : chart.nodes[n].parent == s
                    }
                    historyChanged = true
                }
            }
            for s in exited {
                for effect in chart.nodes[s].exit { try host.perform(effect, event: event, run: &self) }
                for i in chart.nodes[s].timers.indices { timers.append((s, i, false)) }
                for i in chart.nodes[s].invokes.indices { services.append((s, i, false)) }
                isActive[s] = false
                for field in chart.nodes[s].fields { payload[field.name] = nil }
            }
            instance.active.removeAll { !isActive[$0] }
        }
        instance.history = history
        for t in transitions {
            for effect in t.actions { try host.perform(effect, event: event, run: &self) }
            if let template = t.payload {
                try assignPayload(template, event: event)
            }
        }
        var entered = entrySet(transitions, history: history).sorted()
        if initial && !entered.contains(0) { entered.insert(0, at: 0) }
        var completed = Set<Int>()
        var done = false
        for s in entered {
            if !isActive[s] {
                isActive[s] = true
                instance.active.append(s)
            }
            for field in chart.nodes[s].fields where payload[field.name] == nil {
                if let value = field.defaultValue { payload[field.name] = value }
            }
            for effect in chart.nodes[s].entry { try host.perform(effect, event: event, run: &self) }
            // As XState does: a state's delayed events are scheduled after its entry actions.
            for i in chart.nodes[s].timers.indices { timers.append((s, i, true)) }
            for i in chart.nodes[s].invokes.indices { services.append((s, i, true)) }
            guard chart.nodes[s].kind == .final else { continue }
            let parent = chart.nodes[s].parent
            var marker = chart.nodes[parent].kind == .parallel ? parent : chart.nodes[parent].parent
            if chart.nodes[parent].kind == .compound {
                var output = JSONObject()
                if let template = chart.nodes[s].output {
                    output["output"] = try ActionTemplate.substitute(template, data: ["payload": .object(payload)])
                }
                internalQueue.append(StatechartEvent(name: "xstate.done.state.\(chart.nodes[parent].path)", payload: output))
            }
            while marker >= 0 && chart.nodes[marker].kind == .parallel && !completed.contains(marker) && isInFinalState(marker) {
                completed.insert(marker)
                internalQueue.append(StatechartEvent(name: "xstate.done.state.\(chart.nodes[marker].path)"))
                marker = chart.nodes[marker].parent
            }
            if marker < 0 { done = true }
        }
        if done {
            instance.status = .done
            for s in instance.active.sorted(by: >) {
                for effect in chart.nodes[s].exit { try host.perform(effect, event: event, run: &self) }
                for i in chart.nodes[s].timers.indices { timers.append((s, i, false)) }
                for i in chart.nodes[s].invokes.indices { services.append((s, i, false)) }
            }
        }
        try checkPayload()
        // As XState decides it: the same states (even exited and entered again),
        // history not written and no assignment is no change.
        // Stopping or starting a service changes XState's snapshot (its children) too.
        let changed = before != Set(instance.active) || historyChanged || assigned || done || !services.isEmpty
        microsteps.append(StatechartMicrostep(event: always ? nil : event.name, isAlways: always,
                                              exited: exited.filter { $0 > 0 }, entered: entered.filter { $0 > 0 },
                                              instance: instance, payload: payload, timers: timers, services: services))
        return changed
    }

    private func isInFinalState(_ node: Int) -> Bool {
        switch chart.nodes[node].kind {
        case .compound: return chart.stateChildren(node).contains { chart.nodes[$0].kind == .final && isActive[$0] }
        case .parallel: return chart.stateChildren(node).allSatisfy { isInFinalState($0) }
        case .final: return true
        default: return false
        }
    }

    /// A target's `payload` template: sets the fields it names.
    private mutating func assignPayload(_ template: JSONValue, event: StatechartEvent) throws(UniFlowError) {
        let data: JSONValue = ["event": ["name": .string(event.name), "payload": .object(event.payload)],
                               "feature": ["payload": .object(payload)]]
        guard case .object(let values) = try ActionTemplate.substitute(template, data: data) else { return }
        for (key, value) in values { payload[key] = value }
        assigned = true
    }

    /// The payload against the fields of the feature and of every active state.
    private mutating func checkPayload() throws(UniFlowError) {
        var fields = chart.nodes[0].fields
        for n in instance.active where n > 0 { fields += chart.nodes[n].fields }
        if fields.isEmpty && payload.isEmpty { return }
        var kept = JSONObject()
        for (key, value) in payload where fields.contains(where: { $0.name == key }) { kept[key] = value }
        let schema = StateDefinition(name: configurationText, fields: fields)
        payload = try schema.checkPayload(kept, feature: chart.name)
    }
}
