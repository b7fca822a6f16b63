import CUniFlow
import Glibc
@testable import UniFlow

/// A dispatcher with one statechart feature `C` whose handler `log` records
/// the `params` of every `call` in the order the engine made them.
final class ChartLog {
    let h: Harness
    var log: [String] = []

    /// `prepare` registers what the definition needs (handlers, services).
    init(_ definition: String, options: String? = nil, prepare: (Harness) -> Void = { _ in }) {
        h = options.map { Harness(options: $0) } ?? Harness()
        prepare(h)
        registerHandler(h, "log") { [unowned self] call in
            let given = String(cString: uf_binding_call_given_json(call))
            if case .object(let object)? = try? JSONParser.parse(given), let text = object["params"]?.stringValue {
                self.log.append(text)
            }
            return 0
        }
        let status = uf_register(h.d, definition)
        precondition(status == UF_OK, "uf_register: \(h.lastError)")
    }

    func start(_ into: String) -> Int32 { h.submit(#"{"kind":"initialize","feature":"C","into":"\#(into)"}"#) }
    func send(_ event: String) -> Int32 { uf_send(h.d, "C", nil, event, nil) }

    /// The configuration, as the model names it.
    var state: String? {
        guard let text = h.feature("C"), case .object(let object)? = try? JSONParser.parse(text) else { return nil }
        return object["state"]?.stringValue
    }

    /// The payload's JSON text.
    var payload: String? {
        guard let text = h.feature("C"), case .object(let object)? = try? JSONParser.parse(text) else { return nil }
        return object["payload"]?.jsonText
    }
}

/// A `call` effect of the `log` handler.
func logged(_ text: String) -> String { #"{"call":"log","params":"\#(text)"}"# }
