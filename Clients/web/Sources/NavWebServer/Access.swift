import Foundation

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

    static func cookieToken(_ request: HTTPRequestHead) -> String? {
        for header in request.values("cookie") {
            for part in header.split(separator: ";") {
                let kv = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if kv.count == 2, kv[0] == cookie { return String(kv[1]) }
            }
        }
        return nil
    }

    static func bearerToken(_ request: HTTPRequestHead) -> String? {
        guard let a = request.field("authorization"), a.hasPrefix("Bearer ") else { return nil }
        return String(a.dropFirst("Bearer ".count))
    }

    /// Why an HTTP request (but /healthz) is refused: its Host is not this server's (403), or it
    /// lacks the token (401); nil when it may go on.
    static func refusal(_ request: HTTPRequestHead, settings: Settings, port: Int) -> HTTPAnswer? {
        guard hostAllowed(request.field("host"), settings: settings, port: port) else {
            return .text(403, "nav-web: refused: the Host header (\(request.field("host") ?? "none")) is not this server "
                         + "(127.0.0.1:\(port) or localhost:\(port)); a page of another site may not reach nav-web\n")
        }
        if request.path == "/healthz" { return nil }
        let given = request.query("token") ?? cookieToken(request) ?? bearerToken(request)
        guard let given, Token.equal(given, settings.token) else {
            return .text(401, "nav-web: this needs the token nav-web printed when it started: open the URL it printed "
                         + "(http://127.0.0.1:\(port)/?token=…), or send Authorization: Bearer TOKEN\n")
        }
        return nil
    }

    /// Why a WebSocket upgrade is refused (nil: it may go ahead): besides what every request needs,
    /// its Origin must be this server's page.
    static func upgradeRefusal(_ request: HTTPRequestHead, settings: Settings, port: Int) -> HTTPAnswer? {
        if let refused = refusal(request, settings: settings, port: port) { return refused }
        let host = request.field("host") ?? ""
        guard let origin = request.field("origin"), origin == "http://\(host)" else {
            return .text(403, "nav-web: refused the WebSocket: its Origin (\(request.field("origin") ?? "none")) is not this server's page "
                         + "(http://\(host)); only nav-web's own page may open it\n")
        }
        return nil
    }
}
