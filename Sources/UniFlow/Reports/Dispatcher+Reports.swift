import CUniFlow
import Glibc

/// The dispatcher's side of the reporter (`reporter`, `Reports/Reporter.swift`):
/// what it needs to word a report (`ReportContext`), and the calls to the host,
/// which only the dispatcher makes (see `Reporter` for why).
extension Dispatcher: ReportContext {
    /// Reports cost JSON; they are built only when someone reads them. A plain
    /// stored Bool (`Reporter.active`): the hot path reads it.
    @inline(__always)
    var reportingActive: Bool { reporter.active }

    /// Replaces the reporter (nil: back to the built-in one).
    func setReporter(_ new: HostCallback<uf_report_fn>?) throws(UniFlowError) {
        try refuseWhileClosing("uf_set_reporter")
        reporter.replace(with: new)?.run()
    }

    /// Forgets every reporter, running each `payload_free` once (`uf_dispatcher_free`).
    func releaseReporters() {
        for release in reporter.takeAll() { release.run() }
    }

    /// Sends one report to the custom reporter or prints it per `reporting`.
    func report(_ event: ReportEvent, action: ActionHeader?, failure: UniFlowError? = nil,
                mutation: MutationRecord? = nil, binding: String? = nil) {
        report(event, action: action, failure: failure, mutation: mutation, details: ReportDetails(binding: binding))
    }

    func report(_ event: ReportEvent, action: ActionHeader?, failure: UniFlowError? = nil,
                mutation: MutationRecord? = nil, details: ReportDetails) {
        switch reporter.output(event, action: action, failure: failure, mutation: mutation, details: details, self) {
        case .host(let text)?:
            // No access to `reporter` is open while the host runs: it may replace it.
            guard let custom = reporter.beginCall() else { return }
            text.withCString { custom.function($0, custom.payload) }
            for release in reporter.endCall() { release.run() }
        case .line(let text)?:
            // The C `stderr` global is not concurrency-safe in Swift; fd 2 is the same stream, unbuffered.
            _ = text.withCString { write(2, $0, strlen($0)) }
        case nil:
            return
        }
    }

    /// A watch's rule failed: its value is `null`.
    func reportWatch(_ id: UInt64, _ failure: UniFlowError) {
        guard reportingActive else { return }
        report(.bindingRejected, action: nil, failure: failure, details: ReportDetails(watch: id))
    }


    /// `context@scope`, or `Feature.kind` when neither is given.
    func actionName(_ action: ActionHeader) -> String {
        let scope = action.scope.map { String(cString: $0) }
        let context = action.context.map { String(cString: $0) }
        if scope == nil && context == nil { return "\(subject(action)).\(action.kind.rawValue)" }
        return "\(context ?? "")@\(scope ?? "")"
    }

    /// The action as reports and mutations show it: the fields of
    /// `ActionField.reportOrder` under their JSON keys (kind, feature, key, state
    /// keys, event, scope, context, id and timer); never the payload.
    func actionDescription(_ action: ActionHeader) -> JSONObject {
        var object = JSONObject()
        for field in ActionField.reportOrder {
            guard let name = field.reportName(on: action.kind)?.description else { continue }
            switch (field.value, field.resolution) {
            case (.kind, _):
                object[name] = .string(action.kind.rawValue)
            case (.text, .feature):
                object[name] = .string(featureName(action.feature))
            case (.text, .state):
                let index = action[state: field]
                // A statechart's actions name nodes, not instance values (`statechartNodePath`).
                if index >= 0 { object[name] = .string(charts.any ? statechartNodePath(index, feature: action.feature) ?? stateName(index, feature: action.feature) : stateName(index, feature: action.feature)) }
            case (.text, _) where field == .timer:
                // Only on what a timer submitted; null for an anonymous timer.
                if action.byTimer { object[name] = action.timer.map { .string(String(cString: $0)) } ?? .null }
            case (.text, _):
                if let text = action[text: field] {
                    object[name] = .string(String(cString: text))
                } else if field.use(on: action.kind) == .required {
                    object[name] = .string("")
                }
            case (.flag, _):
                // Shown where the kind takes it, unless the field it excludes is given.
                if let excluded = field.excludes, action[state: excluded] >= 0 { continue }
                object[name] = .bool(action[flag: field] != field.jsonNegated)
            case (.object, _), (.list, _), (.callback, _):
                continue
            }
        }
        return object
    }
}
