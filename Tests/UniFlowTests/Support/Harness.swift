import CUniFlow
import Glibc
@testable import UniFlow

/// A dispatcher driven through the C API, as a host would drive it, with Swift
/// closures behind the C callbacks. Every test makes its own: no shared state.
final class Harness {
    let d: OpaquePointer
    /// Every report the custom reporter received, as JSON text.
    var reports: [String] = []
    private var reporterBox: Box<(String) -> Void>?

    init(options: String? = nil, _ definitions: String...) {
        var out: OpaquePointer?
        let status = options.map { uf_dispatcher_new(&out, $0) } ?? uf_dispatcher_new(&out, nil)
        precondition(status == 0, "uf_dispatcher_new: \(String(cString: uf_last_error()))")
        d = out!
        for definition in definitions {
            let status = uf_register(d, definition)
            precondition(status == 0, "uf_register: \(String(cString: uf_last_error()))")
        }
    }

    deinit { uf_dispatcher_free(d) }

    @discardableResult
    func submit(_ json: String) -> Int32 { uf_submit(d, json) }

    var lastError: String { String(cString: uf_last_error()) }
    var lastStatus: Int32 { uf_last_status() }

    /// The GlobalModel as JSON text.
    var state: String {
        var out: UnsafeMutablePointer<CChar>?
        precondition(uf_state_get(d, &out) == 0)
        defer { uf_free(out) }
        return String(cString: out!)
    }

    func feature(_ name: String) -> String? {
        var out: UnsafeMutablePointer<CChar>?
        guard uf_feature_get(d, name, &out) == 0, let out else { return nil }
        defer { uf_free(out) }
        return String(cString: out)
    }

    /// Subscribes a closure; the returned counter says how often `payload_free` ran.
    @discardableResult
    func subscribe(_ when: String?, freed: FreeCounter = FreeCounter(),
                   _ body: @escaping (OpaquePointer) -> Int32) -> (status: Int32, id: UInt64, freed: FreeCounter) {
        let box = Box(body, freed: freed)
        var id: UInt64 = 0
        let payload = Unmanaged.passRetained(box).toOpaque()
        let status = uf_subscribe(d, when, { m, payload in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(m!)
        }, payload, releaseBox, &id)
        return (status, id, freed)
    }

    /// Records every mutation's JSON for the filter.
    func record(_ when: String? = nil) -> Recorder {
        let recorder = Recorder()
        subscribe(when) { m in
            recorder.mutations.append(String(cString: uf_mutation_json(m)))
            return 0
        }
        return recorder
    }

    /// Installs a reporter that appends to `reports`.
    func captureReports() {
        let box = Box<(String) -> Void>({ [unowned self] in self.reports.append($0) }, freed: FreeCounter())
        reporterBox = box
        uf_set_reporter(d, { text, payload in
            Unmanaged<Box<(String) -> Void>>.fromOpaque(payload!).takeUnretainedValue().value(String(cString: text!))
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
    }

    /// Submits with a via closure that receives the context.
    @discardableResult
    func submit(_ json: String, freed: FreeCounter = FreeCounter(), via: @escaping (OpaquePointer) -> Int32) -> Int32 {
        let box = Box(via, freed: freed)
        return uf_submit_via(d, json, { ctx, payload in
            Unmanaged<Box<(OpaquePointer) -> Int32>>.fromOpaque(payload!).takeUnretainedValue().value(ctx!)
        }, Unmanaged.passRetained(box).toOpaque(), releaseBox)
    }
}

/// Counts `payload_free` calls.
final class FreeCounter {
    var count = 0
}

final class Recorder {
    var mutations: [String] = []
}

/// A closure carried through a C `void *payload`.
final class Box<T> {
    let value: T
    let freed: FreeCounter
    init(_ value: T, freed: FreeCounter) {
        self.value = value
        self.freed = freed
    }
}

private protocol Freeable: AnyObject { var freed: FreeCounter { get } }
extension Box: Freeable {}

/// The `payload_free` of every harness callback: counts, then drops the box.
let releaseBox: @convention(c) (UnsafeMutableRawPointer?) -> Void = { payload in
    let object = Unmanaged<AnyObject>.fromOpaque(payload!).takeRetainedValue()
    (object as? Freeable)?.freed.count += 1
}

/// The features the tests share, as JSON: those of the original UniFlow
/// scenarios (FileDownloading, the arithmetic Main, Search), a Toggle, and
/// FileDownloading with a state of every field type.
enum Seeds {
    static let fileDownloading = """
    {"feature": "FileDownloading",
     "states": {"Starting": {}, "InProgress": {"fields": {"progress": "number"}}, "Completed": {},
                "Failed": {"fields": {"reason": "string", "code": {"type": "integer", "optional": true},
                                      "retries": {"type": "integer", "default": 0}}}},
     "initial": ["Starting"],
     "transitions": {"Starting": ["InProgress", "Failed"],
                     "InProgress": ["InProgress", "Completed", "Failed"]}}
    """

    static let main = """
    {"feature": "Main", "states": {"Main": {"fields": {"val": "integer"}}}}
    """

    static let search = """
    {"feature": "Search",
     "states": {"Ready": {}, "InProgress": {"fields": {"query": "string", "progress": "integer"}},
                "Failed": {"fields": {"reason": "string"}}}}
    """

    static let toggle = """
    {"feature": "Toggle", "states": {"Off": {}, "On": {}}}
    """

    /// FileDownloading (docs/definitions.md) plus `Typed`, a state with one optional
    /// field of every type, for payload checks.
    static let typedFileDownloading = #"""
    {"feature": "FileDownloading",
      "states": {"Starting": {},
                 "InProgress": {"fields": {"progress": "number"}},
                 "Failed": {"fields": {"reason": "string",
                                       "code": {"type": "integer", "optional": true},
                                       "retries": {"type": "integer", "default": 0}}},
                 "Typed": {"fields": {"s": {"type": "string", "optional": true},
                                      "n": {"type": "number", "optional": true},
                                      "i": {"type": "integer", "optional": true},
                                      "b": {"type": "boolean", "optional": true},
                                      "o": {"type": "object", "optional": true},
                                      "a": {"type": "array", "optional": true},
                                      "y": {"type": "any", "optional": true}}}},
      "transitions": {"Starting": ["InProgress", "Failed", "Typed"], "InProgress": ["InProgress", "Failed", "Typed"],
                      "Typed": ["Typed", "Failed"], "Failed": ["Typed"]}}
    """#
}

/// A fresh path under /tmp for a test's file (unique per process and call).
func temporaryPath(_ name: String, extension ext: String = "jsonl") -> String {
    "/tmp/uniflow-test-\(getpid())-\(name)-\(UInt32.random(in: 0...UInt32.max)).\(ext)"
}
