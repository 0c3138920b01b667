import Foundation
import HTTPTypes
import Hummingbird
import NIOCore

/// The HTTP side: the page and its assets (from the binary), the graph's picture, /metrics, /healthz.
enum Routes {
    static func router(_ settings: Settings) -> Router<BasicRequestContext> {
        let router = Router()
        router.add(middleware: Guard(settings: settings))
        for asset in Assets.all {
            router.get(RouterPath(asset.path == "/" ? "/" : asset.path)) { _, _ in
                var headers = HTTPFields()
                headers[.contentType] = asset.type
                headers[.cacheControl] = "no-store"
                headers[HTTPField.Name("X-Content-Type-Options")!] = "nosniff"
                headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
                headers[HTTPField.Name("Content-Security-Policy")!] =
                    "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: asset.body)))
            }
        }
        router.get("/graph.svg") { _, _ in
            do {
                let svg = try await settings.picture.svg()
                var headers = HTTPFields()
                headers[.contentType] = "image/svg+xml"
                headers[.cacheControl] = "no-store"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: svg)))
            } catch {
                return text(.internalServerError, "nav-web: cannot draw the graph: \(error)\n")
            }
        }
        router.get("/metrics") { _, _ in
            do {
                let stats = try await NavdConnection.call(settings.socketPath, method: "stats")
                var headers = HTTPFields()
                headers[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
                return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: Metrics.text(stats))))
            } catch {
                return text(.serviceUnavailable, "nav-web: navd at \(settings.socketPath) does not answer: \(error)\n")
            }
        }
        router.get("/healthz") { _, _ in
            do {
                _ = try await NavdConnection.call(settings.socketPath, method: "ping", timeout: .seconds(2))
                return text(.ok, "ok\n")
            } catch {
                return text(.serviceUnavailable, "navd at \(settings.socketPath) does not answer: \(error)\n")
            }
        }
        return router
    }

    static func text(_ status: HTTPResponse.Status, _ body: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = "text/plain; charset=utf-8"
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(string: body)))
    }
}
