import Foundation
import UV

/// The HTTP side: the page and its assets (from the binary), the graph's picture, /metrics,
/// /healthz. Every request but /healthz passes ``Access`` first; the answer comes once, on the loop.
enum Routes {
    /// The answer to `request` (not a WebSocket upgrade), given to `done`.
    static func answer(_ request: HTTPRequestHead, server: WebServer, _ done: @escaping (HTTPAnswer) -> Void) {
        let settings = server.settings
        let port = server.port
        if let refused = Access.refusal(request, settings: settings, port: port) { return done(refused) }
        guard request.method == "GET" || request.method == "HEAD" else {
            var a = HTTPAnswer.text(405, "nav-web: \(request.method) is not served: every path of nav-web answers GET (and HEAD)\n")
            a.fields.append(("Allow", "GET, HEAD"))
            return done(a)
        }
        // A first load with ?token= sets the cookie the page's later requests and WebSocket carry.
        let setCookie = request.query("token") != nil
        let finish: (HTTPAnswer) -> Void = { answer in
            var answer = answer
            if setCookie { answer.fields.append(("Set-Cookie", "\(Access.cookie)=\(settings.token); Path=/; HttpOnly; SameSite=Strict")) }
            done(answer)
        }
        let path = String(request.path)
        if let asset = Assets.all.first(where: { $0.path == path }) {
            return finish(HTTPAnswer(status: 200, fields: [
                ("Content-Type", asset.type),
                ("Cache-Control", "no-store"),
                ("X-Content-Type-Options", "nosniff"),
                ("X-Frame-Options", "DENY"),
                ("Content-Security-Policy",
                 "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"),
            ], body: Array(asset.body.utf8)))
        }
        switch path {
        case "/graph.svg":
            settings.picture.svg(loop: server.loop) { result in
                switch result {
                case .success(let svg):
                    finish(HTTPAnswer(status: 200, fields: [("Content-Type", "image/svg+xml"), ("Cache-Control", "no-store")], body: Array(svg.utf8)))
                case .failure(let e):
                    finish(.text(500, "nav-web: cannot draw the graph: \(e)\n"))
                }
            }
        case "/metrics":
            NavdConnection.call(loop: server.loop, settings.socketPath, method: "stats") { result in
                switch result {
                case .success(let stats):
                    finish(HTTPAnswer(status: 200, fields: [("Content-Type", "text/plain; version=0.0.4; charset=utf-8")], body: Array(Metrics.text(stats).utf8)))
                case .failure(let e):
                    finish(.text(503, "nav-web: navd at \(settings.socketPath) does not answer: \(e)\n"))
                }
            }
        case "/healthz":
            NavdConnection.call(loop: server.loop, settings.socketPath, method: "ping", timeoutMs: 2_000) { result in
                switch result {
                case .success: finish(.text(200, "ok\n"))
                case .failure(let e): finish(.text(503, "navd at \(settings.socketPath) does not answer: \(e)\n"))
                }
            }
        case "/ws":
            finish(.text(400, "nav-web: /ws is the page's WebSocket: open it with an upgrade (Upgrade: websocket, Sec-WebSocket-Key, Sec-WebSocket-Version: 13)\n"))
        default:
            finish(.text(404, "nav-web: nothing at \(path.prefix(200)): the page is at /, its pictures and figures at /graph.svg, /metrics and /healthz\n"))
        }
    }
}
