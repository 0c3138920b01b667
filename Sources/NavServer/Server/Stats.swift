/// Counters reported by the `stats` method.
struct Stats {
    var connectionsAccepted = 0
    var connectionsRefused = 0
    var requests = 0
    var requestsAnswered = 0
    var notificationsIn = 0
    var errors = 0
    var notificationsSent = 0
    var commits = 0
    var tasksStarted = 0
    var bytesIn = 0
    var bytesOut = 0
    var slowClientsDropped = 0
}
