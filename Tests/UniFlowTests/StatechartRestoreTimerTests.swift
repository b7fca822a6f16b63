import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// A statechart instance's state number counts interned values (configuration,
/// history, status), not the feature's states: four parallel regions of two
/// states each have 16 configurations but 12 states. Restoring a model must
/// never read a chart's number as a flat state's (whose state timers lie in
/// the table after the chart's), so a restore arms exactly the model's timers.
@Suite struct StatechartRestoreTimerTests {
    static let chart = #"""
    {"feature": "Grid", "type": "parallel",
     "states": {"R1": {"initial": "A", "states": {"A": {"on": {"one": "R1.B"}}, "B": {}}},
                "R2": {"initial": "A", "states": {"A": {"on": {"two": "R2.B"}}, "B": {}}},
                "R3": {"initial": "A", "states": {"A": {"on": {"three": "R3.B"}}, "B": {}}},
                "R4": {"initial": "A", "states": {"A": {"on": {"four": "R4.B"}}, "B": {}}}}}
    """#
    /// Registered after the chart: its states' slots follow the chart's, and
    /// every one of them has a timer.
    static let clock = #"""
    {"feature": "Clock", "states": {"Tick": {"after": [{"ms": 50, "submit": [{"kind": "transition", "feature": "Clock", "into": "Tock"}]}]},
                                    "Tock": {"after": [{"ms": 50, "submit": [{"kind": "transition", "feature": "Clock", "into": "Tick"}]}]},
                                    "Idle": {"after": [{"ms": 70, "submit": [{"kind": "transition", "feature": "Clock", "into": "Tick"}]}]},
                                    "Stop": {"after": [{"ms": 90, "submit": [{"kind": "transition", "feature": "Clock", "into": "Tick"}]}]}}}
    """#

    /// Grid driven through every configuration, so that its last values have
    /// numbers past its 12 states.
    private func driven() -> Harness {
        let h = Harness.manual("", Self.chart, Self.clock)
        for mask in 0..<16 {
            #expect(h.submit(#"{"kind":"initialize","feature":"Grid","into":"R1"}"#) == UF_OK, "\(h.lastError)")
            for (bit, event) in ["one", "two", "three", "four"].enumerated() where mask & (1 << bit) != 0 {
                #expect(uf_send(h.d, "Grid", nil, event, nil) == UF_OK, "\(h.lastError)")
            }
            if mask != 15 { #expect(h.submit(#"{"kind":"deinitialize","feature":"Grid"}"#) == UF_OK) }
        }
        #expect(h.feature("Grid") == #"{"state":"R1.B,R2.B,R3.B,R4.B","payload":{}}"#)
        return h
    }

    @Test func aRestoredModelArmsNoTimerForAChartsInstance() {
        let h = driven()
        #expect(h.timers == "[]")
        #expect(uf_state_restore(h.d, h.state) == UF_OK, "\(h.lastError)")
        #expect(h.timers == "[]", "the chart has no state timer, and Clock is not initialized")
        #expect(h.feature("Grid") == #"{"state":"R1.B,R2.B,R3.B,R4.B","payload":{}}"#)
    }

    @Test func aRestoredSnapshotArmsOnlyItsOwnTimers() {
        let h = driven()
        #expect(h.submit(#"{"kind":"initialize","feature":"Clock","into":"Tick"}"#) == UF_OK, "\(h.lastError)")
        let snapshot = h.snapshot
        let timers = h.timers
        #expect(uf_snapshot_restore(h.d, snapshot) == UF_OK, "\(h.lastError)")
        #expect(h.timers == timers)
        h.advance(50)
        #expect(h.feature("Clock") == #"{"state":"Tock","payload":{}}"#)
    }
}
