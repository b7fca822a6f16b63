/// The statechart features of a dispatcher and what the model stores of their
/// instances.
///
/// The model keeps one `Int32` per instance for its state (`HotStorage`,
/// `InstanceTable`). For a statechart feature that number indexes the feature's
/// interned `StatechartInstance` values: the configuration in entry order, the
/// history and the status. Everything that copies or restores a state number
/// (batches' undo entries, staged calls, snapshots of slots) therefore carries
/// the whole instance without knowing it is one, and the configuration string
/// each value names lives as long as the dispatcher, as registered names do.
struct StatechartRegistry {
    /// Some statechart feature is registered: the one test flat features pay.
    var any = false
    /// The statechart features of the registration in progress, by name (their
    /// bindings' filters are compiled before they are added).
    var registering: [String: Statechart] = [:]
    /// The tests of filters naming a statechart's states, numbered (a compiled
    /// filter carries its number): interned, so that subscribing again and
    /// again adds nothing.
    private(set) var filters: [ChartFilter] = []
    private var filterNumbers: [ChartFilter: Int32] = [:]
    /// `uf_register_service`'s services and the invocations running.
    var services = StatechartServices()
    /// Services to stop and start once the action that decided it is announced.
    var pendingServices: [(feature: Int32, key: String?, stops: [UInt64], starts: [StatechartServices.Invocation])] = []
    /// By feature index.
    private(set) var tables: [Int32: StatechartTable] = [:]
    /// Microsteps of the action being processed beyond its first, committed and
    /// waiting to be announced after it (`Dispatcher.announceStatechartSteps`).
    var pending: [CommittedMutation] = []
    /// `entered` and `exited` of the general path's recent mutations, by
    /// `seq` modulo `StatechartStepCache.noteCount` (`HotStorage.chartSteps`
    /// notes which `seq` each one is).
    private var inlineSteps: [StepPaths?] = []
    /// Those of plain sends (`StatechartStepCache`), one per distinct step.
    private(set) var plainSteps: [StepPaths] = []
    private var plainStepNumbers: [String: Int32] = [:]

    struct StepPaths {
        var entered: [String]
        var exited: [String]
        /// An internal microstep's action (`{"kind": "send", "event": E}` or `{"kind": "always"}`).
        var action: JSONObject?
    }

    mutating func add(_ chart: Statechart, initial: Set<Int>?, feature: Int32) {
        tables[feature] = StatechartTable(chart: chart, initial: initial)
        any = true
    }

    subscript(feature: Int32) -> StatechartTable? {
        get { tables[feature] }
    }

    /// The state number of an instance value, interned on first use.
    mutating func intern(_ value: StatechartInstance, feature: Int32, arena: inout NameArena) throws(UniFlowError) -> Int32 {
        try tables[feature]!.intern(value, arena: &arena)
    }

    mutating func number(of filter: ChartFilter) -> Int32 {
        if let known = filterNumbers[filter] { return known }
        filters.append(filter)
        filterNumbers[filter] = Int32(filters.count - 1)
        return Int32(filters.count - 1)
    }

    /// Keeps a general-path microstep's paths in the slot of its `seq`.
    mutating func keepInline(seq: UInt64, _ paths: StepPaths) {
        if inlineSteps.isEmpty { inlineSteps = Array(repeating: nil, count: StatechartStepCache.noteCount) }
        inlineSteps[Int(truncatingIfNeeded: seq) & (StatechartStepCache.noteCount - 1)] = paths
    }

    func inlineStep(seq: UInt64) -> StepPaths? {
        inlineSteps.isEmpty ? nil : inlineSteps[Int(truncatingIfNeeded: seq) & (StatechartStepCache.noteCount - 1)]
    }

    /// The number of a plain send's paths (the same paths, the same number).
    mutating func plainStepNumber(_ paths: StepPaths) -> Int32 {
        let key = paths.entered.joined(separator: ",") + "|" + paths.exited.joined(separator: ",")
        if let known = plainStepNumbers[key] { return known }
        let number = Int32(plainSteps.count)
        plainSteps.append(paths)
        plainStepNumbers[key] = number
        return number
    }
}

/// One statechart feature: its chart and its interned instance values.
struct StatechartTable {
    let chart: Statechart
    /// The nodes `initialize` may enter (with their descendants); nil: any.
    let initial: Set<Int>?
    /// The events its states take, numbered as `HotStorage.names` knows them
    /// (in the feature's event scope), for `StatechartStepCache`.
    let events: [String: Int32]
    /// Some state (or the feature) declares fields.
    let hasFields: Bool
    private(set) var values: [StatechartInstance] = []
    private var numbers: [StatechartInstance: Int32] = [:]
    /// Each value's configuration string, as C borrows it.
    private(set) var names: [CName] = []

    init(chart: Statechart, initial: Set<Int>?) {
        self.chart = chart
        self.initial = initial
        var events: [String: Int32] = [:]
        for node in chart.nodes {
            for (event, _) in node.on where events[event] == nil { events[event] = Int32(events.count) }
        }
        self.events = events
        hasFields = chart.nodes.contains { !$0.fields.isEmpty }
    }

    mutating func intern(_ value: StatechartInstance, arena: inout NameArena) throws(UniFlowError) -> Int32 {
        if let known = numbers[value] { return known }
        let number = Int32(values.count)
        names.append(try arena.store(chart.configurationText(value.active)))
        values.append(value)
        numbers[value] = number
        return number
    }

    /// Whether `initialize` may enter the node.
    func allowsInitialization(into node: Int) -> Bool {
        guard let initial else { return true }
        return initial.contains { chart.isWithin(node, $0) }
    }
}
