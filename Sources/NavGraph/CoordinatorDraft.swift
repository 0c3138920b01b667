/// A coordinator while the graph is being built: the builder fills it pass by pass (its abilities,
/// setup, flow, the flows it is a step of), then the graph keeps it as an immutable ``Coordinator``.
final class CoordinatorDraft {
    let index: Int
    /// "module.Name".
    let name: String
    let module: String
    let localName: String
    let location: SourceLocation
    var setup: Schema?
    var opens: [Int] = []
    var opensLocations: [SourceLocation] = []
    var opensSet: Set<Int> = []
    var presentations: Set<Presentation>?
    var preconditions: [Int] = []
    var leave: [Int] = []
    var tabs: [Int] = []
    var tabBack: TabBack = .none
    var access: [String] = []
    var mediation: [(field: String, sourcePath: [String])] = []
    var identity: [String] = []
    var flow: Flow?
    var stepOf: [Int] = []
    var description: String?

    init(index: Int, module: String, localName: String, location: SourceLocation) {
        self.index = index
        self.module = module
        self.localName = localName
        self.name = module + "." + localName
        self.location = location
    }

    func allows(_ p: Presentation) -> Bool { presentations?.contains(p) ?? true }
}
