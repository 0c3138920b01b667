import JSON
import NavGraph
import NavigationCore

/// A navigation coverage report read back (`navd coverage`, `STATE.coverage`): any JSON is added
/// to a run of a small graph, by name, without a trap; what navd then writes of that run reads back
/// into the same report (what navd writes it can read).
let coverageGraph: NavigationGraph = {
    let yaml = """
        root: {tabs: [Home, Box], back: history}
        coordinators:
          Home: {opens: [Item, Sign, Panel]}
          Box: {opens: [Item]}
          Item: {setup: {type: object, properties: {id: {type: string}}}, preconditions: [ok]}
          Sign: {flow: {start: Form, steps: [Form]}}
          Form: {}
          Panel: {tabs: [A, B], back: order}
          A: {}
          B: {}
        preconditions:
          ok: {check: {fact: ok, equals: true}, recover: {flow: Sign}}
        routes:
          item: {to: Item, by: push}
        links:
          "/item/:id": [Home, {to: Item, with: {id: ":id"}}]
        """
    return GraphLoader.load(sources: [GraphSource(file: "app.yaml", text: yaml)], baseDirectory: "/nonexistent").graph!
}()

func fuzzCoverage(_ data: UnsafeRawBufferPointer) {
    guard let value = try? JSONParser(maxDepth: 64).parse(data) else { return }
    let run = Coverage(name: "fuzz", graph: coverageGraph)
    run.add(report: value, graph: coverageGraph)
    run.add(report: value, graph: coverageGraph)
    let written = CoverageReport(run, graph: coverageGraph).json
    let again = Coverage(name: "fuzz", graph: coverageGraph)
    let (_, skipped) = again.add(report: written, graph: coverageGraph)
    require(skipped == 0, "navd's own report has items its graph does not declare")
    require(CoverageReport(again, graph: coverageGraph).json == written, "a report navd wrote does not read back as itself")
    _ = CoverageReport(again, graph: coverageGraph).text
    _ = CoverageReport(again, graph: coverageGraph).lcov
}
