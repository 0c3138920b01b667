import ArgumentParser
import BuildInfo
import Foundation
import NavClient
import UV

/// nav-tui: a full-screen terminal front-end of navd on one libuv loop (the terminal, the socket
/// and signals). Shows a session's tree, the actions of the visible screen and a live log.
@main
struct NavTUI: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "nav-tui",
        abstract: "Terminal UI for navd: the session's tree, its actions on keys, a live notification log.",
        discussion: """
        Keys: 1-9 a-z run the listed actions, d dismisses the visible screen, c completes the visible \
        flow (a form for its result), x cancels a pending navigation or dismiss, or the visible flow, q quits. \
        In a form: Tab/↑↓ move between fields, Enter submits, Esc cancels. Colour is off when \
        NO_COLOR is set.
        """,
        version: BuildInfo.versionLine("nav-tui"))

    @Option(help: "navd's socket (default: $NAVD_SOCKET, else $XDG_RUNTIME_DIR/navd.sock, else /tmp/navd-<uid>.sock).")
    var socket: String?

    @Option(help: "Session to show and drive; it must be open (as navctl --session) unless --create is given. Session main always is.")
    var session = "main"

    @Flag(help: "Open the session when it is not open (as navctl session open NAME).")
    var create = false

    func run() throws {
        guard isatty(0) == 1, isatty(1) == 1 else {
            FileHandle.standardError.write(Data("nav-tui: needs a terminal on stdin and stdout (use navctl for scripts)\n".utf8))
            throw ExitCode(2)
        }
        let loop = EventLoop()
        let noColor = !(ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty
        let terminal: Terminal
        do {
            terminal = try Terminal(loop: loop, color: !noColor)
            try terminal.enter()
        } catch {
            FileHandle.standardError.write(Data("nav-tui: cannot use the terminal: \(error)\n".utf8))
            throw ExitCode(2)
        }
        let client = NavLoopClient(loop: loop, socketPath: socket)
        let app = App(client: client, terminal: terminal, session: session, create: create)
        let retry = UV.Timer(loop: loop)
        app.retry = retry
        let resize = Signal(loop: loop), interrupt = Signal(loop: loop), terminate = Signal(loop: loop)
        var quitting = false
        app.onQuit = {
            guard !quitting else { return }
            quitting = true
            terminal.leave()
            client.close()
            app.retry = nil
            for h in [resize, interrupt, terminate, retry] as [Handle] { h.close() }
            terminal.input.close()
            terminal.output.close()
        }
        resize.start(signal: SIGWINCH) { _ in
            terminal.updateSize()
            app.refresh()
        }
        interrupt.start(signal: SIGINT) { _ in app.onQuit() }
        terminate.start(signal: SIGTERM) { _ in app.onQuit() }
        terminal.input.startReading { event in
            switch event {
            case .data(let bytes): for k in Key.decode(Array(bytes)) { app.handle(k) }
            case .end, .error: app.onQuit()
            }
        }
        app.start()
        app.refresh()
        loop.run()
        terminal.leave()
        loop.close()
        if let message = app.exitMessage {
            FileHandle.standardError.write(Data("nav-tui: \(message)\n".utf8))
            throw ExitCode(1)
        }
    }
}
