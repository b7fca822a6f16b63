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

    /// The action as reports and mutations show it: kind, feature, key, state
    /// keys, event, scope, context, id and timer; never the payload.
    func actionDescription(_ action: ActionHeader) -> JSONObject {
        var object = JSONObject()
        object["kind"] = .string(action.kind.rawValue)
        object["feature"] = .string(featureName(action.feature))
        if let key = action.key { object["key"] = .string(String(cString: key)) }
        let from: JSONValue? = action.from >= 0 ? .string(stateName(action.from, feature: action.feature)) : nil
        let into: JSONValue? = action.into >= 0 ? .string(stateName(action.into, feature: action.feature)) : nil
        switch action.kind {
        case .initialize: object["into"] = into
        case .actualize: object["in"] = into
        case .transition:
            object["from"] = from
            object["into"] = into
            if action.from < 0 { object["same"] = .bool(action.same) }
        case .deinitialize: object["from"] = from
        case .trigger:
            if let from { object["in"] = from } else { object["initialized"] = .bool(!action.uninitialized) }
        case .send:
            object["event"] = .string(action.eventName.map { String(cString: $0) } ?? "")
            // Once its target is chosen.
            object["into"] = into
        }
        if let scope = action.scope { object["scope"] = .string(String(cString: scope)) }
        if let context = action.context { object["context"] = .string(String(cString: context)) }
        if let id = action.id { object["id"] = .string(String(cString: id)) }
        if action.byTimer { object["timer"] = action.timer.map { .string(String(cString: $0)) } ?? .null }
        return object
    }
}
