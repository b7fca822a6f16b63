/// Via callbacks on a statechart's explicit actions (`docs/statecharts.md`):
/// the pipeline runs them as for a flat feature (`runStatechartSteps`); what
/// differs is the payload they become, which sets the fields it names, as an
/// action's own payload does, instead of being a whole state's payload.
extension Dispatcher {
    /// `uf_context_become` on a statechart action: the fields named must be
    /// declared on the feature, on the state the action names or one of its
    /// ancestors, or on a state active now, and fit their types. Fields it does
    /// not name keep their values; the macrostep checks the whole payload.
    func becomeStatechart(_ record: ViaContextRecord, table: StatechartTable,
                          payload text: UnsafePointer<CChar>) throws(UniFlowError) {
        let chart = table.chart
        let node = Int(record.target) + 1
        let feature = featureName(record.feature)
        do throws(UniFlowError) {
            let json = try JSONParser.parse(text)
            guard let object = json.objectValue else {
                throw UniFlowError(.schema, "\(feature).\(chart.nodes[node].path): payload must be an object, got \(json.jsonTypeName)")
            }
            var nodes = [node] + chart.properAncestors(node)
            if record.state >= 0 { nodes += table.values[Int(record.state)].active }
            var fields: [FieldDefinition] = []
            for n in nodes {
                for field in chart.nodes[n].fields where !fields.contains(where: { $0.name == field.name }) {
                    // Named or not: a field not named keeps its value.
                    fields.append(FieldDefinition(name: field.name, type: field.type, optional: true))
                }
            }
            scratch.via.became = try StateDefinition(name: chart.nodes[node].path, fields: fields)
                .checkPayload(object, feature: feature)
            scratch.via.lastBecomeFailure = nil
        } catch {
            scratch.via.lastBecomeFailure = error.status == .invalidJSON ? UniFlowError(.schema, error.message) : error
            throw error
        }
    }
}
