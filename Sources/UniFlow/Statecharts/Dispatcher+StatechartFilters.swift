/// Filters that name a statechart's states (`docs/filters.md`). A statechart
/// instance is in many states at once, so such a filter cannot compare one state
/// number with the mutation's: it asks whether its state was entered, exited,
/// or active before or after. Flat features never come here: their filters
/// compile and match as they always did, and a chart filter is told apart only
/// where a flat filter naming a state has already failed to match
/// (`CompiledFilter.chartMarker`).
struct ChartFilter: Hashable {
    enum Test: Hashable {
        /// `node` is active after the mutation (`SettingInto`, `ActualizationIn`).
        case activeAfter
        /// `node` was active before it (`DeinitializationFrom`).
        case activeBefore
        /// `node` was entered (`TransitionInto`, `InitializationInto`).
        case entered
        /// `node` was exited (`TransitionFrom`).
        case exited
        /// `node` was exited and `second` entered (`TransitionBetween`).
        case between
    }

    var feature: Int32
    var test: Test
    var node: Int
    var second: Int = -1
}

extension Dispatcher {
    /// The statechart a filter's feature has, registered or being registered
    /// (a binding's filter may name a feature of its own registration).
    func statechartForFilter(_ filter: FilterExpression) -> Statechart? {
        guard filter.state != nil, let name = filter.feature else { return nil }
        if let chart = charts.registering[name] { return chart }
        return featureIndex(named: name).flatMap { charts[$0]?.chart }
    }

    /// A filter that named a state by a path (`F.A.B`) on a feature that is not
    /// a statechart is refused as before paths (`FilterExpression.parse`).
    func refusePath(_ refusal: String?, of filter: FilterExpression) throws(UniFlowError) {
        if let refusal, statechartForFilter(filter) == nil { throw UniFlowError(.schema, refusal) }
    }

    /// Compiles a filter naming states of `chart`: the kinds of its form, and
    /// the test its states stand for. Names are paths or unique bare names, as
    /// everywhere a state is named.
    func compileChartFilter(_ filter: FilterExpression, chart: Statechart,
                            lookup: (String) -> (Int32, Bool, (String) -> Int?)?) throws(UniFlowError) -> CompiledFilter {
        let name = filter.feature!
        guard let (feature, keyed, _) = lookup(name) else {
            throw UniFlowError(.notFound, "filter '\(filter.text)': unknown feature '\(name)'")
        }
        if filter.key != nil && !keyed {
            throw UniFlowError(.schema, "filter '\(filter.text)': \(name) is a single feature: it has no instances to name with [key]")
        }
        func node(_ state: String) throws(UniFlowError) -> Int {
            switch chart.node(named: state) {
            case .success(let n):
                // Never active, so a filter naming one would never match.
                if chart.nodes[n].kind == .history {
                    throw UniFlowError(.schema, "filter '\(filter.text)': \(chart.nodes[n].path) is a history state, which is never active")
                }
                return n
            case .failure(let reason):
                if reason.hasPrefix("ambiguous") { throw UniFlowError(.schema, "filter '\(filter.text)': \(reason)") }
                throw UniFlowError(.notFound, "filter '\(filter.text)': unknown state '\(state)' of feature \(name)")
            }
        }
        let first = try node(filter.state!)
        let test: ChartFilter
        switch filter.form {
        case .transitionInto, .initializationInto: test = ChartFilter(feature: feature, test: .entered, node: first)
        case .transitionFrom: test = ChartFilter(feature: feature, test: .exited, node: first)
        case .deinitializationFrom: test = ChartFilter(feature: feature, test: .activeBefore, node: first)
        case .transitionBetween:
            test = ChartFilter(feature: feature, test: .between, node: first, second: try node(filter.secondState!))
        default: test = ChartFilter(feature: feature, test: .activeAfter, node: first)
        }
        var compiled = CompiledFilter(kinds: CompiledFilter.kinds(of: filter.form), feature: feature, key: filter.key)
        compiled.oldState = charts.number(of: test)
        compiled.newState = CompiledFilter.chartMarker
        return compiled
    }

    /// Whether a mutation of a statechart feature passes the test of the chart
    /// filter numbered `number` (its kind has been checked).
    func chartFilterMatches(_ number: Int32, _ record: MutationRecord) -> Bool {
        let filter = charts.filters[Int(number)]
        guard let table = charts[record.feature] else { return false }
        func active(_ state: Int32, _ node: Int) -> Bool {
            state >= 0 && table.values[Int(state)].active.contains(node)
        }
        // `entered`/`exited` as the mutation's JSON lists them (a state exited
        // and entered again is in both); for a mutation whose paths were not
        // kept, what the two configurations tell.
        let step = statechartStep(seq: record.seq)
        func entered(_ node: Int) -> Bool {
            if let step { return step.entered.contains(table.chart.nodes[node].path) }
            return active(record.newState, node) && !active(record.oldState, node)
        }
        func exited(_ node: Int) -> Bool {
            if let step { return step.exited.contains(table.chart.nodes[node].path) }
            return active(record.oldState, node) && !active(record.newState, node)
        }
        switch filter.test {
        case .activeAfter: return active(record.newState, filter.node)
        case .activeBefore: return active(record.oldState, filter.node)
        case .entered: return entered(filter.node)
        case .exited: return exited(filter.node)
        case .between: return exited(filter.node) && entered(filter.second)
        }
    }
}

/// A subscription's chart filter (`SubscriptionSlot.wants`, once its state
/// test failed), by the number its slot carries as its `oldState`.
@inline(never)
func chartSubscriptionWants(_ record: UnsafeMutablePointer<MutationRecord>, filter: Int32) -> Bool {
    let d = dispatcher(from: record.pointee.dispatcher)
    return d.chartFilterMatches(filter, record.pointee)
}
