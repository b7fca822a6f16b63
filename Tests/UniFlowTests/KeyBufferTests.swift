import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// The hot path remembers the key pointer an instance was last found by. A host
/// that reuses one buffer for its keys (a prepared `uf_action` whose key it
/// rewrites) must still reach the instance the buffer names now.
@Suite struct KeyBuffers {
    static let toggles = #"""
        {"feature": "Toggle", "instances": "keyed", "states": {"Off": {}, "On": {}}}
        """#

    /// Dispatches a transition of the instance `buffer` names into `into`.
    static func flip(_ h: Harness, _ buffer: UnsafeMutablePointer<CChar>, into: String) -> Int32 {
        into.withCString { (state) -> Int32 in
            "Toggle".withCString { (feature) -> Int32 in
                var a = uf_action()
                a.size = UInt32(MemoryLayout<uf_action>.size)
                a.kind = UF_ACTION_TRANSITION
                a.feature = feature
                a.into = state
                a.key = UnsafePointer(buffer)
                return uf_dispatch(h.d, &a)
            }
        }
    }

    @Test func oneBufferRewrittenWithOtherKeysReachesEachInstance() {
        let h = Harness(Self.toggles)
        for key in ["a", "b", "c"] {
            #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","key":"\#(key)","into":"Off"}"#) == 0)
        }
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 8)
        defer { buffer.deallocate() }
        strcpy(buffer, "a")
        #expect(Self.flip(h, buffer, into: "On") == 0)
        strcpy(buffer, "b")                      // the same pointer, another key
        #expect(Self.flip(h, buffer, into: "On") == 0)
        #expect(Self.flip(h, buffer, into: "Off") == 0)
        #expect(h.state == #"{"Toggle":{"a":{"state":"On","payload":{}},"b":{"state":"Off","payload":{}},"c":{"state":"Off","payload":{}}}}"#)

        // The instance the buffer found is gone, then made again in another slot.
        #expect(h.submit(#"{"kind":"deinitialize","feature":"Toggle","key":"b"}"#) == 0)
        #expect(Self.flip(h, buffer, into: "On") == Int32(UF_REJECTED))
        #expect(h.lastError == "Toggle[b] is not initialized")
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","key":"d","into":"Off"}"#) == 0)  // takes b's slot
        strcpy(buffer, "d")
        #expect(Self.flip(h, buffer, into: "On") == 0)
        strcpy(buffer, "b")
        #expect(Self.flip(h, buffer, into: "On") == Int32(UF_REJECTED))
        #expect(h.submit(#"{"kind":"initialize","feature":"Toggle","key":"b","into":"Off"}"#) == 0)
        #expect(Self.flip(h, buffer, into: "On") == 0)
        #expect(h.state == #"{"Toggle":{"a":{"state":"On","payload":{}},"c":{"state":"Off","payload":{}},"d":{"state":"On","payload":{}},"b":{"state":"On","payload":{}}}}"#)
    }
}

/// The hot path remembers which feature or state a caller's name pointer named,
/// and confirms the bytes on every call. A host that rewrites one buffer with
/// other names (long ones that differ only at the end included) must reach what
/// the buffer names now.
@Suite struct NameBuffers {
    static let queues = #"""
        {"feature": "DownloadQueueNorth", "states": {"Idle": {}, "WaitingForNetwork1": {}, "WaitingForNetwork2": {}}}
        """#
    static let other = #"""
        {"feature": "DownloadQueueSouth", "states": {"Idle": {}, "WaitingForNetwork1": {}, "WaitingForNetwork2": {}}}
        """#

    /// Dispatches a transition of the feature `feature` names into the state `into` names.
    static func move(_ h: Harness, _ feature: UnsafeMutablePointer<CChar>, into: UnsafeMutablePointer<CChar>) -> Int32 {
        var a = uf_action()
        a.size = UInt32(MemoryLayout<uf_action>.size)
        a.kind = UF_ACTION_TRANSITION
        a.feature = UnsafePointer(feature)
        a.into = UnsafePointer(into)
        return uf_dispatch(h.d, &a)
    }

    @Test func oneBufferRewrittenWithOtherNamesReachesEachFeatureAndState() {
        let h = Harness(Self.queues, Self.other)
        #expect(h.submit(#"{"kind":"initialize","feature":"DownloadQueueNorth","into":"Idle"}"#) == 0)
        #expect(h.submit(#"{"kind":"initialize","feature":"DownloadQueueSouth","into":"Idle"}"#) == 0)
        let feature = UnsafeMutablePointer<CChar>.allocate(capacity: 32)
        let state = UnsafeMutablePointer<CChar>.allocate(capacity: 32)
        defer { feature.deallocate(); state.deallocate() }

        strcpy(feature, "DownloadQueueNorth")
        strcpy(state, "WaitingForNetwork1")
        #expect(Self.move(h, feature, into: state) == 0)
        strcpy(state, "WaitingForNetwork2")      // the same pointer, the other state
        #expect(Self.move(h, feature, into: state) == 0)
        strcpy(feature, "DownloadQueueSouth")    // the same pointer, the other feature
        #expect(Self.move(h, feature, into: state) == 0)
        strcpy(state, "Idle")
        strcpy(feature, "DownloadQueueNorth")
        #expect(Self.move(h, feature, into: state) == 0)
        #expect(h.state == #"{"DownloadQueueNorth":{"state":"Idle","payload":{}},"DownloadQueueSouth":{"state":"WaitingForNetwork2","payload":{}}}"#)

        // Names that are no longer registered ones, at the same pointers.
        strcpy(feature, "DownloadQueueNorthX")
        #expect(Self.move(h, feature, into: state) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown feature 'DownloadQueueNorthX'")
        strcpy(feature, "DownloadQueueNorth")
        strcpy(state, "WaitingForNetwork3")
        #expect(Self.move(h, feature, into: state) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'WaitingForNetwork3' of feature DownloadQueueNorth")
        strcpy(state, "I")
        #expect(Self.move(h, feature, into: state) == UF_ENOTFOUND)
        #expect(h.lastError == "unknown state 'I' of feature DownloadQueueNorth")
        #expect(h.state == #"{"DownloadQueueNorth":{"state":"Idle","payload":{}},"DownloadQueueSouth":{"state":"WaitingForNetwork2","payload":{}}}"#)
    }
}

/// The flat tables' slots are what a registered feature costs: a field that makes
/// one grow shows in the memory per feature (`bench/run`, group 5).
@Suite struct SlotSizes {
    @Test func aStateSlotStaysSixteenBytes() {
        #expect(MemoryLayout<StateSlot>.stride == 16)
        #expect(MemoryLayout<EventTargetSlot>.stride <= 24)
    }
}

/// Keys are well-formed UTF-8, checked even when they come from C: two malformed
/// keys would otherwise both be written as U+FFFD, one member twice in the model.
@Suite struct KeyEncoding {
    @Test func theCheckAgreesWithTheStandardLibrary() {
        var samples: [[UInt8]] = [
            [0x61], [0xC3, 0xA9], [0xE2, 0x82, 0xAC], [0xF0, 0x9F, 0x98, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],
            [0x84], [0xE2], [0xC0, 0xAF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
            [0xF5, 0x80, 0x80, 0x80], [0xC3], [0xE2, 0x82], [0x61, 0xFF, 0x62],
        ]
        var seed: UInt64 = 0x9E37_79B9_7F4A_7C15
        for _ in 0..<20_000 {
            seed ^= seed << 13
            seed ^= seed >> 7
            seed ^= seed << 17
            let count = Int(seed % 5) + 1
            samples.append((0..<count).map { UInt8(truncatingIfNeeded: seed >> (8 * UInt64($0 + 1))) })
        }
        for bytes in samples {
            let expected = String(validating: bytes, as: UTF8.self) != nil
            let got = bytes.withUnsafeBytes { InstanceKey.isWellFormedUTF8($0) }
            #expect(got == expected, "\(bytes)")
        }
    }

    @Test func aMalformedKeyFromCIsRefused() {
        let h = Harness(KeyBuffers.toggles)
        let buffer = UnsafeMutablePointer<CChar>.allocate(capacity: 4)
        defer { buffer.deallocate() }
        buffer[0] = CChar(bitPattern: 0x84)
        buffer[1] = 0
        let status = "Toggle".withCString { (feature) -> Int32 in
            "Off".withCString { (state) -> Int32 in
                var a = uf_action()
                a.size = UInt32(MemoryLayout<uf_action>.size)
                a.kind = UF_ACTION_INITIALIZE
                a.feature = feature
                a.into = state
                a.key = UnsafePointer(buffer)
                return uf_dispatch(h.d, &a)
            }
        }
        #expect(status == Int32(UF_EINVAL))
        #expect(h.lastError == "uf_action.key: '\u{FFFD}' is not valid UTF-8")
        #expect(h.state == "{}")
    }
}
