import Testing
@testable import UV

#if canImport(Glibc)
import Glibc
#endif

/// How navd reads the variables a service manager sets (sd_listen_fds(3), sd_notify(3)).
@Suite struct SystemdVariablesTests {
    @Test func socketsPassedToAnotherProcessAreNotOurs() throws {
        // A LISTEN_PID of a parent, inherited: not for this process, whatever LISTEN_FDS says.
        #expect(try Systemd.passedSocket(environment: ["LISTEN_PID": "1", "LISTEN_FDS": "1"], pid: 4242) == nil)
        #expect(try Systemd.passedSocket(environment: ["LISTEN_FDS": "1"], pid: 4242) == nil)
        #expect(try Systemd.passedSocket(environment: ["LISTEN_PID": "4242", "LISTEN_FDS": "0"], pid: 4242) == nil)
    }

    @Test func aCountThatIsNotOneIsRefusedByName() {
        #expect(throws: Systemd.PassedSocketError.self) {
            try Systemd.passedSocket(environment: ["LISTEN_PID": "4242", "LISTEN_FDS": "x"], pid: 4242)
        }
        do {
            _ = try Systemd.passedSocket(environment: ["LISTEN_PID": "4242", "LISTEN_FDS": "3", "LISTEN_FDNAMES": "a:b:c"], pid: 4242)
            Issue.record("three sockets were accepted")
        } catch {
            #expect(error.description.contains("passed 3 sockets (LISTEN_FDS=3, LISTEN_FDNAMES=a:b:c)"), "\(error)")
        }
    }

    @Test func theWatchdogIsPingedAtHalfItsIntervalForThisProcessOnly() {
        #expect(Systemd.Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000"], pid: 7) == 15_000)
        #expect(Systemd.Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], pid: 7) == 15_000)
        #expect(Systemd.Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"], pid: 7) == nil)
        #expect(Systemd.Notifier.watchdogInterval(environment: ["WATCHDOG_USEC": "0"], pid: 7) == nil)
        #expect(Systemd.Notifier.watchdogInterval(environment: [:], pid: 7) == nil)
        #expect(Systemd.Notifier(environment: ["NOTIFY_SOCKET": ""]) == nil)
        #expect(Systemd.Notifier(environment: ["NOTIFY_SOCKET": "@m"])?.address == "@m")
    }
}
