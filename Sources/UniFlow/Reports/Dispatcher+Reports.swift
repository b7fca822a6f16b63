import CUniFlow
import Glibc

/// What a report is about (`docs/processing.md`, "Reports").
enum ReportEvent: String {
    case processed, rejected, dropped
    case bindingProcessed = "binding_processed"
    case bindingRejected = "binding_rejected"
    case bindingSkipped = "binding_skipped"
    case timerFired = "timer_fired"
    case timerRejected = "timer_rejected"
}

/// The keys of a report beyond its event, action and failure.
struct ReportDetails {
    var binding: String?
    /// A timer's report: its id (nil: anonymous).
    var timer: UnsafePointer<CChar>?
    var aboutTimer = false
    /// A dropped deferred delivery: its subscription and mutation.
    var subscription: UInt64?
    var seq: UInt64?
    /// A watch's rule error: the watch.
    var watch: UInt64?
}

extension Dispatcher {
    /// Reports cost JSON; they are built only when someone reads them.
    @inline(__always)
    var reportingActive: Bool { reporter.custom != nil || options.reporting != .none }

    /// Replaces the reporter (nil: back to the built-in one).
    func setReporter(_ new: HostCallback<uf_report_fn>?) throws(UniFlowError) {
        try refuseWhileClosing("uf_set_reporter")
        let old = reporter.custom
        reporter.custom = new
        guard var old else { return }
        if reporter.running { reporter.retired.append(old) } else { old.release() }
    }

    /// Sends one report to the custom reporter or prints it per `reporting`.
    func report(_ event: ReportEvent, action: ActionHeader?, failure: UniFlowError? = nil,
                mutation: MutationRecord? = nil, binding: String? = nil) {
        report(event, action: action, failure: failure, mutation: mutation, details: ReportDetails(binding: binding))
    }

    func report(_ event: ReportEvent, action: ActionHeader?, failure: UniFlowError? = nil,
                mutation: MutationRecord? = nil, details: ReportDetails) {
        if let custom = reporter.custom {
            var object = JSONObject()
            object["event"] = .string(event.rawValue)
            if let action { object["action"] = .object(actionDescription(action)) }
            if let failure {
                object["status"] = .string(failure.status.name)
                object["reason"] = .string(failure.message)
            }
            if let binding = details.binding { object["binding"] = .string(binding) }
            if details.aboutTimer { object["timer"] = details.timer.map { .string(String(cString: $0)) } ?? .null }
            if let subscription = details.subscription { object["subscription"] = .int(Int64(bitPattern: subscription)) }
            if let seq = details.seq { object["seq"] = .int(Int64(bitPattern: seq)) }
            if let watch = details.watch { object["watch"] = .int(Int64(bitPattern: watch)) }
            let text = JSONValue.object(object).jsonText
            reporter.running = true
            text.withCString { custom.function($0, custom.payload) }
            reporter.running = false
            for i in reporter.retired.indices { reporter.retired[i].release() }
            reporter.retired.removeAll()
            return
        }
        guard options.reporting != .none else { return }
        var line = "[uniflow] \(event.rawValue)"
        if let action { line += " \(actionName(action))" }
        if details.aboutTimer { line += " timer \(details.timer.map { String(cString: $0) } ?? "(anonymous)")" }
        if let watch = details.watch { line += " watch \(watch)" }
        if let subscription = details.subscription { line += " subscription \(subscription)" }
        if let seq = details.seq { line += " seq \(seq)" }
        if let failure { line += ": \(failure.status.name): \(failure.message)" }
        // Verbose names a binding by its whole sentence, which brackets its scenario itself.
        if let binding = details.binding { line += options.reporting == .verbose ? " \(binding)" : " [\(binding)]" }
        if options.reporting == .verbose, let mutation {
            line += "\n[uniflow]   \(mutationJSON(mutation, scratch.delivery).jsonText)"
        }
        // The C `stderr` global is not concurrency-safe in Swift; fd 2 is the same stream, unbuffered.
        let text = line + "\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
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
                if index >= 0 { object[name] = .string(stateName(index, feature: action.feature)) }
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
