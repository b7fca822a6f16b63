/// The structure of a statechart feature (`docs/statecharts.md`): its states as
/// a tree of nodes, in document order, with what each declares. Built once by
/// `StatechartParser` and never changed; the engine (`StatechartEngine`) reads it.
///
/// Node 0 is the feature itself (XState's root state node); every other node is
/// a declared state. A node's index is its place in document order (depth
/// first, children in the order of their keys), so "document order" is the
/// order of indices, and a node's descendants are exactly the indices after it
/// up to its `end`.
final class Statechart {
    /// What kind of state a node is.
    enum Kind: UInt8 {
        /// No child states.
        case atomic
        /// Child states, exactly one of them active: `initial` names it.
        case compound
        /// Child states (its regions), all active together.
        case parallel
        /// An atomic state that completes its parent.
        case final
        /// A pseudo-state that stands for what its parent had when last left.
        case history
    }

    struct Node {
        var name: String
        /// Its ancestry joined by `.` (empty for the root).
        var path: String
        /// -1 for the root.
        var parent: Int
        /// Child states (history states included), in document order.
        var children: [Int] = []
        var kind: Kind = .atomic
        /// Levels below the root (the root is 0).
        var depth: Int
        /// Its last descendant's index (itself when it has none).
        var end: Int = 0
        /// A compound state's initial child.
        var initial: Int = -1
        /// A history state: deep (atomic descendants) rather than shallow (the child).
        var deepHistory = false
        /// A history state's `default` targets; nil: the parent's `initial`.
        var historyDefault: [Int]?
        var entry: [StatechartEffect] = []
        var exit: [StatechartEffect] = []
        /// `on` (and `onDone`, under its event name), in declaration order.
        var on: [(event: String, transitions: [StatechartTransition])] = []
        var always: [StatechartTransition] = []
        /// Payload fields that belong to this state and its descendants.
        var fields: [FieldDefinition] = []
        /// A final state's `output` template.
        var output: JSONValue?
        /// `after`: timers armed while the state is active, each sending its event.
        var timers: [(ms: UInt64, event: String)] = []
        /// `invoke`: services running while the state is active.
        var invokes: [StatechartInvoke] = []

        /// Whether it counts as atomic for configurations (atomic or final).
        var isLeaf: Bool { kind == .atomic || kind == .final }
    }

    /// The feature's name.
    let name: String
    /// Document order; `nodes[0]` is the root.
    let nodes: [Node]
    /// Bare names to the nodes that carry them (for names unique in the feature).
    private let byName: [String: [Int]]
    private let byPath: [String: Int]
    /// Every transition, by `StatechartTransition.id`.
    let transitionCount: Int
    /// `transitions` of the feature, by node: the nodes a transition from a node
    /// (or one of its descendants) may enter, with their descendants; nil: any.
    let allowed: [Set<Int>]?

    init(name: String, nodes: [Node], transitionCount: Int, allowed: [Set<Int>]?) {
        self.name = name
        self.nodes = nodes
        self.transitionCount = transitionCount
        self.allowed = allowed
        var byName: [String: [Int]] = [:]
        var byPath: [String: Int] = [:]
        for (i, node) in nodes.enumerated() where i > 0 {
            byName[node.name, default: []].append(i)
            byPath[node.path] = i
        }
        self.byName = byName
        self.byPath = byPath
    }

    /// The node a name designates: a path from the root, or a bare name unique
    /// in the feature. Errors are the text after the element's path.
    static func resolve(_ name: String, byPath: [String: Int], byName: [String: [Int]],
                        paths: (Int) -> String) -> StateLookup {
        if let index = byPath[name] { return .success(index) }
        if !name.contains("."), let candidates = byName[name] {
            if candidates.count == 1 { return .success(candidates[0]) }
            return .failure("ambiguous state '\(name)' (\(candidates.map(paths).joined(separator: ", ")))")
        }
        return .failure("unknown state '\(name)'")
    }

    /// The node a name designates (`resolve`), or the reason it designates none.
    func node(named name: String) -> StateLookup {
        Statechart.resolve(name, byPath: byPath, byName: byName, paths: { self.nodes[$0].path })
    }

    /// Whether `node` is a proper descendant of `ancestor`.
    @inline(__always)
    func isDescendant(_ node: Int, of ancestor: Int) -> Bool {
        node > ancestor && node <= nodes[ancestor].end
    }

    /// `ancestor` itself or one of its descendants.
    @inline(__always)
    func isWithin(_ node: Int, _ ancestor: Int) -> Bool {
        node >= ancestor && node <= nodes[ancestor].end
    }

    /// The ancestors of `node` from its parent up to, not including, `stop`
    /// (-1: up to and including the root).
    func properAncestors(_ node: Int, upTo stop: Int = -1) -> [Int] {
        var result: [Int] = []
        if node == stop { return result }
        var p = nodes[node].parent
        while p >= 0 && p != stop {
            result.append(p)
            p = nodes[p].parent
        }
        return result
    }

    /// Children that are states (history states are not).
    func stateChildren(_ node: Int) -> [Int] {
        nodes[node].children.filter { nodes[$0].kind != .history }
    }

    /// The configuration string: the paths of the active leaves in document
    /// order, joined by `,`. `active` is indexed by node.
    func configurationText(_ active: [Int]) -> String {
        active.sorted().filter { $0 > 0 && nodes[$0].isLeaf }.map { nodes[$0].path }.joined(separator: ",")
    }

    /// Whether a transition from `source` (the root for the feature's own) into
    /// `target` is allowed by the feature's `transitions`.
    func allows(from source: Int, into target: Int, active: [Bool]) -> Bool {
        guard let allowed else { return true }
        if source == 0 {
            // A feature-level source: any active state may allow it.
            for (i, isActive) in active.enumerated() where isActive && i > 0 && allowed[i].contains(target) { return true }
            return false
        }
        var s = source
        while s > 0 {
            if allowed[s].contains(target) { return true }
            s = nodes[s].parent
        }
        return false
    }
}

/// What a state's name designates: a node, or why none.
enum StateLookup {
    case success(Int)
    /// The message after the element's path.
    case failure(String)
}

/// A transition of a statechart: from the state that declares it (its source)
/// into its targets (none: a targetless transition, which exits and enters nothing).
struct StatechartTransition {
    /// Unique within the chart: the identity conflict resolution compares.
    var id: Int
    var source: Int
    var targets: [Int]
    var reenter = false
    /// A JsonLogic guard (`if`).
    var guardRule: JSONValue?
    /// Host handlers that guard it (`call`).
    var guardCall: GuardCall?
    var actions: [StatechartEffect] = []
    /// A payload template: sets the fields it names.
    var payload: JSONValue?
    var spec: String?

    var isGuarded: Bool { guardRule != nil || guardCall != nil }
}

/// A guard that asks host handlers: a name, or a tree of them (16.5).
indirect enum GuardCall {
    case call(String, params: JSONValue?)
    case and([GuardCall])
    case or([GuardCall])
    case not(GuardCall)
    /// Whether the node is active.
    case active(Int)

    /// The handler names it asks, in order.
    var handlers: [String] {
        switch self {
        case .call(let name, _): return [name]
        case .and(let items), .or(let items): return items.flatMap(\.handlers)
        case .not(let item): return item.handlers
        case .active: return []
        }
    }
}

/// What an `entry`, `exit` or transition `actions` list does (16.3).
enum StatechartEffect {
    /// Sets payload fields to the templates' values.
    case assign([(field: String, value: JSONValue)])
    /// A host handler; its output (an object) is assigned.
    case call(String, params: JSONValue?)
    /// Raises an event on the instance's internal queue; with a delay, a timer
    /// of the instance (named `id` when given) sends it later, from outside.
    case send(String, payload: JSONValue?, delay: UInt64? = nil, id: String? = nil)
    /// Disarms the delayed send named `id`, if it is armed.
    case cancel(String)
    /// Queued actions, as a binding's `then`.
    case submit([JSONValue])
}
