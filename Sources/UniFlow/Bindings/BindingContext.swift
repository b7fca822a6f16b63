/// What model bindings (`ModelBindings`) need from the dispatcher that holds
/// them, and nothing more: the registered names, the model and the mutation as
/// rule data, how many instances an owner has, resolving and queueing the
/// actions templates make, reporting a binding's outcome, and calling a host
/// handler. The dispatcher conforms (`Dispatcher+Bindings.swift`).
protocol BindingContext: AnyObject {
    // MARK: Names

    /// How many features are registered (numbered from 0, in registration order).
    var featureCount: Int32 { get }
    func featureIndex(named name: String) -> Int32?
    func stateIndex(named name: String, feature: Int32) -> Int32?
    func featureName(_ feature: Int32) -> String
    /// The instance table of a keyed feature; nil for a single feature.
    func instanceTable(of feature: Int32) -> Int32?
    /// A binding's `when`, with `lookup` finding features registered earlier or in the same call.
    func compile(_ filter: FilterExpression,
                 lookup: (String) -> (Int32, Bool, (String) -> Int?)?) throws(UniFlowError) -> Dispatcher.CompiledFilter
    /// Whether a statechart's mutation passes a filter naming its states (by its number).
    func chartFilterMatches(_ filter: Int32, _ record: MutationRecord) -> Bool
    /// A template's action, its names resolved (borrowing its strings).
    func resolve<Source: ActionSource>(_ request: DecodedAction<Source>, hasVia: Bool) throws(UniFlowError) -> ResolvedAction

    // MARK: Rule data

    /// The GlobalModel, its features made when a rule reads them.
    func lazyModel() -> JsonLogic.JSValue
    /// The mutation being announced, its parts made when a rule reads them.
    func lazyMutation(_ record: MutationRecord) -> JsonLogic.JSValue
    /// The mutation being announced as `uf_binding_call_mutation_json` shows it.
    func mutationText(_ record: MutationRecord) -> String

    // MARK: Owners

    /// How many instances a feature has now; a single feature: 1 if initialized, else 0.
    func alive(_ feature: Int32) -> Int

    // MARK: What a binding does

    /// Queues the actions a binding's templates made, or refuses them all
    /// (`UF_ELOOP`) once the cascade limit was reached.
    func queueBindingActions(_ actions: [ResolvedAction]) throws(UniFlowError)
    /// Reports a binding processed, skipped or rejected, as the reporter wants it.
    func reportBinding(_ event: ReportEvent, _ binding: BindingDefinition, _ failure: UniFlowError?)
    /// Calls a host handler; may re-enter the dispatcher.
    func callHandler(_ name: String, mutation: String, given: JSONValue, inGiven: Bool) -> (status: Int32, output: JSONValue?)
}
