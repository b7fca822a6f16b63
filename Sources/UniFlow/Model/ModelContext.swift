/// What model code needs from the dispatcher that holds the live model: the
/// registered names and definitions, and each place's state and payload. A copy
/// of the model (`ModelSnapshot`) is built and checked through it, so that
/// `Model/` never sees `Dispatcher` (which conforms in Dispatcher+Places.swift).
protocol ModelContext: AnyObject {
    /// How many features are registered (numbered from 0, in registration order).
    var featureCount: Int32 { get }
    func featureName(_ feature: Int32) -> String
    func resolveFeature(_ name: String) throws(UniFlowError) -> Int32
    func resolveState(_ name: String, of feature: Int32) throws(UniFlowError) -> Int32
    /// A state's definition: its fields, for payload checks.
    func stateDefinition(_ state: Int32, of feature: Int32) -> StateDefinition
    /// The instance table of a keyed feature; nil for a single feature.
    func instanceTable(of feature: Int32) -> Int32?
    /// The live instances of a table, in creation order: each slot and key.
    func forEachInstance(ofTable table: Int32, _ body: (_ slot: Int32, _ key: String) -> Void)
    /// The state at a place (-1: absent).
    func state(at place: Place) -> Int32
    func storedPayload(at place: Place) -> JSONObject?
    /// A statechart instance as a model or a journal line writes it (`state`,
    /// `payload`, and `history`/`status` when present): its state number and
    /// payload; nil for a flat feature, whose entries are read as before.
    func statechartEntry(_ entry: JSONObject, feature: Int32, at path: String) throws(UniFlowError) -> (state: Int32, payload: JSONObject)?
    /// A statechart instance's `invocations` as an entry or a line lists them,
    /// each checked to be an `invoke` of a state active in `state`.
    func listedInvocations(_ value: JSONValue?, feature: Int32, key: String?, state: Int32,
                           at path: String) throws(UniFlowError) -> [StatechartServices.Invocation]
    /// What every statechart instance lists as running now (instances with none left out).
    func currentInvocations() -> [ChartInstanceRef: [StatechartServices.Invocation]]
}
