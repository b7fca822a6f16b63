import Glibc

/// The dispatcher's side of persistence (`docs/journal.md`): what the journal
/// writer and a replay need of it (`JournalContext`), the calls the pipeline
/// makes (each forwards to `journal`, `Persistence/JournalWriter.swift`), and
/// what only the dispatcher can do with what they give: install a model, arm
/// its timers. Lines are written before what they describe is applied: an
/// action whose line cannot be written fails with `UF_EIO` and changes nothing.
extension Dispatcher: JournalContext {
    // MARK: The context

    var definitionCount: Int { definitions.count }
    func definitionSource(_ index: Int) -> String { definitions.source(index) }
    /// The time a journal line records: the wall clock, or the manual reading.
    var journalTime: UInt64 { time.journalTime }
    var currentSeq: UInt64 { model.seq }
    var timerClock: DispatcherClock { time.clock }

    func stateTimerName(_ place: Place, after i: Int) -> String { time.stateTimerID(place, after: i, self) }

    func checkTimerAction(_ action: JSONValue) throws(UniFlowError) {
        _ = try resolve(try ActionRequest.decode(action), hasVia: false)
    }

    // MARK: Writing

    /// The header a registration writes (`JournalWriter.registration`).
    func journalRegistration(adding: [FeatureDefinition]) throws(UniFlowError) {
        try journal?.registration(adding: adding, self)
    }

    /// An applied mutation's line, written before it is stored (`Pipeline/Dispatcher+Commit.swift`).
    func journalMutation(_ mutation: CommittedMutation) throws(UniFlowError) {
        try journal?.mutation(mutation, self)
    }

    /// A batch's one line, once every action of it holds (`JournalWriter.batch`).
    func journalBatch(_ mutations: [CommittedMutation], timerLines: [(after: Int, line: JSONObject)]) throws(UniFlowError) {
        try journal?.batch(mutations, timerLines: timerLines, self)
    }

    /// An API timer armed, cancelled or fired; a state timer fired. Inside a
    /// batch the line waits for the batch's own line (it is dropped if the
    /// batch rolls back, as what it describes is). On a partitioned dispatcher
    /// the line goes into the outer call's record too (followers keep the
    /// writer's timers from them), journal or not.
    func journalTimer(_ line: JSONObject) throws(UniFlowError) {
        guard journal != nil || staging != nil else { return }
        try journalTimer(line, at: journalTime)
    }

    /// `journalTimer` stamped `at` (what the timer service reads from its clock).
    func journalTimer(_ line: JSONObject, at stamp: UInt64) throws(UniFlowError) {
        guard journal != nil || staging != nil else { return }
        var line = line
        line["at"] = .int(Int64(stamp))
        if batch != nil {
            // A staged call counts its mutations in `staging`, a batch in `batch`.
            batch!.timerLines.append((staging?.committed.count ?? batch!.committed, line))
            return
        }
        try journal!.write(line)
    }

    /// Installs a model wholesale and journals it as one restore line. With
    /// `plan` nil (`uf_state_restore`), its state timers are armed afresh and API
    /// timers stay. Otherwise (a snapshot restore, a replay) `plan` gives, once
    /// the model is in, the timers that replace every armed one, in the order to
    /// arm them; the line lists them (with the serials the API timers are about
    /// to get), so that a replay of this journal arms the same. When the line
    /// cannot be written, or the timer thread the timers need cannot be started,
    /// the model and its state timers are put back and nothing else changes.
    func installJournaled(_ snapshot: ModelSnapshot, replacing before: ModelSnapshot,
                          plan: (() -> [PlannedTimer])? = nil) throws(UniFlowError) {
        let saved = hot.journaling || plan != nil ? time.savedStateTimers(self) : []
        try install(snapshot)
        let planned = plan?()
        if let planned, !planned.isEmpty {
            // Timers nothing could fire are not armed: the call fails instead.
            do throws(UniFlowError) {
                try time.startThreadIfNeeded(self)
            } catch {
                try? install(before)
                time.rearm(saved, self)
                throw error
            }
        }
        // What the model lists runs again once it is in; its line lists that.
        let listed = charts.any ? restartableInvocations(snapshot.invocations) : [:]
        if hot.journaling, let journal {
            var timers: JSONValue? = nil
            if let planned { timers = time.restoreLineJSON(planned, self) }
            do throws(UniFlowError) {
                if charts.any { charts.services.restoring = listed }
                defer { charts.services.restoring = nil }
                try journal.restore(model: modelJSON(), seq: model.seq, timers: timers, self)
            } catch {
                // The room `before` needs was there a moment ago.
                try? install(before)
                time.rearm(saved, self)
                throw error
            }
        }
        if let planned {
            time.cancelAllAPITimers(self)
            for timer in planned { time.arm(timer, self) }
        } else {
            time.armAllStateTimersAfresh(self)
        }
        // Statecharts' services run again for the model now in (new serials).
        if charts.any { restartStatechartServices(listed) }
    }

    /// Installs a journal's mutations the way a restore does: no callbacks, no
    /// bindings, no notifications; the timers the journaling dispatcher had armed
    /// are armed again (`docs/time.md`, "Durable timers"). A torn last line is
    /// skipped (and reported); any other bad line fails the whole replay and
    /// changes nothing. Reading is `JournalReplay`'s; installing and arming, here.
    func replay(path: UnsafePointer<CChar>) throws(UniFlowError) {
        let replay = try JournalReplay(path: path)
        let before = ModelSnapshot(of: self)
        let state = try replay.read(from: before, ownSession: journal?.session, self)
        // Nothing can fail past this point but the journal of this dispatcher.
        // The timers are armed in the order the journaling dispatcher armed
        // them, so that those due at one instant fire in the same order. The
        // restore line it writes carries the replayed seq: a later replay of it
        // must not count again from an earlier one.
        let seqBefore = model.seq
        model.seq = max(model.seq, state.lastSeq)
        do throws(UniFlowError) {
            try installJournaled(state.model, replacing: before) {
                var timers: [(order: UInt64, rank: Int, timer: PlannedTimer)] = []
                self.forEachTimedPlace { place, _, definitions in
                    for (i, definition) in definitions.enumerated() {
                        guard let (deadline, order) = state.stateTimerDeadline(place, after: i, timer: definition, self) else { continue }
                        timers.append((order, timers.count, PlannedTimer(kind: .state(place, after: i), deadline: deadline, ms: definition.ms)))
                    }
                }
                for timer in state.apiTimers.values {
                    // An API timer keeps its wall-clock deadline.
                    let planned = PlannedTimer(kind: .api(action: JSONValue.object(timer.action).jsonText, id: timer.id),
                                               deadline: self.time.clock.time(atWallClock: timer.dueAt), ms: timer.ms)
                    timers.append((timer.order, timers.count, planned))
                }
                return timers.sorted { ($0.order, $0.rank) < ($1.order, $1.rank) }.map(\.timer)
            }
        } catch {
            model.seq = seqBefore
            throw error
        }
        if let tornLine = replay.tornLine {
            let failure = UniFlowError(.invalidJSON, "\(replay.name): line \(tornLine) is incomplete (no newline); skipped")
            if reportingActive { report(.dropped, action: nil, failure: failure) }
        }
    }
}
