import CUniFlow

/// A partition snapshot's timers: each one's deadline as a wall-clock time,
/// so that a node started from the snapshot fires them when the writer would
/// have (its state timers are not started afresh), and API timers with the
/// writer's serials, which later records name them by.
extension Dispatcher {
    /// What a partition snapshot says of one timer, checked.
    enum PartitionSnapshotTimer {
        case state(id: String, dueAt: UInt64)
        case api(JournalState.APITimer)
    }

    /// The live timers of partition `p`, soonest first: `{"kind": "state",
    /// "id", "due_at"}` or `{"kind": "api", "serial", "id", "ms", "due_at",
    /// "action"}` (an API timer as a record's armed line has it).
    func partitionTimersJSON(_ p: Int) -> JSONValue {
        var list: [JSONValue] = []
        for index in time.store.sortedLive() where timerPartition(index) == p {
            let record = time.store.records[Int(index)]
            let dueAt = JSONValue.int(Int64(clamping: time.clock.wallClock(at: record.deadline)))
            if record.isState {
                list.append(["kind": "state", "id": .string(time.timerID(index, self)!), "due_at": dueAt])
            } else {
                list.append(["kind": "api", "serial": .int(Int64(clamping: record.serial)),
                             "id": record.id.map { .string(String(cString: $0)) } ?? .null,
                             "ms": .int(Int64(clamping: record.ms)), "due_at": dueAt,
                             "action": (try? JSONParser.parse(record.action!)) ?? .null])
            }
        }
        return .array(list)
    }

    /// A snapshot's `timers`, checked before anything changes (absent: none).
    func snapshotTimers(_ value: JSONValue?) throws(UniFlowError) -> [PartitionSnapshotTimer]? {
        guard let value else { return nil }
        guard let list = value.arrayValue else { throw UniFlowError(.schema, "snapshot.timers: expected an array, got \(value.jsonTypeName)") }
        return try list.enumerated().map { (i, item) throws(UniFlowError) -> PartitionSnapshotTimer in
            do throws(UniFlowError) {
                guard let timer = item.objectValue else { throw UniFlowError(.schema, "expected an object, got \(item.jsonTypeName)") }
                switch timer["kind"]?.stringValue {
                case "state":
                    guard let id = timer["id"]?.stringValue, case .int(let due)? = timer["due_at"], due >= 0 else {
                        throw UniFlowError(.schema, "a state timer needs 'id' and 'due_at'")
                    }
                    return .state(id: id, dueAt: UInt64(due))
                case "api":
                    let api = try JournalState.armedTimer(timer, self)
                    guard api.serial >= 0 else { throw UniFlowError(.schema, "'serial' is at least 0") }
                    return .api(api)
                default:
                    throw UniFlowError(.schema, "'kind' is \"state\" or \"api\"")
                }
            } catch {
                throw error.prefixed("snapshot.timers[\(i)]")
            }
        }
    }

    /// Once a snapshot's model is in partition `p`: the partition's API timers
    /// are the snapshot's, and each state timer the snapshot names keeps its
    /// deadline. The model's install armed its state timers afresh: one the
    /// snapshot does not name had fired at the writer while its place stayed,
    /// and goes (a snapshot without `timers` keeps them all, started afresh).
    func installSnapshotTimers(_ timers: [PartitionSnapshotTimer]?, partition p: Int) {
        guard let timers else { return }
        for index in time.store.sortedLive() where !time.store.records[Int(index)].isState && timerPartition(index) == p {
            _ = time.take(index, self)
        }
        var deadlines: [String: UInt64] = [:]
        for timer in timers {
            switch timer {
            case .state(let id, let dueAt):
                deadlines[id] = time.clock.time(atWallClock: dueAt)
            case .api(let api):
                applyTimerLine(.armed(api, replaces: nil), partition: p)
            }
        }
        var saved: [SavedStateTimer] = []
        for index in time.store.sortedLive() where time.store.records[Int(index)].isState && timerPartition(index) == p {
            guard let id = time.timerID(index, self), let deadline = deadlines[id] else {
                _ = time.take(index, self)
                continue
            }
            let record = time.store.records[Int(index)]
            let place = Place(feature: record.feature, instance: record.instance)
            saved.append(SavedStateTimer(feature: record.feature, key: key(at: place).map { String(cString: $0) },
                                         after: Int(record.after), deadline: deadline, serial: record.serial))
            _ = time.take(index, self)
        }
        time.rearm(saved, self)
    }
}
