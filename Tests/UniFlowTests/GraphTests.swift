import CUniFlow
import Glibc
import Testing
@testable import UniFlow

/// `uf_graph_dot` (docs/cli.md, "graph"): features as Graphviz DOT, driven through the C API.
@Suite struct Graphs {
    static let toggle = """
    {"feature": "Toggle", "description": "A \\"switch\\"", "states": {"Off": {}, "On": {"fields": {"level": {"type": "integer", "default": 1}}}},
     "initial": ["Off"], "transitions": {"Off": ["On"], "On": ["Off", "On"]}}
    """

    static let stats = """
    {"feature": "Stats", "states": {"Counting": {"fields": {"completed": {"type": "integer", "default": 0}}}},
     "bindings": [
        {"scenario": "Count switches on",
         "when": "TransitionInto<Toggle.On>",
         "then": {"submit": [{"kind": "actualize", "feature": "Stats", "in": "Counting",
                              "payload": {"completed": {"$": {"+": [{"var": "model.Stats.payload.completed"}, 1]}}}}]}},
        {"when": "Deinitialization<Toggle>",
         "then": {"submit": [{"kind": "deinitialize", "feature": "Stats"}]}}]}
    """

    /// The DOT text, or the status and message of the failure.
    static func graph(_ h: Harness, _ feature: String? = nil) -> (status: Int32, dot: String?) {
        var out: UnsafeMutablePointer<CChar>?
        let status = feature.map { uf_graph_dot(h.d, $0, &out) } ?? uf_graph_dot(h.d, nil, &out)
        defer { uf_free(out) }
        return (status, out.map { String(cString: $0) })
    }

    // MARK: Features

    @Test func aFeatureIsAClusterOfStatesWithItsTransitionsAndEntryPoint() {
        let h = Harness(Self.toggle)
        let result = Self.graph(h)
        #expect(result.status == UF_OK)
        #expect(result.dot == """
        digraph uniflow {
          graph [rankdir=LR, compound=true, fontname="Helvetica", fontsize=12, nodesep=0.3, ranksep=0.45];
          node [shape=box, style=rounded, fontname="Helvetica", fontsize=11];
          edge [fontname="Helvetica", fontsize=9];

          subgraph cluster_Toggle {
            label="Toggle";
            style=rounded; color=gray40;
            tooltip="A \\"switch\\"";
            "Toggle#entry" [shape=point, width=0.1, label=""];
            "Toggle.Off" [label="Off", peripheries=2];
            "Toggle.On" [label="On", tooltip="level: integer = 1"];
            "Toggle#entry" -> "Toggle.Off";
            "Toggle.Off" -> "Toggle.On";
            "Toggle.On" -> "Toggle.Off";
            "Toggle.On" -> "Toggle.On";
          }
        }

        """)
    }

    @Test func withoutInitialOrTransitionsTheClusterSaysAnyAndDrawsNoEdges() {
        let h = Harness(Seeds.search)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Search\n(any initial state, any transition)";"#))
        #expect(!dot.contains("->"))
        #expect(!dot.contains("#entry"))
        #expect(!dot.contains("peripheries"))
        for state in ["Ready", "InProgress", "Failed"] {
            #expect(dot.contains(#""Search.\#(state)" [label="\#(state)""#))
        }
    }

    @Test func anEmptyTransitionListDrawsNoEdgesAndNoNote() {
        let h = Harness(#"{"feature": "Main", "states": {"Main": {}}, "initial": ["Main"], "transitions": {"Main": []}}"#)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Main";"#))
        #expect(dot.contains(#""Main#entry" -> "Main.Main";"#))
        #expect(!dot.contains(#""Main.Main" ->"#))
    }

    @Test func featuresAppearInRegistrationOrder() {
        let h = Harness(Seeds.toggle, Seeds.fileDownloading, Seeds.main)
        let dot = Self.graph(h).dot ?? ""
        let clusters = dot.split(separator: "\n").filter { $0.contains("subgraph cluster_") }
        #expect(clusters == ["  subgraph cluster_Toggle {", "  subgraph cluster_FileDownloading {", "  subgraph cluster_Main {"])
    }

    // MARK: Bindings

    @Test func aBindingIsADashedEdgeFromTheStateItWaitsForToTheStateItEnters() {
        let h = Harness(Self.toggle, Self.stats)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"""
          "Toggle.On" -> "Stats.Counting" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Count switches on", tooltip="[Count switches on] WHEN TransitionInto<Toggle.On>, THEN actualize Stats."];
        """#))
    }

    @Test func aFilterWithoutAStateStartsAtTheFeatureClusterAndADeinitializationEndsAtOne() {
        let h = Harness(Self.toggle, Self.stats)
        let dot = Self.graph(h).dot ?? ""
        // No scenario: the derived name, wrapped.
        #expect(dot.contains(#"""
          "Toggle.Off" -> "Stats.Counting" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="WHEN\nDeinitialization<Toggle>,\nTHEN deinitialize Stats", tooltip="WHEN Deinitialization<Toggle>, THEN deinitialize Stats.", ltail=cluster_Toggle, lhead=cluster_Stats];
        """#))
    }

    @Test(arguments: [
        ("AnyMutation", ##""#any-mutation""##),
        ("AnyMutationOf<Toggle>", #""Toggle.Off""#),
        ("Initialization<Toggle>", #""Toggle.Off""#),
        ("SettingInto<Toggle.On>", #""Toggle.On""#),
        ("InitializationInto<Toggle.On>", #""Toggle.On""#),
        ("ActualizationIn<Toggle.On>", #""Toggle.On""#),
        ("TransitionFrom<Toggle.On>", #""Toggle.On""#),
        ("DeinitializationFrom<Toggle.On>", #""Toggle.On""#),
        ("TransitionBetween<Toggle.Off, Toggle.On>", #""Toggle.On""#),
    ])
    func eachFilterStartsItsEdgeWhereItsMutationHappens(filter: String, tail: String) {
        let watcher = """
        {"feature": "Watcher", "states": {"Seen": {}},
         "bindings": [{"scenario": "watch", "when": "\(filter)",
                       "then": {"submit": [{"kind": "initialize", "feature": "Watcher", "into": "Seen"}]}}]}
        """
        let h = Harness(Self.toggle, watcher)
        let dot = Self.graph(h).dot ?? ""
        let edges = dot.split(separator: "\n").filter { $0.contains(#"label="watch""#) }
        #expect(edges.count == 1)
        #expect(edges.first?.hasPrefix("  \(tail) -> \"Watcher.Seen\" [") == true, "\(edges)")
        #expect(edges.first?.contains("ltail=cluster_Toggle") == (tail == #""Toggle.Off""#))
    }

    @Test func handlersComputedAndUnknownFeaturesGetNodesOfTheirOwn() {
        var out: OpaquePointer?
        #expect(uf_dispatcher_new(&out, nil) == UF_OK)
        guard let d = out else { return }
        defer { uf_dispatcher_free(d) }
        #expect(uf_register_handler(d, "notify", { _, _ in 0 }, nil, nil) == UF_OK)
        let definition = """
        {"feature": "Notifier", "states": {"Idle": {}, "Sending": {"fields": {"text": "string"}}},
         "bindings": [
            {"scenario": "Tell the host", "when": "AnyMutation", "then": {"call": "notify"}},
            {"scenario": "Fan out", "when": "TransitionInto<Notifier.Sending>",
             "then": {"submit": [{"kind": "initialize", "feature": {"$": {"var": "given"}}, "into": "Idle"},
                                 {"kind": "initialize", "feature": "Elsewhere", "into": "Idle"},
                                 {"kind": "transition", "feature": "Notifier", "into": {"$": "Idle"}},
                                 {"kind": "transition", "feature": "Notifier", "into": "Idle"}]}}]}
        """
        #expect(uf_register(d, definition) == UF_OK, "\(String(cString: uf_last_error()))")
        var dotOut: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(d, nil, &dotOut) == UF_OK)
        let dot = dotOut.map { String(cString: $0) } ?? ""
        uf_free(dotOut)
        // What follows the last cluster: the helper nodes, then the edges.
        let lines = dot.split(separator: "\n", omittingEmptySubsequences: false)
        let tail = lines[(lines.lastIndex(of: "  }") ?? 0) + 2 ..< lines.count - 1].joined(separator: "\n")
        #expect(tail == #"""
          "#any-mutation" [label="any mutation", shape=plaintext];
          "#handler:notify" [label="notify()", shape=cds];
          "#computed-feature" [label="computed feature", shape=plaintext];
          "#unknown:Elsewhere" [label="Elsewhere?", shape=plaintext];
          "#any-mutation" -> "#handler:notify" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Tell the host", tooltip="[Tell the host] WHEN AnyMutation, THEN call notify."];
          "Notifier.Sending" -> "#computed-feature" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
          "Notifier.Sending" -> "#unknown:Elsewhere" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
          "Notifier.Sending" -> "Notifier.Idle" [style=dashed, color=royalblue4, fontcolor=royalblue4, label="Fan out", tooltip="[Fan out] WHEN TransitionInto<Notifier.Sending>, THEN initialize ? and initialize Elsewhere and transition Notifier and transition Notifier."];
        }
        """#)
    }

    @Test func labelsEscapeQuotesBackslashesAndNewlines() {
        let definition = #"""
        {"feature": "Quoted", "states": {"A": {}},
         "bindings": [{"scenario": "Say \"hi\" \\N\nnow", "when": "Initialization<Quoted>",
                       "then": {"submit": [{"kind": "deinitialize", "feature": "Quoted"}]}}]}
        """#
        let h = Harness(definition)
        let dot = Self.graph(h).dot ?? ""
        #expect(dot.contains(#"label="Say \"hi\" \\N\nnow""#))
        #expect(DOTGraph.quoted("a\u{1}b\tc") == #""a b c""#)
    }

    @Test func longLabelsAreWrappedAtBlanks() {
        #expect(DOTGraph.wrapped("Finish the download when progress reaches 100", width: 28)
                == "Finish the download when\nprogress reaches 100")
        #expect(DOTGraph.wrapped("Averyveryveryverylongwordthatdoesnotfit here", width: 10)
                == "Averyveryveryverylongwordthatdoesnotfit\nhere")
        #expect(DOTGraph.wrapped("", width: 10) == "")
    }

    // MARK: One feature

    @Test func oneFeatureDrawsItsClusterItsBindingsAndForeignStatesAsDashedNodes() {
        let h = Harness(Self.toggle, Self.stats)
        let dot = Self.graph(h, "Stats").dot ?? ""
        #expect(!dot.contains("subgraph cluster_Toggle"))
        #expect(dot.contains("subgraph cluster_Stats"))
        #expect(dot.contains(#"  "Toggle.On" [label="Toggle.On", style="rounded,dashed"];"#))
        #expect(dot.contains(#"  "Toggle#feature" [label="Toggle", style=dashed];"#))
        #expect(dot.contains(#"  "Toggle#feature" -> "Stats.Counting" ["#))

        // Toggle declares no bindings: its own graph has none.
        let toggleOnly = Self.graph(h, "Toggle").dot ?? ""
        #expect(!toggleOnly.contains("dashed"))
        #expect(!toggleOnly.contains("Stats"))
    }

    // MARK: Errors and determinism

    @Test func anUnknownFeatureIsNotFound() {
        let h = Harness(Self.toggle)
        var out: UnsafeMutablePointer<CChar>? = UnsafeMutablePointer(bitPattern: 1)
        #expect(uf_graph_dot(h.d, "Nope", &out) == UF_ENOTFOUND)
        #expect(out == nil)
        #expect(h.lastError == "unknown feature 'Nope'")
        #expect(h.lastStatus == UF_ENOTFOUND)
    }

    @Test func nullArgumentsAreInvalid() {
        let h = Harness(Self.toggle)
        var out: UnsafeMutablePointer<CChar>?
        #expect(uf_graph_dot(nil, nil, &out) == UF_EINVAL)
        #expect(uf_graph_dot(h.d, nil, nil) == UF_EINVAL)
    }

    @Test func anEmptyDispatcherIsAnEmptyGraph() {
        let h = Harness()
        #expect(Self.graph(h).dot?.hasPrefix("digraph uniflow {\n") == true)
        #expect(Self.graph(h).dot?.hasSuffix("fontsize=9];\n}\n") == true)
    }

    @Test func theSameDefinitionsAlwaysGiveTheSameBytes() {
        let first = Self.graph(Harness(Seeds.fileDownloading, Self.toggle, Self.stats)).dot
        let second = Self.graph(Harness(Seeds.fileDownloading, Self.toggle, Self.stats)).dot
        #expect(first != nil)
        #expect(first == second)
        let h = Harness(Seeds.fileDownloading, Self.toggle, Self.stats)
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(Self.graph(h).dot == first, "the model's state does not change the drawing")
    }

    @Test func itCanBeCalledFromInsideACallback() {
        let h = Harness(Self.toggle)
        var inside: String?
        h.subscribe(nil) { m in
            var out: UnsafeMutablePointer<CChar>?
            if uf_graph_dot(uf_mutation_dispatcher(m), "Toggle", &out) == UF_OK { inside = String(cString: out!) }
            uf_free(out)
            return UF_KEEP
        }
        h.submit(#"{"kind":"initialize","feature":"Toggle","into":"Off"}"#)
        #expect(inside == Self.graph(h, "Toggle").dot)
    }

    // MARK: Graphviz accepts it

    static let dotAvailable = system("command -v dot >/dev/null 2>&1") == 0

    @Test(.enabled(if: Graphs.dotAvailable, "Graphviz's dot is not installed"))
    func graphvizRendersEveryDrawingWithoutAWarning() throws {
        var out: OpaquePointer?
        #expect(uf_dispatcher_new(&out, nil) == UF_OK)
        let d = try #require(out)
        defer { uf_dispatcher_free(d) }
        #expect(uf_register_handler(d, "notify", { _, _ in 0 }, nil, nil) == UF_OK)
        let notifier = #"""
        {"feature": "Notifier", "states": {"Idle": {}},
         "bindings": [{"scenario": "Tell \"the host\" \\ now", "when": "AnyMutation", "then": {"call": "notify"}},
                      {"when": "TransitionBetween<Toggle.Off, Toggle.On>",
                       "then": {"submit": [{"kind": "initialize", "feature": {"$": "Notifier"}, "into": "Idle"},
                                           {"kind": "initialize", "feature": "Ghost", "into": "Idle"}]}}]}
        """#
        for definition in [Seeds.fileDownloading, Seeds.search, Self.toggle, Self.stats, notifier] {
            #expect(uf_register(d, definition) == UF_OK, "\(String(cString: uf_last_error()))")
        }
        for feature in [nil, "FileDownloading", "Search", "Toggle", "Stats", "Notifier"] as [String?] {
            var text: UnsafeMutablePointer<CChar>?
            let status = feature.map { uf_graph_dot(d, $0, &text) } ?? uf_graph_dot(d, nil, &text)
            #expect(status == UF_OK)
            guard let text else { continue }
            let dot = String(cString: text)
            uf_free(text)
            let (exit, stderr) = try Self.render(dot)
            #expect(exit == 0, "dot -Tsvg failed for \(feature ?? "all"): \(stderr)")
            #expect(stderr.isEmpty, "dot -Tsvg warned for \(feature ?? "all"): \(stderr)")
        }
    }

    /// Runs `dot -Tsvg` over the text; its exit status and standard error.
    static func render(_ dot: String) throws -> (Int32, String) {
        var template = Array("/tmp/uniflow-graph-XXXXXX".utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        try #require(fd >= 0)
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        defer { unlink(path); unlink(path + ".err"); unlink(path + ".svg") }
        let written = dot.withCString { write(fd, $0, strlen($0)) }
        close(fd)
        try #require(written == dot.utf8.count)
        let status = system("dot -Tsvg '\(path)' > '\(path).svg' 2> '\(path).err'")
        var stderr = ""
        if let file = fopen(path + ".err", "r") {
            var buffer = [CChar](repeating: 0, count: 4096)
            while fgets(&buffer, Int32(buffer.count), file) != nil {
                stderr += buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
            }
            fclose(file)
        }
        // system() returns a wait status: the exit code is in the second byte.
        return ((status >> 8) & 0xFF, stderr)
    }
}
