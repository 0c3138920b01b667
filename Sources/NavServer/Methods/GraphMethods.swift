import JSON
import NavGraph
import RPC

extension Server {
    /// `graph.describe`: the resolved graph, as `navd graph --format json` prints it.
    func registerGraphMethods() {
        methods.register("graph.describe", params: [], changes: false, session: .none) { [self] call in
            call.succeed(self.graph.describe())
        }
    }
}
