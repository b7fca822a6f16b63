import CUniFlow
import Glibc

/// The last steps of the pipeline: commit (journal, store, state timers) and
/// announcement (model bindings, subscribers, the reporter).
extension Dispatcher {
    /// Journals the mutation, then stores the new state and payload (making or
    /// ending an instance); nobody is told yet. Fails, changing nothing, when the
    /// journal cannot be written (`UF_EIO`) or an instance cannot be made (`UF_ENOMEM`).
    func commit(_ action: ActionHeader, kind: MutationKind, at given: Place, from current: Int32,
                payload: JSONObject?, policy: CommitPolicy) throws(UniFlowError) -> CommittedMutation {
        var place = given
        let newState: Int32 = kind == .deinitialization ? -1 : action.into
        var newPayload: JSONObject? = nil
        if newState >= 0 {
            if let payload {
                newPayload = payload.isEmpty ? nil : payload
            } else if stateSlot(newState, of: hot.features[Int(action.feature)]).hasFields {
                // Entered automatically: an auto state's defaults fill in.
                let defaults = (try? stateDefinition(newState, of: action.feature).checkPayload(nil, feature: featureName(action.feature))) ?? JSONObject()
                newPayload = defaults.isEmpty ? nil : defaults
            }
        }
        let oldPayload = current >= 0 ? storedPayload(at: place) : nil
        let keyed = hot.features[Int(action.feature)].instances >= 0
        if keyed && kind == .initialization { place = try createInstance(action.key!, of: action.feature) }
        var mutation = CommittedMutation(
            record: MutationRecord(dispatcher: UnsafeMutableRawPointer(handle), seq: model.seq &+ 1, kind: kind,
                                   feature: action.feature, oldState: current, newState: newState, key: key(at: place)),
            action: action, place: place)
        mutation.oldPayload = oldPayload
        mutation.newPayload = newPayload
        if hot.journaling {
            do throws(UniFlowError) {
                try journalMutation(mutation)
            } catch {
                if keyed && kind == .initialization { discardInstance(at: place) }
                throw error
            }
        }
        if policy != .immediate && !(keyed && kind == .deinitialization) {
            batch!.undo.append(kind == .initialization && keyed
                ? .created(table: hot.features[Int(action.feature)].instances, slot: place.instance)
                : .stored(place, state: current, payload: oldPayload))
        }
        // State timers first: an instance's are found through its slot, which a
        // deinitialization frees (a rolled-back batch undoes both).
        stateChanged(at: place, kind: kind, into: newState, field: timerField(place))
        if keyed && kind == .deinitialization {
            removeInstance(at: place)
        } else {
            store(newState, payload: newPayload, at: place)
        }
        model.seq &+= 1
        if policy == .immediate { noteCommitted(mutation) }
        return mutation
    }

    /// Tells the watches that read the feature (a batch does once it holds).
    @inline(__always)
    func noteCommitted(_ mutation: CommittedMutation) {
        if hot.features[Int(mutation.record.feature)].watched || hot.watchingAll { noteChange(of: mutation.record.feature) }
    }

    /// Ends an instance made for a mutation that then failed: nobody saw it.
    private func discardInstance(at place: Place) {
        let table = Int(hot.features[Int(place.feature)].instances)
        free(hot.instanceTables.pointer(table).pointee.remove(place.instance))
    }

    /// Runs the model bindings, the subscribers and the reporter for a committed mutation.
    @inline(__always)
    func announce(_ mutation: CommittedMutation) {
        var record = mutation.record
        lendToCallbacks(mutation)
        let kindBit = MutationKind.bit(record.kind)
        let subscribedBefore = registrationIDs.next
        if (hot.features[Int(record.feature)].bindingKinds | hot.anyBindingKinds) & kindBit != 0 { runBindings(record, homes: inLineHomes) }
        deliver(&record, instanceList: instanceList(of: record), subscribedBefore: subscribedBefore, charts: charts.any)
        if reportingActive { report(.processed, action: mutation.action, mutation: record) }
        scratch.delivery.reset()
    }

    /// The first half of `announce`, for a staged call: the model bindings run
    /// while the call is processed (what they queue joins its record).
    func announceToBindings(_ mutation: CommittedMutation) {
        let record = mutation.record
        guard (hot.features[Int(record.feature)].bindingKinds | hot.anyBindingKinds) & MutationKind.bit(record.kind) != 0 else { return }
        lendToCallbacks(mutation)
        runBindings(record, homes: inLineHomes)
        scratch.delivery.reset()
    }

    /// The second half, once the staged call's record is accepted: the
    /// subscribers (those that existed when it was committed) and the reporter.
    func announceToObservers(_ mutation: CommittedMutation, subscribedBefore: UInt64) {
        var record = mutation.record
        lendToCallbacks(mutation)
        deliver(&record, instanceList: instanceList(of: record), subscribedBefore: subscribedBefore, charts: charts.any)
        if reportingActive { report(.processed, action: mutation.action, mutation: record) }
        scratch.delivery.reset()
    }

    /// The bindings that run in-line, in the call that made the mutation: all of
    /// them, but on a partitioned dispatcher writing another partition than the
    /// global one, where single features' bindings run later at their home.
    private var inLineHomes: BindingHomes {
        guard let table = partitioning, let written = partitionWritten, written != table.global else { return .all }
        return .keyedOwners
    }

    /// What the accessors of the mutation being announced read.
    @inline(__always)
    private func lendToCallbacks(_ mutation: CommittedMutation) {
        if mutation.oldPayload != nil || mutation.newPayload != nil {
            scratch.delivery.oldPayload = mutation.oldPayload
            scratch.delivery.newPayload = mutation.newPayload
        }
        scratch.delivery.action = mutation.action
    }
}

extension Dispatcher {
    /// The `F[key]` subscription list of a mutation's instance, or -1, found by
    /// its key when the mutation is announced: a batch announces its mutations
    /// after committing them all, and meanwhile subscribers may have made,
    /// ended or reused lists (the hot path reads the slot's, as it announces at once).
    func instanceList(of record: MutationRecord) -> Int32 {
        guard let key = record.key, subscriptions.hasKeyedLists else { return -1 }
        return subscriptions.list(of: InstanceName(feature: record.feature, key: String(cString: key)))
    }
}

/// A mutation applied to the model, waiting to be announced.
struct CommittedMutation {
    var record: MutationRecord
    var oldPayload: JSONObject?
    var newPayload: JSONObject?
    var action: ActionHeader
    /// Where it happened (the instance's slot, for a keyed feature).
    var place: Place

    init(record: MutationRecord, action: ActionHeader, place: Place) {
        self.record = record
        self.action = action
        self.place = place
    }
}

import Glibc
