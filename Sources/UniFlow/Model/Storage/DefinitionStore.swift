/// The registered definitions, in registration order, kept small.
///
/// A feature whose states declare no fields, and that has no descriptions and no
/// bindings, is fully described by the hot tables (names, `initial`,
/// `transitions`): for it only its text is kept, and its `FeatureDefinition` is
/// parsed again on the rare occasions something needs all of it (a graph, a
/// binding's filter). Every other feature keeps its parsed definition. With
/// 100,000 small features the parsed definitions (a states array and the source
/// tree per feature) were three quarters of what a feature cost.
struct DefinitionStore {
    /// One feature's compact JSON text in `text`, and its parsed definition in
    /// `rich` if it keeps one (-1 otherwise).
    private struct Span {
        var offset: Int
        var length: Int32
        var rich: Int32
    }

    /// Every definition's text, one after another.
    private var text = UnsafeVector<UInt8>()
    private var spans = UnsafeVector<Span>()
    private var rich: [FeatureDefinition] = []

    var count: Int { spans.count }
    var indices: Range<Int> { 0..<count }

    /// Makes room for `count` definitions of `bytes` bytes of text in all.
    mutating func reserve(_ count: Int, bytes: Int) throws(UniFlowError) {
        try text.reserve(bytes)
        try spans.reserve(count)
    }

    /// Adds a definition; `source` is its compact JSON text.
    mutating func append(_ definition: FeatureDefinition, source: String) throws(UniFlowError) {
        let source = source
        let offset = text.count
        let bytes = Array(source.utf8)
        try bytes.withUnsafeBufferPointer { buffer in Result { () throws(UniFlowError) in try text.append(contentsOf: buffer) } }.get()
        var span = Span(offset: offset, length: Int32(text.count - offset), rich: -1)
        if !DefinitionStore.isDescribedByTables(definition) {
            span.rich = Int32(rich.count)
            rich.append(definition)
        }
        try spans.append(span)
    }

    /// The definition as registered, as compact JSON text.
    func source(_ feature: Int) -> String {
        let span = spans[feature]
        let bytes = UnsafeBufferPointer(start: text.base.unsafelyUnwrapped + span.offset, count: Int(span.length))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// The parsed definition, if the feature keeps one.
    func kept(_ feature: Int) -> FeatureDefinition? {
        let index = spans[feature].rich
        return index < 0 ? nil : rich[Int(index)]
    }

    /// A state of a feature that keeps its parsed definition.
    func keptState(_ state: Int, of feature: Int) -> StateDefinition? {
        let index = spans[feature].rich
        return index < 0 ? nil : rich[Int(index)].states[state]
    }

    /// The whole parsed definition.
    subscript(feature: Int) -> FeatureDefinition {
        if let kept = kept(feature) { return kept }
        // Registered once, so it parses again; a failure here is a bug in the core.
        do throws(UniFlowError) {
            return try DefinitionParser.parse(try JSONParser.parse(source(feature)))[0]
        } catch {
            fatalError("libuniflow: a registered definition no longer parses: \(error)")
        }
    }

    /// Whether the hot tables hold everything the core needs of this definition
    /// apart from its text.
    static func isDescribedByTables(_ definition: FeatureDefinition) -> Bool {
        definition.chart == nil && definition.description == nil && definition.bindings.isEmpty && definition.events.isEmpty
            && definition.states.allSatisfy { $0.description == nil && $0.fields.isEmpty && $0.timers.isEmpty && $0.events.isEmpty }
    }

    mutating func deallocate() {
        text.deallocate()
        spans.deallocate()
        rich = []
    }
}
