import Foundation
import NavTesting
import Testing
@testable import NavGraph

/// A graph is the module files directly in its directory.
@Suite struct GraphDirectoryTests {
    /// A module file left in a subdirectory is not read, and the load says so (a warning naming the
    /// files), where it said nothing: a reference to its module was only "module `feat` does not
    /// exist". A subdirectory without module files (the example's `scripts/`) and a hidden one
    /// (`.git`) get no word.
    @Test func moduleFilesInASubdirectoryAreNamedAsNotRead() throws {
        let d = TempDir()
        defer { d.remove() }
        let graph = try d.graph("root: {stack: Home}\ncoordinators:\n  Home: {opens: [feat.X]}\n")
        let fm = FileManager.default
        for sub in ["features", "scripts", ".git"] { try fm.createDirectory(atPath: graph + "/" + sub, withIntermediateDirectories: true) }
        try "coordinators:\n  X: {}\n".write(toFile: graph + "/features/feat.yaml", atomically: true, encoding: .utf8)
        try "{}".write(toFile: graph + "/features/more.json", atomically: true, encoding: .utf8)
        try "#!/bin/sh\n".write(toFile: graph + "/scripts/check.sh", atomically: true, encoding: .utf8)
        try "x: 1\n".write(toFile: graph + "/.git/config.yaml", atomically: true, encoding: .utf8)

        let (g, diags) = GraphLoader.load(directory: graph)
        #expect(g == nil)
        #expect(diags.errors.map(\.message) == ["`feat.X` refers to module `feat`, which does not exist"])
        let warnings = diags.all.filter { $0.severity == .warning }.map(\.description)
        #expect(warnings == ["\(graph)/features:1:1: warning: `features/feat.yaml`, `features/more.json` are not read: a graph is the module files directly in `\(graph)`, not in its subdirectories; move a module up to use it"])

        // What is looked at is bounded (the directory's and its subdirectories' entries together):
        // of 40 files in a subdirectory, a graph allowed 12 module files names fewer.
        for i in 0..<40 { try "x: 1\n".write(toFile: graph + "/features/m\(i).yaml", atomically: true, encoding: .utf8) }
        var small = GraphLimits()
        small.maxFiles = 12
        let bounded = GraphLoader.load(directory: graph, limits: small).diagnostics.all.filter { $0.severity == .warning }.map(\.message)
        #expect(bounded.count == 1 && bounded[0].contains(" more are not read"), "\(bounded)")
        let more = bounded.first.flatMap { $0.split(separator: " and ").last?.split(separator: " ").first }.flatMap { Int($0) } ?? 99
        #expect(3 + more < 12, "\(bounded)")
        for i in 0..<40 { try fm.removeItem(atPath: graph + "/features/m\(i).yaml") }

        // Moved up, it is read, and nothing is left to say.
        try fm.moveItem(atPath: graph + "/features/feat.yaml", toPath: graph + "/feat.yaml")
        try fm.removeItem(atPath: graph + "/features/more.json")
        let (moved, after) = GraphLoader.load(directory: graph)
        #expect(moved != nil)
        #expect(after.all.map(\.description) == [])
    }

    /// Hidden files are not module files (a shell's `*.yaml` leaves them out): an editor's lock
    /// file (Emacs's `.#app.yaml`, a symbolic link to nowhere) or macOS's `._app.yaml` (binary)
    /// beside the module being edited made the graph fail to load, so navd would not start or
    /// reload while a module was open in an editor.
    @Test func hiddenFilesBesideTheModulesAreNotRead() throws {
        let d = TempDir()
        defer { d.remove() }
        let graph = try d.graph("root: {stack: Home}\ncoordinators:\n  Home: {}\n")
        try FileManager.default.createSymbolicLink(atPath: graph + "/.#app.yaml", withDestinationPath: "user@host.1234:1700000000")
        try Data([0, 5, 22, 7, 0xff]).write(to: URL(fileURLWithPath: graph + "/._app.yaml"))
        try "coordinators: {Hidden: {}}\n".write(toFile: graph + "/.draft.yaml", atomically: true, encoding: .utf8)
        let (g, diags) = GraphLoader.load(directory: graph)
        #expect(diags.all.map(\.description) == [])
        let loaded = try #require(g)
        #expect(loaded.modules.map(\.name) == ["app"])
    }
    /// What `--watch-graph` compares before it reloads: the same while the module files are as they
    /// were (a swap file or a subdirectory written beside them), another when one is rewritten
    /// (even to the same size), added, removed, re-linked or has its mode changed.
    @Test func aFingerprintChangesWithWhatALoadWouldRead() throws {
        let d = TempDir()
        defer { d.remove() }
        let graph = try d.graph("root: {stack: Home}\ncoordinators: {Home: {}}\n")
        let fm = FileManager.default
        var seen = GraphLoader.fingerprint(directory: graph)
        #expect(seen.names == ["app.yaml"] && seen.directory == graph)
        func changed() -> Bool {
            let now = GraphLoader.fingerprint(directory: graph)
            defer { seen = now }
            return now != seen
        }
        try "swap".write(toFile: graph + "/.app.yaml.swp", atomically: false, encoding: .utf8)
        try fm.createDirectory(atPath: graph + "/scripts", withIntermediateDirectories: false)
        #expect(!changed(), "a hidden file and a directory are not read")
        try "root: {stack: Home}\ncoordinators: {Home: {}}\n".write(toFile: graph + "/app.yaml", atomically: true, encoding: .utf8)
        #expect(changed(), "the same text renamed over the file")
        // Its times set back, so that the next write cannot fall in the same tick of the clock.
        var old = [timespec(tv_sec: 946_684_800, tv_nsec: 0), timespec(tv_sec: 946_684_800, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, graph + "/app.yaml", &old, 0) == 0)
        #expect(changed(), "its times")
        try "root: {stack: Hope}\ncoordinators: {Hope: {}}\n".write(toFile: graph + "/app.yaml", atomically: false, encoding: .utf8)
        #expect(changed(), "the same size written in place")
        chmod(graph + "/app.yaml", 0o600)
        #expect(changed(), "a mode")
        try "coordinators: {X: {}}\n".write(toFile: graph + "/more.yml", atomically: false, encoding: .utf8)
        #expect(changed(), "a module added")
        try fm.removeItem(atPath: graph + "/more.yml")
        #expect(changed(), "a module removed")
        try fm.moveItem(atPath: graph + "/app.yaml", toPath: d.file("app.yaml"))
        try fm.copyItem(atPath: d.file("app.yaml"), toPath: d.file("copy.yaml"))
        try fm.createSymbolicLink(atPath: graph + "/app.yaml", withDestinationPath: d.file("app.yaml"))
        _ = changed()  // a module that became a link to itself
        try fm.createSymbolicLink(atPath: graph + "/next", withDestinationPath: d.file("copy.yaml"))
        #expect(rename(graph + "/next", graph + "/app.yaml") == 0)
        #expect(changed(), "a module's link pointed at another file")
        #expect(GraphLoader.fingerprint(directory: d.file("nowhere")) == GraphFingerprint())
    }
    /// A Kubernetes ConfigMap volume: a mount point of mode 1777 (which a pod cannot change)
    /// whose module files link into `..data`. The graph is refused as any world-writable directory
    /// is, and the error names the directory to give instead, which loads.
    @Test func aConfigMapVolumeIsRefusedWithTheDirectoryToGiveInstead() throws {
        let d = TempDir()
        defer { d.remove() }
        let volume = d.file("volume")
        let fm = FileManager.default
        try fm.createDirectory(atPath: volume + "/..2026_12_05", withIntermediateDirectories: true)
        try "root: {stack: Home}\ncoordinators: {Home: {}}\n".write(toFile: volume + "/..2026_12_05/app.yaml", atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: volume + "/..data", withDestinationPath: "..2026_12_05")
        try fm.createSymbolicLink(atPath: volume + "/app.yaml", withDestinationPath: "..data/app.yaml")
        #expect(chmod(volume, 0o1777) == 0)

        let (g, diags) = GraphLoader.load(directory: volume)
        #expect(g == nil)
        #expect(diags.errors.map(\.message) == [
            "the graph's directory is writable by every user (mode 01777): anyone could change what navd runs (its command preconditions) as its user; chmod o-w \(volume); it looks like a Kubernetes ConfigMap or Secret volume, whose mount point a pod cannot chmod: give --graph \(volume)/..data instead, the directory its files link to, which others cannot write (--watch-graph follows it when the volume is updated)"
        ])
        let (inside, more) = GraphLoader.load(directory: volume + "/..data")
        #expect(inside != nil && more.errors.isEmpty, "\(more.all.map(\.description))")

        #expect(chmod(volume + "/..2026_12_05", 0o777) == 0)
        let refused = GraphLoader.load(directory: volume).diagnostics.errors.map(\.message)
        #expect(refused.count == 1 && refused.allSatisfy { $0.hasPrefix("the graph's directory is writable by every user") && !$0.contains("ConfigMap") },
                "no hint where ..data leads to a directory others may write too: \(refused)")
    }
}
