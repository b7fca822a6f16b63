/// What the reporter (`Reporter`) needs from the dispatcher to word a report:
/// how an action is named and described, and how a mutation is shown. Nothing
/// here changes the dispatcher, and nothing reaches the reporter back.
protocol ReportContext: AnyObject {
    /// The action as the host's reports show it (`"action"`).
    func actionDescription(_ action: ActionHeader) -> JSONObject
    /// `context@scope`, or `Feature.kind`: the action as the built-in reporter names it.
    func actionName(_ action: ActionHeader) -> String
    /// The mutation as the verbose built-in reporter shows it (JSON text).
    func mutationText(_ record: MutationRecord) -> String
}
