import Foundation
import HTTPTypes
import Hummingbird

/// Who may use nav-web: a request must be addressed to this server by a name of its own (the Host
/// header: a page of another site whose name resolves here, DNS rebinding, is refused), carry the
/// token (the `navweb_token` cookie set by the first load, `?token=`, or `Authorization: Bearer`),
/// and a WebSocket must come from this server's own page (its Origin).
enum Access {
    static let cookie = "navweb_token"

    /// The Host values this server answers to: its loopback names, or the address it was told to
    /// listen on.
    static func hostAllowed(_ host: String?, settings: Settings, port: Int) -> Bool {
        guard let host else { return false }
        var names = ["127.0.0.1", "localhost", "[::1]"]
        if !names.contains(settings.host) {
            names.append(settings.host.contains(":") ? "[\(settings.host)]" : settings.host)
        }
        return names.contains { host == "\($0):\(port)" || (port == 80 && host == $0) }
    }

    static func cookieToken(_ fields: HTTPFields) -> String? {
        for header in fields[values: .cookie] {
            for part in header.split(separator: ";") {
                let kv = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0] == cookie { return String(kv[1]) }
            }
        }
        return nil
    }

    static func bearerToken(_ fields: HTTPFields) -> String? {
        guard let a = fields[.authorization], a.hasPrefix("Bearer ") else { return nil }
        return String(a.dropFirst("Bearer ".count))
    }

    /// Whether a WebSocket upgrade may go ahead: Host, token (cookie or bearer) and an Origin that
    /// is this server.
    static func upgradeAllowed(_ request: HTTPRequest, settings: Settings, port: Int) -> Bool {
        let fields = request.headerFields
        guard let host = request.authority, hostAllowed(host, settings: settings, port: port) else { return false }
        guard let origin = fields[.origin], origin == "http://\(host)" else { return false }
        guard let t = cookieToken(fields) ?? bearerToken(fields) else { return false }
        return Token.equal(t, settings.token)
    }
}

/// Checks every HTTP request (but /healthz) as ``Access`` says; a first load with `?token=` sets
/// the cookie.
struct Guard<Context: RequestContext>: RouterMiddleware {
    let settings: Settings

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let port = settings.port.load()
        guard Access.hostAllowed(request.head.authority, settings: settings, port: port) else {
            return Routes.text(.forbidden, "nav-web: refused: the Host header (\(request.head.authority ?? "none")) is not this server "
                               + "(127.0.0.1:\(port) or localhost:\(port)); a page of another site may not reach nav-web\n")
        }
        if request.uri.path == "/healthz" { return try await next(request, context) }
        let query = request.uri.queryParameters.get("token")
        let given = query ?? Access.cookieToken(request.headers) ?? Access.bearerToken(request.headers)
        guard let given, Token.equal(given, settings.token) else {
            return Routes.text(.unauthorized, "nav-web: this needs the token nav-web printed when it started: open the URL it printed "
                               + "(http://127.0.0.1:\(port)/?token=…), or send Authorization: Bearer TOKEN\n")
        }
        var response = try await next(request, context)
        if query != nil {
            response.headers[values: .setCookie].append("\(Access.cookie)=\(settings.token); Path=/; HttpOnly; SameSite=Strict")
        }
        return response
    }
}
