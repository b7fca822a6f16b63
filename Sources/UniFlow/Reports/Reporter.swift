import CUniFlow

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

/// The reporter (`docs/processing.md`, "Reports"): the host's (`uf_set_reporter`)
/// or the built-in one, which prints to stderr per the `reporting` option.
///
/// It owns the host's reporter, those replaced while it was being called (their
/// `payload_free` waits until it returns), and `active`, whether reports are
/// built at all. It decides what a report says (the host's JSON, or the
/// built-in line); what it needs to name actions and show mutations comes
/// through a `ReportContext`.
///
/// It never calls the host. A host reporter may call the dispatcher back (replace
/// itself, end a subscription, add a watch whose rule fails and is reported), and
/// each of those changes `Dispatcher.reporter`; a callback made from inside one
/// of this type's mutating methods would overlap the access that method holds (a
/// trap where exclusivity is checked, a corrupted value where it is not). So
/// `output` only says what to send, and the dispatcher's glue
/// (`Dispatcher.report`, `Reports/Dispatcher+Reports.swift`) calls the host with
/// no access to the reporter open, between `beginCall` and `endCall`, and runs
/// the `payload_free`s they hand back once no access is open either.
struct Reporter {
    /// The host's reporter; nil: the built-in one.
    private(set) var custom: HostCallback<uf_report_fn>?
    /// What the built-in reporter prints (option `reporting`).
    let level: DispatcherOptions.Reporting
    /// Reports cost JSON; they are built only when someone reads them: a host
    /// reporter, or a `reporting` level that prints. Stored, not computed: the
    /// hot path reads it on every dispatch.
    private(set) var active: Bool
    /// The host's reporter is being called: replacing it from inside itself defers its release.
    private var running = false
    private var retired: [HostCallback<uf_report_fn>] = []

    init(level: DispatcherOptions.Reporting) {
        self.level = level
        active = level != .none
    }

    /// What one report becomes.
    enum Output {
        /// The JSON text for the host's reporter.
        case host(String)
        /// The built-in reporter's line, newline included.
        case line(String)
    }

    // MARK: The host's reporter

    /// Replaces the host's reporter (nil: back to the built-in one). Returns the
    /// `payload_free` of the old one to run now; while it is being called, its
    /// release waits for `endCall`.
    mutating func replace(with new: HostCallback<uf_report_fn>?) -> PendingRelease? {
        let old = custom
        custom = new
        active = custom != nil || level != .none
        guard var old else { return nil }
        if running {
            retired.append(old)
            return nil
        }
        return old.takeRelease()
    }

    /// The host's reporter is about to be called (nil: there is none).
    mutating func beginCall() -> HostCallback<uf_report_fn>? {
        guard let custom else { return nil }
        running = true
        return custom
    }

    /// The host's reporter returned: the `payload_free`s of those it replaced
    /// meanwhile, to run now.
    mutating func endCall() -> [PendingRelease] {
        running = false
        guard !retired.isEmpty else { return [] }
        defer { retired.removeAll() }
        return retired.indices.map { retired[$0].takeRelease() }
    }

    /// Forgets every reporter (`uf_dispatcher_free`); returns their `payload_free`s.
    mutating func takeAll() -> [PendingRelease] {
        var releases: [PendingRelease] = []
        if var custom { releases.append(custom.takeRelease()) }
        custom = nil
        active = level != .none
        for i in retired.indices { releases.append(retired[i].takeRelease()) }
        retired.removeAll()
        return releases
    }

    // MARK: What a report says

    /// The report for the host's reporter, or the built-in line; nil when
    /// nobody reads it.
    func output(_ event: ReportEvent, action: ActionHeader?, failure: UniFlowError?, mutation: MutationRecord?,
                details: ReportDetails, _ context: some ReportContext) -> Output? {
        if custom != nil {
            var object = JSONObject()
            object["event"] = .string(event.rawValue)
            if let action { object["action"] = .object(context.actionDescription(action)) }
            if let failure {
                object["status"] = .string(failure.status.name)
                object["reason"] = .string(failure.message)
            }
            if let binding = details.binding { object["binding"] = .string(binding) }
            if details.aboutTimer { object["timer"] = details.timer.map { .string(String(cString: $0)) } ?? .null }
            if let subscription = details.subscription { object["subscription"] = .int(Int64(bitPattern: subscription)) }
            if let seq = details.seq { object["seq"] = .int(Int64(bitPattern: seq)) }
            if let watch = details.watch { object["watch"] = .int(Int64(bitPattern: watch)) }
            return .host(JSONValue.object(object).jsonText)
        }
        guard level != .none else { return nil }
        var line = "[uniflow] \(event.rawValue)"
        if let action { line += " \(context.actionName(action))" }
        if details.aboutTimer { line += " timer \(details.timer.map { String(cString: $0) } ?? "(anonymous)")" }
        if let watch = details.watch { line += " watch \(watch)" }
        if let subscription = details.subscription { line += " subscription \(subscription)" }
        if let seq = details.seq { line += " seq \(seq)" }
        if let failure { line += ": \(failure.status.name): \(failure.message)" }
        // Verbose names a binding by its whole sentence, which brackets its scenario itself.
        if let binding = details.binding { line += level == .verbose ? " \(binding)" : " [\(binding)]" }
        if level == .verbose, let mutation {
            line += "\n[uniflow]   \(context.mutationText(mutation))"
        }
        return .line(line + "\n")
    }
}
