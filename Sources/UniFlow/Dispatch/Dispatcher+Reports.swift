import CUniFlow
import Glibc

/// A host reporter (`uf_set_reporter`).
final class CustomReporter {
    let fn: uf_report_fn
    let payload: UnsafeMutableRawPointer?
    private var payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?

    init(fn: uf_report_fn, payload: UnsafeMutableRawPointer?, payloadFree: (@convention(c) (UnsafeMutableRawPointer?) -> Void)?) {
        self.fn = fn
        self.payload = payload
        self.payloadFree = payloadFree
    }

    /// Runs `payload_free` once.
    func release() {
        let free = payloadFree
        payloadFree = nil
        free?(payload)
    }
}

/// What a report is about (SPEC 4.6).
enum ReportEvent: String {
    case processed, rejected, dropped
    case bindingProcessed = "binding_processed"
    case bindingRejected = "binding_rejected"
    case bindingSkipped = "binding_skipped"
}

extension Dispatcher {
    /// Reports cost JSON; they are built only when someone reads them.
    @inline(__always)
    var reportingActive: Bool { reporter != nil || options.reporting != .none }

    /// Replaces the reporter (nil: back to the built-in one).
    func setReporter(_ new: CustomReporter?) throws(UniFlowError) {
        try refuseWhileClosing("uf_set_reporter")
        let old = reporter
        reporter = new
        guard let old else { return }
        if reporterRunning { retiredReporters.append(old) } else { old.release() }
    }

    /// Sends one report to the custom reporter or prints it per `reporting`.
    func report(_ event: ReportEvent, action: ActionHeader, failure: UniFlowError? = nil,
                mutation: MutationRecord? = nil, binding: String? = nil) {
        if let reporter {
            var object = JSONObject()
            object["event"] = .string(event.rawValue)
            object["action"] = .object(actionDescription(action))
            if let failure {
                object["status"] = .string(failure.status.name)
                object["reason"] = .string(failure.message)
            }
            if let binding { object["binding"] = .string(binding) }
            let text = JSONValue.object(object).jsonText
            reporterRunning = true
            text.withCString { reporter.fn($0, reporter.payload) }
            reporterRunning = false
            for retired in retiredReporters { retired.release() }
            retiredReporters.removeAll()
            return
        }
        guard options.reporting != .none else { return }
        var line = "[uniflow] \(event.rawValue) \(actionName(action))"
        if let failure { line += ": \(failure.status.name): \(failure.message)" }
        // Verbose names a binding by its whole sentence, which brackets its scenario itself.
        if let binding { line += options.reporting == .verbose ? " \(binding)" : " [\(binding)]" }
        if options.reporting == .verbose, let mutation {
            line += "\n[uniflow]   \(mutationJSON(mutation).jsonText)"
        }
        // The C `stderr` global is not concurrency-safe in Swift; fd 2 is the same stream, unbuffered.
        let text = line + "\n"
        _ = text.withCString { write(2, $0, strlen($0)) }
    }

    /// `context@scope`, or `Feature.kind` when neither is given (SPEC 3).
    func actionName(_ action: ActionHeader) -> String {
        let scope = action.scope.map { String(cString: $0) }
        let context = action.context.map { String(cString: $0) }
        if scope == nil && context == nil { return "\(featureName(action.feature)).\(action.kind.rawValue)" }
        return "\(context ?? "")@\(scope ?? "")"
    }

    /// The action as reports and mutations show it: kind, feature, state keys,
    /// scope, context and id; never the payload.
    func actionDescription(_ action: ActionHeader) -> JSONObject {
        var object = JSONObject()
        object["kind"] = .string(action.kind.rawValue)
        object["feature"] = .string(featureName(action.feature))
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
        }
        if let scope = action.scope { object["scope"] = .string(String(cString: scope)) }
        if let context = action.context { object["context"] = .string(String(cString: context)) }
        if let id = action.id { object["id"] = .string(String(cString: id)) }
        return object
    }
}
